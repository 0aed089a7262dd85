/**
 * The history shard's queue read rate, A/B (issue #12, targets 3 and 4; docs/performance.md, "Task queue reads"): two
 * bench worlds in this process, each on a dev server of its own, one with Temporal's default reader rate (20 loads
 * per second per shard) and one with Threadline's (`QUEUE_READS_PER_SECOND`, worker/dev-server.ts), rounds
 * interleaved. Each round: a new thread's first message (send → first `text-delta` at a subscriber), then the floor's
 * new workflow (update-with-start → activity code running); both split at the first workflow task's
 * `WorkflowTaskScheduled` → `WorkflowTaskStarted` (waiting for the transfer queue to hand it to a poller).
 *
 *   npx tsx bench/ab-queue-reads.ts [--rounds=60]
 */
import { randomUUID } from 'node:crypto';
import { arg } from './args';
import { eventsOf, findEvent, type HistoryEvent } from './history';
import { startBenchEnv, watchTurn, withTimeout, type BenchEnv } from './env';
import { interleavedRounds, percentilesCell } from './stats';
import { threadKey } from '../protocol/ids';
import { QUEUE_READS_PER_SECOND, queueReadRate, TEMPORAL_QUEUE_READS_PER_SECOND } from '../worker/dev-server';

const rounds = Number(arg('rounds', '60'));
const warmup = 5;

interface Side {
  name: string;
  env: BenchEnv;
  samples: Record<'threadFirstDelta' | 'threadTaskWait' | 'floorToActivity' | 'floorTaskWait', number[]>;
}

/** `WorkflowTaskScheduled` → `WorkflowTaskStarted` of an execution's first workflow task, server clock. */
function firstTaskWait(events: HistoryEvent[]): number {
  return findEvent(events, 0, 'WorkflowTaskStarted').at - findEvent(events, 0, 'WorkflowTaskScheduled').at;
}

async function round(side: Side, counted: boolean): Promise<void> {
  const { env } = side;
  const target = { resourceId: 'ab-queue-reads', threadId: randomUUID() };
  const sub = env.agent.subscribeToThread(target);
  let firstDelta: number;
  const t0 = performance.now();
  try {
    const watching = watchTurn(sub.stream);
    await env.agent.sendMessage('hello', target);
    firstDelta = (await withTimeout(watching, 'a new thread turn')).firstDelta - t0;
  } finally {
    sub.unsubscribe();
  }
  const threadEvents = await eventsOf(
    env.client.temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId)),
  );

  const floorId = `ab-queue-reads-${randomUUID()}`;
  const marker = randomUUID();
  const running = env.floor.probe.when(marker, 0, 'started');
  const f0 = performance.now();
  await env.floor.updateWithStart(floorId, { marker, activities: 1 });
  const floorAt = await withTimeout(running, 'a floor activity');
  env.floor.probe.forget(marker, 1);
  const floorEvents = await eventsOf(env.floor.client.workflow.getHandle(floorId));
  if (!counted) return;
  side.samples.threadFirstDelta.push(firstDelta);
  side.samples.threadTaskWait.push(firstTaskWait(threadEvents));
  side.samples.floorToActivity.push(floorAt - f0);
  side.samples.floorTaskWait.push(firstTaskWait(floorEvents));
}

const sides: Side[] = [];
for (const [name, perSecond] of [
  [`Temporal's default (${TEMPORAL_QUEUE_READS_PER_SECOND}/s per shard)`, TEMPORAL_QUEUE_READS_PER_SECOND],
  [`Threadline's (${QUEUE_READS_PER_SECOND}/s per shard)`, QUEUE_READS_PER_SECOND],
] as const) {
  const env = await startBenchEnv({ dynamicConfig: queueReadRate(perSecond) });
  sides.push({
    name,
    env,
    samples: { threadFirstDelta: [], threadTaskWait: [], floorToActivity: [], floorTaskWait: [] },
  });
}
try {
  await interleavedRounds(sides, { rounds, warmup }, round);
  const pct = percentilesCell;
  process.stdout.write(`${rounds} rounds after ${warmup} warm-up, interleaved; p50 / p90 / p99 ms\n\n`);
  process.stdout.write(
    '| queue reads | new thread → first text-delta | its first workflow task waited | floor: new workflow → activity running | its first workflow task waited |\n| --- | ---: | ---: | ---: | ---: |\n',
  );
  for (const { name, samples: s } of sides) {
    process.stdout.write(
      `| ${name} | ${pct(s.threadFirstDelta)} | ${pct(s.threadTaskWait)} | ${pct(s.floorToActivity)} | ${pct(s.floorTaskWait)} |\n`,
    );
  }
} finally {
  for (const { env } of sides) await env.close();
}
process.exit(0);
