/**
 * The dev server's search-attribute cache, A/B (issue #12, targets 2, 3, 6 and 8; docs/performance.md, "The
 * search-attribute cache"): two bench worlds in this process, each on a dev server of its own, one with the Temporal
 * CLI's `system.forceSearchAttributesCacheRefreshOnRead: true` (the server reads its cluster metadata from the
 * database on every search-attribute validation) and one with Threadline's `false` (worker/dev-server.ts), rounds
 * interleaved. Each round: a new thread's first message, then once it settled its idle next message, each timed from
 * the send to the first `text-delta` at a subscriber, and split in its history where the server handles the workflow
 * task's completion: `WorkflowTaskCompleted` → the step's `ActivityTaskStarted` (its commands: the status upsert, on
 * a new thread the patch marker's `TemporalChangeVersion` upsert too, then the eager step) and, for the new thread,
 * the start (which sets `ThreadlineResource`) → `WorkflowExecutionStarted`.
 *
 *   npx tsx bench/ab-search-attribute-cache.ts [--rounds=60]
 */
import { randomUUID } from 'node:crypto';
import { settledHistory, findEvent, type HistoryEvent } from './history';
import { startBenchEnv, wallClock, watchTurn, withTimeout, type BenchEnv } from './env';
import { interleavedRounds, percentilesCell } from './stats';
import type { ThreadTarget } from '../protocol/schemas';

const REFRESH_ON_READ = 'system.forceSearchAttributesCacheRefreshOnRead';
const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 60);
const warmup = 5;

type Series = 'newFirstDelta' | 'newStartRecorded' | 'newCompletion' | 'idleFirstDelta' | 'idleCompletion';

interface Side {
  name: string;
  env: BenchEnv;
  samples: Record<Series, number[]>;
}

/** One message to `target`, timed to its first `text-delta`; its history once the thread settled. */
async function turn(env: BenchEnv, target: ThreadTarget) {
  const sub = env.agent.subscribeToThread(target);
  const t0 = performance.now();
  let firstDelta: number;
  try {
    const watching = watchTurn(sub.stream);
    await env.agent.sendMessage(`ab ${randomUUID()}`, target);
    firstDelta = (await withTimeout(watching, 'a turn')).firstDelta;
  } finally {
    sub.unsubscribe();
  }
  const { events } = await settledHistory(env, target);
  return { sentAt: wallClock(t0), toFirstDelta: firstDelta - t0, events };
}

/** From the first `WorkflowTaskCompleted` at or after `from` to the next `ActivityTaskStarted` (server clock). */
function completionToStep(events: HistoryEvent[], from: number): number {
  return findEvent(events, from, 'ActivityTaskStarted').at - findEvent(events, from, 'WorkflowTaskCompleted').at;
}

async function round(side: Side, counted: boolean): Promise<void> {
  const target = { resourceId: 'ab-search-attribute-cache', threadId: randomUUID() };
  const first = await turn(side.env, target);
  const second = await turn(side.env, target);
  if (!counted) return;
  const s = side.samples;
  s.newFirstDelta.push(first.toFirstDelta);
  s.newStartRecorded.push(findEvent(first.events, 0, 'WorkflowExecutionStarted').at - first.sentAt);
  s.newCompletion.push(completionToStep(first.events, 0));
  s.idleFirstDelta.push(second.toFirstDelta);
  s.idleCompletion.push(completionToStep(second.events, first.events.length));
}

const sides: Side[] = [];
for (const refresh of [true, false]) {
  const env = await startBenchEnv({ dynamicConfig: { [REFRESH_ON_READ]: refresh } });
  const samples = {
    newFirstDelta: [],
    newStartRecorded: [],
    newCompletion: [],
    idleFirstDelta: [],
    idleCompletion: [],
  };
  sides.push({ name: `\`${REFRESH_ON_READ}: ${refresh}\``, env, samples });
}
try {
  await interleavedRounds(sides, { rounds, warmup }, round);
  const pct = percentilesCell;
  process.stdout.write(`${rounds} rounds after ${warmup} warm-up, interleaved; p50 / p90 / p99 ms\n\n`);
  process.stdout.write(
    '| dev server | new thread → first text-delta | send → start recorded | its task completed → step started ' +
      '| idle thread → first text-delta | its task completed → step started |\n' +
      '| --- | ---: | ---: | ---: | ---: | ---: |\n',
  );
  for (const { name, samples: s } of sides) {
    process.stdout.write(
      `| ${name} | ${pct(s.newFirstDelta)} | ${pct(s.newStartRecorded)} | ${pct(s.newCompletion)} ` +
        `| ${pct(s.idleFirstDelta)} | ${pct(s.idleCompletion)} |\n`,
    );
  }
} finally {
  for (const { env } of sides) await env.close();
}
process.exit(0);
