/**
 * Eager workflow start, measured (issue #12, target 3b): on bare Temporal, with the client sharing the worker's
 * NativeConnection (as a co-located `npm start` could), a new workflow's input → its first activity's code running,
 * interleaved per round:
 *
 * - update-with-start (what Threadline does for a new thread: the input is accepted, with its answer, atomically);
 * - start with `requestEagerStart` (the input as the workflow's argument; the server hands the first workflow task
 *   back in the start response, to this process's worker);
 * - the same start without `requestEagerStart`.
 *
 * The server refuses `requestEagerStart` on update-with-start ("RequestEagerExecution is not supported.", checked here
 * too), and the TypeScript SDK leaves it out of signal-with-start's options.
 *
 *   npx tsx bench/eager-start.ts [--rounds=100]
 */
import { randomUUID } from 'node:crypto';
import { arg } from './args';
import { fileURLToPath } from 'node:url';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { startBareWorker } from './floor/bare-worker';
import { createFloorActivities, FloorProbe } from './floor/activities';
import { floorInputUpdate, floorWorkflow } from './floor/workflows';
import { startedFloorWorkflow } from './floor/eager-workflows';
import { summarize } from './stats';

const rounds = Number(arg('rounds', '100'));
const warmup = 10;
const probe = new FloorProbe();
const { client, taskQueue, close } = await startBareWorker(
  fileURLToPath(new URL('./floor/eager-workflows.ts', import.meta.url)),
  createFloorActivities(probe),
);

type Series = 'update-with-start' | 'start, eager' | 'start, not eager';
const samples: Record<Series, number[]> = { 'update-with-start': [], 'start, eager': [], 'start, not eager': [] };
let eagerlyStarted = 0;
const series = Object.keys(samples) as Series[];
try {
  // The server's answer to update-with-start asking for eager execution.
  let refusal = 'accepted';
  try {
    await client.workflow.executeUpdateWithStart(floorInputUpdate, {
      args: [{ marker: 'probe', activities: 0 }],
      startWorkflowOperation: new WithStartWorkflowOperation(floorWorkflow, {
        workflowId: `eager-probe-${randomUUID()}`,
        taskQueue,
        args: [{ continueAsNewAfter: 0 }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        requestEagerStart: true,
      } as never),
    });
  } catch (err) {
    refusal = `refused: ${(err as Error).message}`;
  }
  process.stdout.write(`update-with-start with requestEagerStart: ${refusal}\n`);
  for (let i = 0; i < warmup + rounds; i++) {
    const order = i % 2 === 0 ? series : [...series].reverse();
    for (const name of order) {
      const marker = randomUUID();
      const input = { marker, activities: 1 };
      const running = probe.when(marker, 0, 'started');
      const t0 = performance.now();
      if (name === 'update-with-start') {
        await client.workflow.executeUpdateWithStart(floorInputUpdate, {
          args: [input],
          startWorkflowOperation: new WithStartWorkflowOperation(floorWorkflow, {
            workflowId: `eager-${marker}`,
            taskQueue,
            args: [{ continueAsNewAfter: 0 }],
            workflowIdConflictPolicy: 'USE_EXISTING',
          }),
        });
      } else {
        const handle = await client.workflow.start(startedFloorWorkflow, {
          workflowId: `eager-${marker}`,
          taskQueue,
          args: [input],
          requestEagerStart: name === 'start, eager',
        });
        if (name === 'start, eager' && handle.eagerlyStarted) eagerlyStarted += 1;
      }
      const at = await running;
      probe.forget(marker, 1);
      if (i >= warmup) samples[name].push(at - t0);
    }
  }
} finally {
  await close();
}
process.stdout.write(
  `rounds ${rounds} (after ${warmup} warm-up); eagerly started ${eagerlyStarted} of ${rounds + warmup}\n`,
);
for (const name of series) {
  const s = summarize(samples[name]);
  process.stdout.write(`${name}: → activity code running p50 / p90 / p99 ${s.p50} / ${s.p90} / ${s.p99} ms\n`);
}
