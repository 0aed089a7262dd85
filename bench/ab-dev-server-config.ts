/**
 * One dev-server setting, A/B (issue #12, targets 2, 3, 6 and 8; docs/performance.md): two bench worlds in this
 * process, each on a dev server of its own that differs from the other in that setting only, rounds interleaved.
 * Each round: a new thread's first message, then once it settled its idle next message, each timed from the send to
 * the first `text-delta` at a subscriber, and split in its history where the server handles the workflow task's
 * completion: `WorkflowTaskCompleted` → the step's `ActivityTaskStarted` (its commands: the status upsert, on a new
 * thread the patch marker's `TemporalChangeVersion` upsert too, then the eager step), → the step's `step-start` at
 * the subscriber (the server's answer reaching the worker, the step's code, the bus), and, for the new thread, the
 * start (which sets `ThreadlineResource`) → `WorkflowExecutionStarted`.
 *
 * Cases:
 * - `search-attribute-cache`: the Temporal CLI's `system.forceSearchAttributesCacheRefreshOnRead: true` (the server
 *   reads its cluster metadata from the database on every search-attribute validation) against Threadline's `false`.
 * - `visibility-reads`: the visibility queue's reader at Threadline's 1,000 loads per second against Temporal's
 *   default 20 (transfer and timer readers at 1,000 on both; worker/dev-server.ts). Read at once, a status upsert's
 *   visibility write runs right behind the completion that made it; held, it lands later, maybe in the other
 *   side's round, hence the pause.
 *
 *   npx tsx bench/ab-dev-server-config.ts --case=visibility-reads [--rounds=60]
 */
import { randomUUID } from 'node:crypto';
import { arg } from './args';
import { setTimeout as sleep } from 'node:timers/promises';
import { settledHistory, findEvent, type HistoryEvent } from './history';
import { startBenchEnv, wallClock, watchTurn, withTimeout, type BenchEnv } from './env';
import { interleavedRounds, percentilesCell } from './stats';
import type { ThreadTarget } from '../protocol/schemas';
import { QUEUE_READS_PER_SECOND, TEMPORAL_QUEUE_READS_PER_SECOND } from '../worker/dev-server';

const rounds = Number(arg('rounds', '60'));
const warmup = 5;

type Setting = Record<string, string | number | boolean>;
const REFRESH_ON_READ = 'system.forceSearchAttributesCacheRefreshOnRead';
const VISIBILITY_READS = 'history.visibilityProcessorMaxPollRPS';
/**
 * Each case's two sides (the name in the table and the dynamic config over `defaultDynamicConfig`), and the pause
 * after each round: work a side's server defers (a visibility write held for its reader) must not land in the other
 * side's round.
 */
const cases: Record<string, { pauseMs: number; sides: [string, Setting][] }> = {
  'search-attribute-cache': {
    pauseMs: 0,
    sides: [
      [`\`${REFRESH_ON_READ}: true\` (the CLI's)`, { [REFRESH_ON_READ]: true }],
      ["`false` (Temporal's default, now Threadline's)", { [REFRESH_ON_READ]: false }],
    ],
  },
  'visibility-reads': {
    pauseMs: 200,
    sides: [
      [
        `\`${VISIBILITY_READS}: ${QUEUE_READS_PER_SECOND}\` (Threadline's)`,
        { [VISIBILITY_READS]: QUEUE_READS_PER_SECOND },
      ],
      [
        `\`${TEMPORAL_QUEUE_READS_PER_SECOND}\` (Temporal's default)`,
        { [VISIBILITY_READS]: TEMPORAL_QUEUE_READS_PER_SECOND },
      ],
    ],
  },
};
const caseName = arg('case', '');
if (!(caseName in cases)) throw new Error(`--case= one of ${Object.keys(cases).join(', ')}`);

