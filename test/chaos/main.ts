/**
 * `npm run chaos -- --minutes N`: the chaos harness (issue 14 part 1). Starts the topology (topology.ts), drives
 * threads through both gateways (load.ts, subscribers.ts) while processes die on a seeded schedule (faults.ts),
 * drains, then checks the invariants (invariants.ts, history.ts) and prints the figures (report.ts). Exit code 0 when
 * every invariant held, 1 when one failed (each violation listed), 2 when the harness itself could not run.
 */
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Redis } from 'ioredis';
import { threadKey } from '../../protocol/ids';
import { startModelServer } from '../support/model-server';
import {
  readNotificationIds,
  readStoredInputs,
  readStream,
  readStreamTail,
  readToolRuns,
  type StreamContents,
} from './collect';
import { FaultInjector, planFaults, type FaultKind } from './faults';
import { checkHistories, type HistoryFindings } from './history';
import { gatewayRing } from './http';
import {
  checkInputs,
  checkNotifications,
  checkSubscriber,
  checkTools,
  compareEventIds,
  type StoredInput,
} from './invariants';
import { LoadLog, ThreadDriver, type ThreadPlan } from './load';
import { chaosModel } from './model';
import { ChaosUsageError, parseOptions, type ChaosOptions } from './options';
import { createRng } from './random';
import { loadAverage, markdown, passed, percentile, summary, type ChaosFigures, type Invariant } from './report';
import { Subscriber } from './subscribers';
import { startTopology, type Topology } from './topology';

const CATCH_UP_MS = 60_000;
const READ_CONCURRENCY = 8;

const began = Date.now();
const log = (line: string) => process.stderr.write(`[chaos ${((Date.now() - began) / 1000).toFixed(0)}s] ${line}\n`);

