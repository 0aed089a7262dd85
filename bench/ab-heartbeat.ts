/**
 * What a step's heartbeat per streamed part costs, A/B in one run: an activity on a real worker and dev server makes
 * `calls` passes of a loop, each calling `Context.heartbeat()` (as the step did for every part) or only when
 * `PART_HEARTBEAT_MS` passed since the last (as it does now), and reports its own CPU time (`process.cpuUsage()`:
 * the SDK's pipeline and Core's thread included) per pass. Alternating, after a warm-up.
 *
 *   npx tsx bench/ab-heartbeat.ts
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import { startBareWorker } from './floor/bare-worker';
import { heartbeatWorkflow } from './floor/heartbeat-workflows';

const { client, taskQueue, close } = await startBareWorker(
  fileURLToPath(new URL('./floor/heartbeat-workflows.ts', import.meta.url)),
  {
    async heartbeats(calls: number, gapMs: number): Promise<number> {
      const ctx = Context.current();
      let last = performance.now();
      const cpu = process.cpuUsage();
      for (let i = 0; i < calls; i++) {
        if (gapMs === 0 || performance.now() - last >= gapMs) {
          last = performance.now();
          ctx.heartbeat();
        }
        // A part's turn of the event loop, as a stream's next chunk would be.
        await new Promise((resolve) => setImmediate(resolve));
      }
      const used = process.cpuUsage(cpu);
      return (used.user + used.system) / calls;
    },
  },
);
const calls = 2_000;
const results: Record<string, number[]> = { 'every part': [], 'at most every 200 ms': [] };
try {
  for (let round = 0; round < 9; round++) {
    const order: [string, number][] = [
      ['every part', 0],
      ['at most every 200 ms', 200],
    ];
    if (round % 2 === 1) order.reverse();
    for (const [name, gapMs] of order) {
      const perCall = await client.workflow.execute(heartbeatWorkflow, {
        workflowId: `hb-${randomUUID()}`,
        taskQueue,
        args: [calls, gapMs],
      });
      if (round > 0) results[name].push(perCall);
    }
  }
} finally {
  await close();
}
for (const [name, xs] of Object.entries(results)) {
  xs.sort((a, b) => a - b);
  process.stdout.write(
    `${name}: CPU µs per part, median of ${xs.length} runs of ${calls}: ${xs[Math.floor(xs.length / 2)].toFixed(1)} ` +
      `(min ${xs[0].toFixed(1)}, max ${xs[xs.length - 1].toFixed(1)})\n`,
  );
}