type Series =
  | 'newFirstDelta'
  | 'newStartRecorded'
  | 'newCompletion'
  | 'newStepStart'
  | 'idleFirstDelta'
  | 'idleCompletion'
  | 'idleStepStart';

interface Side {
  name: string;
  env: BenchEnv;
  samples: Record<Series, number[]>;
}

/** One message to `target`, timed to its first `text-delta`; its history once the thread settled. */
async function turn(env: BenchEnv, target: ThreadTarget) {
  const sub = env.agent.subscribeToThread(target);
  const t0 = performance.now();
  let watched: Awaited<ReturnType<typeof watchTurn>>;
  try {
    const watching = watchTurn(sub.stream);
    await env.agent.sendMessage(`ab ${randomUUID()}`, target);
    watched = await withTimeout(watching, 'a turn');
  } finally {
    sub.unsubscribe();
  }
  const { events } = await settledHistory(env, target);
  return { sentAt: wallClock(t0), toFirstDelta: watched.firstDelta - t0, stepStart: watched.stepStarts[0], events };
}

/** The first `WorkflowTaskCompleted` at or after `from` (server clock). */
const completedAt = (events: HistoryEvent[], from: number) => findEvent(events, from, 'WorkflowTaskCompleted').at;

/** From the first `WorkflowTaskCompleted` at or after `from` to the next `ActivityTaskStarted` (server clock). */
function completionToStep(events: HistoryEvent[], from: number): number {
  return findEvent(events, from, 'ActivityTaskStarted').at - completedAt(events, from);
}

async function round(side: Side, counted: boolean): Promise<void> {
  const target = { resourceId: `ab-${caseName}`, threadId: randomUUID() };
  const first = await turn(side.env, target);
  const second = await turn(side.env, target);
  await sleep(cases[caseName].pauseMs);
  if (!counted) return;
  const s = side.samples;
  const from = first.events.length;
  s.newFirstDelta.push(first.toFirstDelta);
  s.newStartRecorded.push(findEvent(first.events, 0, 'WorkflowExecutionStarted').at - first.sentAt);
  s.newCompletion.push(completionToStep(first.events, 0));
  s.newStepStart.push(wallClock(first.stepStart) - completedAt(first.events, 0));
  s.idleFirstDelta.push(second.toFirstDelta);
  s.idleCompletion.push(completionToStep(second.events, from));
  s.idleStepStart.push(wallClock(second.stepStart) - completedAt(second.events, from));
}

const sides: Side[] = [];
for (const [name, dynamicConfig] of cases[caseName].sides) {
  const env = await startBenchEnv({ dynamicConfig });
  const samples = {
    newFirstDelta: [],
    newStartRecorded: [],
    newCompletion: [],
    newStepStart: [],
    idleFirstDelta: [],
    idleCompletion: [],
    idleStepStart: [],
  };
  sides.push({ name, env, samples });
}
try {
  await interleavedRounds(sides, { rounds, warmup }, round);
  const pct = percentilesCell;
  process.stdout.write(
    `${caseName}: ${rounds} rounds after ${warmup} warm-up, interleaved, ${cases[caseName].pauseMs} ms apart; ` +
      'p50 / p90 / p99 ms\n\n',
  );
  process.stdout.write(
    '| dev server | new thread → first text-delta | send → start recorded | its task completed → step started ' +
      '| → `step-start` at subscriber | idle thread → first text-delta | its task completed → step started ' +
      '| → `step-start` at subscriber |\n' +
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n',
  );
  for (const { name, samples: s } of sides) {
    process.stdout.write(
      `| ${name} | ${pct(s.newFirstDelta)} | ${pct(s.newStartRecorded)} | ${pct(s.newCompletion)} ` +
        `| ${pct(s.newStepStart)} | ${pct(s.idleFirstDelta)} | ${pct(s.idleCompletion)} | ${pct(s.idleStepStart)} |\n`,
    );
  }
} finally {
  for (const { env } of sides) await env.close();
}
process.exit(0);