async function main(): Promise<number> {
  let options: ChaosOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof ChaosUsageError)) throw err;
    console.error(err.message);
    return 2;
  }
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  const command = `npm run chaos -- ${process.argv.slice(2).join(' ')}`.trim();
  log(`${command} (seed ${options.seed})`);
  const rng = createRng(options.seed);
  const model = chaosModel(rng.fork('model'));
  const modelServer = await startModelServer({ defaultReply: model.responder });
  // The server keeps every request; a long run needs only the count.
  const prune = setInterval(
    () => modelServer.requests.splice(0, Math.max(0, modelServer.requests.length - 100)),
    10_000,
  );
  let topology: Topology | null = null;
  let redis: Redis | null = null;
  try {
    const durations: Record<string, number> = {};
    let phase = Date.now();
    const lap = (name: string) => {
      durations[name] = (Date.now() - phase) / 1000;
      phase = Date.now();
    };
    const rollover = {
      ...(options.rolloverEvents > 0 && { continueAsNewAfterEvents: options.rolloverEvents }),
      ...(options.rolloverUpdates > 0 && {
        maxUpdatesPerExecution: options.rolloverUpdates,
        maxSignalsPerExecution: options.rolloverUpdates,
      }),
    };
    topology = await startTopology({
      temporal: options.temporal,
      workers: options.workers,
      gateway2ThreadConfig: Object.keys(rollover).length > 0 ? rollover : undefined,
      model: modelServer,
      log,
    });
    lap('start-up');
    const gateways = gatewayRing(topology.gatewayUrls, rng.fork('gateways'));
    const loadLog = new LoadLog();
    const thinkMs = (options.threads / options.rate) * 1_000;
    const plans: ThreadPlan[] = Array.from({ length: options.threads }, (_, i) => {
      const resourceId = `chaos-${options.seed}-r${i % 20}`;
      const threadId = `t${i}`;
      return { name: `${resourceId}/${threadId}`, resourceId, threadId, agentId: i % 4 === 0 ? 'admin' : 'tester' };
    });
    const drivers = plans.map((p) => new ThreadDriver(p, gateways, rng.fork(`thread ${p.name}`), loadLog, thinkMs));
    const subscribers = drivers.map(
      (d) => new Subscriber(d.plan, gateways, rng.fork(`subscriber ${d.plan.name}`), d.onEvent),
    );
    for (const s of subscribers) s.start();

    const loadStart = Date.now();
    const loadEnd = loadStart + options.minutes * 60_000;
    // What each thread's stream held before each time Redis lost its data, oldest first: the events subscribers may
    // have seen that the final stream no longer has (read with Redis's writes paused, so none is missing).
    const lostStreams = new Map<string, StreamContents[]>();
    const recordBeforeWipe = async (r: Redis) => {
      let events = 0;
      for (const p of plans) {
        const contents = await readStream(r, threadKey(p.resourceId, p.threadId));
        if (contents.ids.length === 0) continue;
        lostStreams.set(p.name, [...(lostStreams.get(p.name) ?? []), contents]);
        events += contents.ids.length;
      }
      log(`redis-wipe: recorded ${events} events of the streams about to be lost`);
    };
    const injector = new FaultInjector(topology, rng.fork('faults'), log, recordBeforeWipe);
    const schedule = planFaults(
      rng.fork('schedule'),
      loadStart,
      loadEnd,
      options.workerKillEverySeconds * 1_000,
      options.temporal === 'production',
    );
    log(`load: ${options.threads} threads, ~${options.rate} inputs/s, ${schedule.length} faults planned`);
    const progress = setInterval(() => {
      const accepted = loadLog.inputs.filter((r) => r.outcome === 'accepted').length;
      const counts = injector.counts();
      log(
        `progress: ${loadLog.inputs.length} inputs sent, ${accepted} accepted, ${loadLog.retries} retries, ` +
          `${model.requests()} model requests; faults ${JSON.stringify(counts)}`,
      );
    }, 30_000);
    const faultsDone = injector.run(schedule);
    const driversDone = Promise.all(drivers.map((d) => d.run(loadEnd)));
    await sleep(Math.max(0, loadEnd - Date.now()));
    await faultsDone;
    log('load time is over: waiting for killed processes to serve again and for sends in flight');
    await injector.stop();
    await driversDone;
    clearInterval(progress);
    lap('load');

    log(`drain: every thread must be idle within ${options.idleBoundSeconds} s (answering approvals)`);
    const drainDeadline = Date.now() + options.idleBoundSeconds * 1_000;
    const views = await Promise.all(drivers.map((d) => d.drain(drainDeadline)));
    lap('drain');
    const stuck = drivers.flatMap((d, i) => {
      const v = views[i];
      if (v === 'missing') {
        const accepted = loadLog.inputs.some((r) => r.thread === d.plan.name && r.outcome === 'accepted');
        return accepted ? [`thread ${d.plan.name}: accepted inputs, but the thread does not exist (404)`] : [];
      }
      if (v && v.status === 'idle' && v.queue.length === 0 && !v.activeRun) return [];
      const run = v?.activeRun;
      const state = v
        ? `status ${v.status}, active run ${run ? `${run.runId} (${run.status}, step ${run.stepNumber}, ${run.pendingInputs} pending)` : 'none'}, ${v.queue.length} queued runs`
        : 'no read answered';
      return [`thread ${d.plan.name}: not idle ${options.idleBoundSeconds} s after the load stopped: ${state}`];
    });
    const startedNames = new Set(plans.filter((_, i) => views[i] !== 'missing').map((p) => p.name));

    log('subscribers: catching up with the end of each stream');
    redis = new Redis(topology.redis.url);
    redis.on('error', () => undefined);
    for (const s of subscribers) s.stopDropping();
    const catchUpDeadline = Date.now() + CATCH_UP_MS;
    let tails: (string | undefined)[] = [];
    for (;;) {
      tails = await mapLimit(plans, READ_CONCURRENCY, (p) =>
        readStreamTail(redis!, threadKey(p.resourceId, p.threadId)),
      );
      const behind = subscribers.filter((s, i) => {
        const last = s.lastEventId();
        return tails[i] !== undefined && (last === undefined || compareEventIds(last, tails[i]!) < 0);
      });
      if (behind.length === 0 || Date.now() > catchUpDeadline) break;
      await sleep(1_000);
    }
    await Promise.all(subscribers.map((s) => s.stop()));
    lap('catch-up');

    log('reading what the threads stored, their inboxes, streams and the tool log');
    const started = plans.filter((p) => startedNames.has(p.name));
    const storedByThread = new Map<string, StoredInput[]>();
    const recordsByThread = new Map<string, string[]>();
    const readProblems: string[] = [];
    await mapLimit(started, READ_CONCURRENCY, async (p) => {
      const path = drivers[plans.indexOf(p)].threadPath();
      try {
        storedByThread.set(p.name, await readStoredInputs(gateways, path));
        recordsByThread.set(p.name, await readNotificationIds(gateways, path));
      } catch (err) {
        readProblems.push(`thread ${p.name}: ${String(err)}`);
      }
    });
    const subscriberProblems: string[] = [];
    await mapLimit(plans, READ_CONCURRENCY, async (p, i) => {
      const final = await readStream(redis!, threadKey(p.resourceId, p.threadId));
      // The thread's stream over every Redis that held it (the ones that lost their data, then the final one).
      const stream = [...(lostStreams.get(p.name) ?? []), final];
      for (const runId of stream.flatMap((s) => s.brokenRuns)) loadLog.brokenRuns.add(runId);
      subscriberProblems.push(
        ...checkSubscriber(
          p.name,
          subscribers[i].segments,
          stream.flatMap((s) => s.ids),
        ),
      );
      // The stream's end as it stood at the catch-up: later events (a digest timer firing) may still have come.
      const tail = tails[i];
      const last = subscribers[i].lastEventId();
      if (tail !== undefined && (last === undefined || compareEventIds(last, tail) < 0)) {
        subscriberProblems.push(
          `thread ${p.name}: the subscriber stopped at ${last ?? 'nothing'} ${CATCH_UP_MS / 1000} s after the drain, the stream was at ${tail}`,
        );
      }
    });
    const toolRuns = await readToolRuns(topology.toolLogPath);
    lap('collect');

    log(`histories: reading and replaying ${started.length} threads`);
    const histories = await checkHistories(
      await topology.temporal(),
      topology.workflowBundlePath,
      started.map((p) => ({ thread: p.name, workflowId: threadKey(p.resourceId, p.threadId) })),
      join(tmpdir(), `threadline-chaos-${options.seed}-failed-replays`),
    );
    lap('histories and replay');

    const inputs = checkInputs(loadLog.inputs, storedByThread, loadLog.brokenRuns);
    const notifications = checkNotifications(loadLog.notifications, recordsByThread);
    const tools = checkTools(loadLog.approvals, toolRuns, loadLog.abortedThreads);
    const accepted = loadLog.inputs.filter((r) => r.outcome === 'accepted');
    const notificationRecords = loadLog.notifications.reduce((n, s) => n + s.ids.length, 0);
    const segments = subscribers.reduce((n, s) => n + s.segments.length, 0);
    const invariants: Invariant[] = [
      {
        name: 'nothing accepted is lost',
        violations: [...inputs.lost, ...notifications.lost, ...readProblems],
        checked: `${accepted.length} inputs, ${notificationRecords} notification records`,
      },
      {
        name: 'nothing is stored or answered twice',
        violations: [...inputs.duplicated, ...notifications.duplicated],
        checked: `${loadLog.inputs.length} inputs (${loadLog.resends.sent} sent again on purpose)`,
      },
      {
        name: 'every input handled as its answer said',
        violations: [...inputs.mishandled, ...notifications.mishandled, ...tools.ranWhenDeclined, ...tools.neverRan],
        checked: `${accepted.length} inputs, ${loadLog.approvals.length} approvals`,
      },
      {
        name: `every thread idle within ${options.idleBoundSeconds} s after the load`,
        violations: stuck,
        checked: `${started.length} threads`,
      },
      {
        name: 'every subscriber saw each event once, in order (or a gap, then a snapshot)',
        violations: subscriberProblems,
        checked: `${subscribers.length} subscribers, ${segments} connections`,
      },
      {
        name: 'no workflow task failures',
        violations: histories.taskFailures
          .filter((t) => !turnedBack(t))
          .map((t) => `thread ${t.thread}, run ${t.runId}, event ${t.eventId}: ${t.cause}: ${t.message}`),
        checked:
          `${histories.executions} executions, ${histories.events} events; ` +
          `${histories.taskFailures.filter(turnedBack).length} completions turned back by the server (UNHANDLED_COMMAND)`,
      },
      {
        name: 'every history replays on the current code',
        violations: [
          ...histories.replayFailures.map((r) => `${r.workflowId} run ${r.runId}: ${r.error}`),
          ...histories.unreadable,
        ],
        checked: `${histories.executions} executions`,
      },
    ];

    const figures: ChaosFigures = {
      startedAt,
      command,
      seed: options.seed,
      minutes: options.minutes,
      threads: options.threads,
      rate: options.rate,
      temporal: topology.temporalDescription,
      loadAtStart,
      loadAtEnd: loadAverage(),
      durations,
      faults: injector.counts(),
      faultsSkipped: injector.skipped,
      recoverySeconds: recoveries(injector),
      rows: rows(loadLog, accepted.length, model.requests(), subscribers, histories, {
        lost: inputs.lost.length + notifications.lost.length,
        duplicated: inputs.duplicated.length + notifications.duplicated.length,
        stuck: stuck.length,
        ranTwice: tools.ranTwice,
        neverRan: [...tools.neverRan, ...tools.neverRanAborted],
      }),
      latency: {
        during: accepted.filter((r) => injector.during(r.sentAt)).map((r) => r.latencyMs!),
        outside: accepted.filter((r) => !injector.during(r.sentAt)).map((r) => r.latencyMs!),
      },
      invariants,
      notes: notes(options, tools.ranTwice, tools.neverRanAborted),
    };
    console.log(summary(figures));
    if (options.report) {
      await writeFile(options.report, markdown(figures));
      log(`report written to ${options.report}`);
    }
    return passed(figures) ? 0 : 1;
  } finally {
    clearInterval(prune);
    redis?.disconnect();
    log('stopping the topology');
    await topology?.stop();
    await modelServer.close();
  }
}

function recoveries(injector: FaultInjector): ChaosFigures['recoverySeconds'] {
  const byKind = new Map<FaultKind, number[]>();
  for (const w of injector.windows) {
    if (w.recoveredAt === undefined) continue;
    byKind.set(w.kind, [...(byKind.get(w.kind) ?? []), (w.recoveredAt - w.at) / 1000]);
  }
  return Object.fromEntries(
    [...byKind].map(([kind, s]) => [kind, { p50: percentile(s, 50), max: Math.max(...s) }]),
  ) as ChaosFigures['recoverySeconds'];
}

function rows(
  loadLog: LoadLog,
  accepted: number,
  modelRequests: number,
  subscribers: Subscriber[],
  histories: HistoryFindings,
  r: { lost: number; duplicated: number; stuck: number; ranTwice: string[]; neverRan: string[] },
): [string, string][] {
  const count = <T>(items: T[], key: (t: T) => string | undefined) => {
    const counts = new Map<string, number>();
    for (const item of items) {
      const k = key(item);
      if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return (
      [...counts]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    );
  };
  const n = (x: number) => x.toLocaleString('en-US');
  const inputs = loadLog.inputs;
  const refused = inputs.filter((i) => i.outcome === 'refused');
  const events = subscribers.reduce((s, x) => s + x.segments.reduce((t, seg) => t + seg.items.length, 0), 0);
  const snapshots = subscribers.reduce(
    (s, x) => s + x.segments.reduce((t, seg) => t + seg.items.filter((i) => i.type === 'snapshot').length, 0),
    0,
  );
  return [
    ['inputs sent', `${n(inputs.length)} (${count(inputs, (i) => i.route)})`],
    ['inputs accepted', `${n(accepted)} (${count(inputs, (i) => i.action)})`],
    ['inputs refused (4xx)', `${n(refused.length)} (${count(refused, (i) => i.refusal?.slice(0, 80))})`],
    [
      'inputs with no answer before the deadline',
      `${n(inputs.filter((i) => i.outcome === 'unknown').length)} (last errors: ${count(
        inputs.filter((i) => i.outcome === 'unknown'),
        (i) => i.refusal?.replace(/[0-9a-f-]{36}|\d+/g, '…').slice(0, 160),
      )})`,
    ],
    ['requests sent again after an unknown outcome', n(loadLog.retries)],
    [
      'answered inputs sent again on purpose',
      `${n(loadLog.resends.sent)} (${n(loadLog.resends.duplicateAnswers)} answered as duplicates, ` +
        `${n(loadLog.resends.skippedAgain)} unchanged states skipped again)`,
    ],
    [
      'notification bursts',
      `${n(loadLog.notifications.filter((s) => s.outcome === 'accepted').length)} accepted of ${n(loadLog.notifications.length)}, ${n(loadLog.notifications.reduce((t, s) => t + s.ids.length, 0))} records`,
    ],
    [
      'tool approvals',
      `${count(loadLog.approvals, (a) => `${a.approved ? 'approved' : 'declined'} ${a.outcome}`)}; ran twice ${r.ranTwice.length}, approved but never ran ${r.neverRan.length}`,
    ],
    [
      'aborts',
      `${n(loadLog.aborts.sent)} sent, ${n(loadLog.aborts.aborted)} aborted a run, ${n(loadLog.aborts.unknown)} unknown`,
    ],
    [
      'operations',
      Object.entries(loadLog.opCounts)
        .sort((a, b) => b[1] - a[1])
        .map(([op, k]) => `${op} ${n(k)}`)
        .join(', '),
    ],
    ['model requests', n(modelRequests)],
    [
      'subscriber connections',
      `${n(subscribers.reduce((s, x) => s + x.segments.length, 0))} (${n(subscribers.reduce((s, x) => s + x.drops, 0))} dropped on purpose and resumed, ${n(subscribers.reduce((s, x) => s + x.failures, 0))} cut or refused), ${n(events)} events received, ${n(snapshots)} snapshots`,
    ],
    ['workflow executions replayed', n(histories.executions)],
    ['executions per thread (continue-as-new chain)', executionsLine(histories.executionsPerThread)],
    ['workflow task timeouts (worker killed holding the task, or too slow)', n(histories.taskTimeouts)],
    ['lost / duplicated / stuck', `${r.lost} / ${r.duplicated} / ${r.stuck}`],
  ];
}

function executionsLine(perThread: ReadonlyMap<string, number>): string {
  const threads = new Map<number, number>();
  for (const n of perThread.values()) threads.set(n, (threads.get(n) ?? 0) + 1);
  const rolled = [...perThread.values()].filter((n) => n > 1).length;
  const spread = [...threads]
    .sort((a, b) => a[0] - b[0])
    .map(([executions, k]) => `${k} with ${executions}`)
    .join(', ');
  return `${rolled} of ${perThread.size} threads continued as new (threads by executions: ${spread || 'none'})`;
}

function notes(options: ChaosOptions, ranTwice: string[], neverRan: string[]): string[] {
  const out = [
    'Redis runs with an append-only file: a `redis-restart` (SIGTERM) keeps its data, as a production Redis with ' +
      'persistence does; a `redis-wipe` SIGKILLs it and starts it empty, as a Redis without persistence that crashed: ' +
      'the retained events and the notification archive are gone (docs/operations.md, Redis), and a subscriber ' +
      'resuming across it must get a snapshot, never a silent hole.',
    `${options.workers} workers, one SIGKILLed about every ${options.workerKillEverySeconds} s (±1/3) while another serves, and started again at once.`,
  ];
  if (options.rolloverEvents > 0 || options.rolloverUpdates > 0) {
    out.push(
      `Threads created through gateway 2 continue as new after ${options.rolloverEvents || 'the default'} history events, ${options.rolloverUpdates || 'the default number of'} updates or as many signals; the others keep the defaults (4,000 / 1,000 / 5,000).`,
    );
  }
  if (options.temporal === 'dev')
    out.push('The dev server keeps its data in memory, so it is never killed (--temporal dev).');
  if (ranTwice.length > 0) {
    out.push(
      `Tool calls that ran twice (a worker killed after the tool ran, before its activity completed: activities run at least once): ${ranTwice.slice(0, 10).join('; ')}`,
    );
  }
  if (neverRan.length > 0) {
    out.push(
      `Approved tool calls that never ran, on threads that were aborted meanwhile: ${neverRan.slice(0, 10).join('; ')}`,
    );
  }
  return out;
}

/** Runs `fn` over `items`, at most `limit` at once; answers the results in order. */
async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i], i);
      }
    }),
  );
  return results;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);

/**
 * A completion the server turned back because a signal arrived while the task was closing the execution (continue-as-
 * new): Temporal records it as `WorkflowTaskFailed` with cause UNHANDLED_COMMAND and at once schedules a task that
 * delivers the signal, so nothing is lost and no workflow code failed. Every other cause is a violation.
 */
function turnedBack(failure: { cause: string }): boolean {
  return /UNHANDLED_COMMAND/.test(failure.cause);
}
