/**
 * Issue #12's targets (parts 2–10) and the Threadline-beside-floor comparisons, computed from one run's results: no
 * verdict is written down anywhere, each is arithmetic on the numbers of the same run. Pure, so that
 * test/unit/bench-report.test.ts can hold the arithmetic to synthetic results.
 */

/** The latency figures a target reads. */
interface Pcts {
  p50: number;
  p99: number;
}

/** What the targets read of a run's results (`BenchResults` has all of it and more). */
export interface TargetInputs {
  idleWake: {
    freshThread: { toFirstDelta: Pcts };
    idleThread: { toFirstDelta: Pcts };
    /** The direct AI SDK `streamText` floor. */
    floor: { toFirstDelta: Pcts };
    temporalFloor: {
      series: { newByUpdate: { toActivity: Pcts }; idleByUpdate: { toActivity: Pcts } };
      activityToActivity: Pcts;
    };
  };
  injection: { stepEndToNextRequest: Pcts };
  interrupt: { series: Record<string, { label: string; samples: number; notClosed: number; toClosed: Pcts }> };
  signalIngest: {
    oneThread: IngestFigures;
    manyThreads: IngestFigures;
    manyThreadsStateDependent: IngestFigures;
    floor: {
      oneWorkflow: FloorFigures;
      manyByUpdate: FloorFigures;
      manyBySignal: FloorFigures;
    };
  };
  history: { eventsPerTurn: number[][]; bytesPerTurn: number[][]; largestInputPerTurn: number[][] };
  notifications: NotificationFigures & { floor: FloorFigures; paced: NotificationFigures };
  memory: { rssPerEvictedThread: number; rssPerEvictedThreadStandardError: number; rssPerCachedThread: number };
  http: {
    newThread: { inProcess: Pcts; gateway: Pcts };
    idleThread: { inProcess: Pcts; gateway: Pcts };
    ingest: { inProcess: { acceptedPerSecond: number }; gateway: { acceptedPerSecond: number } };
  };
}

interface IngestFigures {
  signalsPerSecond: number;
  handledPerSecond: number;
  verification: { ok: boolean };
}

interface FloorFigures {
  acceptedPerSecond: number;
  handledPerSecond: number;
}

interface NotificationFigures {
  accepted: number;
  acceptedPerSecond: number;
  history: { eventsPerNotification: number; eventsByType: Record<string, number> };
  wakes: { modelRequests: number };
  workerLog: Record<string, number>;
  ok: boolean;
}

/** The bounds of issue #12, and the figures of "today" it states them against (measured 2026-12-01). */
export const bounds = {
  idleWakeP50SlackMs: 3,
  idleWakeP99SlackMs: 10,
  newThreadP50SlackMs: 5,
  stepEndP50SlackMs: 5,
  interruptP50Ms: 50,
  interruptP99Ms: 150,
  ingestShareOfFloor: 0.9,
  historyEventsPerTurn: 12,
  /** "Flat bytes": a later turn adds at most this many history bytes more than the turn before it (fitted). */
  historyBytesGrowthPerTurn: 10,
  /** "Never nears the 2 MB payload limit": the largest activity input of a 2,000-message thread (1,000 turns). */
  largestInputAt2000Messages: 1024 * 1024,
  notificationsTodayPerSecond: 46.5,
  notificationsSpeedup: 3,
  notificationEventsPerInput: 6,
  modelRequestsPer10kFullSpeed: 2_000,
  modelRequestsPer10kPaced: 6_000,
  /** "Cost nothing once evicted": RSS per evicted idle thread. */
  rssPerEvictedThreadBytes: 1024,
  gatewayP50SlackMs: 3,
  httpIngestShare: 0.9,
} as const;

export interface TargetRow {
  /** Issue part and letter, e.g. `2a`. */
  id: string;
  target: string;
  /** The measured figure, as shown. */
  measured: string;
  /** The bound it is held to, computed from this run's floors where it has one. */
  bound: string;
  met: boolean;
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : x === Infinity ? '∞' : '–');
/** A difference with its sign: `+4.6`, `−0.5`. */
const signedF1 = (x: number) => (Number.isFinite(x) && x < 0 ? `−${f1(-x)}` : `+${f1(x)}`);
const f0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : x === Infinity ? '∞' : '–');
/** `a ≤ b`, false when either is not a number (not measured). */
const atMost = (a: number, b: number) => !Number.isNaN(a) && !Number.isNaN(b) && a <= b;

/** Least-squares slope of `ys` over `xs` (NaN with fewer than two points). */
/** Target 5's row for the `index`-th interrupt variant (in `interruptVariants` order): 5a, 5b, … */
export const interruptTargetId = (index: number): string => `5${String.fromCharCode(97 + index)}`;

export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return NaN;
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  const sxx = xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  const sxy = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0);
  return sxx === 0 ? NaN : sxy / sxx;
}

/** Median of the threads' values (lower middle). */
export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.ceil(sorted.length / 2) - 1];
};

/** Per later turn (the second on), the median over threads, with the turn number (1-based). */
function laterTurns(perTurn: number[][]): { turns: number[]; values: number[] } {
  const turns = perTurn.map((_, i) => i + 1).slice(1);
  return { turns, values: perTurn.slice(1).map(median) };
}

/** History bytes each later turn adds, fitted: growth per turn as the conversation grows. */
export function bytesGrowthPerTurn(bytesPerTurn: number[][]): number {
  const { turns, values } = laterTurns(bytesPerTurn);
  return slope(turns, values);
}

/** The largest activity input extrapolated (linear fit over later turns) to `turn`. */
export function largestInputAt(largestInputPerTurn: number[][], turn: number): number {
  const { turns, values } = laterTurns(largestInputPerTurn);
  const k = slope(turns, values);
  if (Number.isNaN(k)) return NaN;
  const mx = turns.reduce((s, x) => s + x, 0) / turns.length;
  const my = values.reduce((s, y) => s + y, 0) / values.length;
  return my + k * (turn - mx);
}

/** Worker log lines and history events that say a workflow task ran too long. */
export function slowTaskSigns(n: NotificationFigures): { timedOut: number; exceeded: number } {
  const exceeded = Object.entries(n.workerLog)
    .filter(([message]) => /exceeded|deadlock|didn't yield|timed out|TMPRL1101/i.test(message))
    .reduce((sum, [, count]) => sum + count, 0);
  return { timedOut: n.history.eventsByType.WorkflowTaskTimedOut ?? 0, exceeded };
}

const per10k = (requests: number, accepted: number) => (accepted > 0 ? (requests / accepted) * 10_000 : NaN);

export function evaluateTargets(r: TargetInputs): TargetRow[] {
  const rows: TargetRow[] = [];
  const add = (id: string, target: string, measured: string, bound: string, met: boolean) =>
    rows.push({ id, target, measured, bound, met });
  const w = r.idleWake;
  const st = w.floor.toFirstDelta;
  const idleFloor = w.temporalFloor.series.idleByUpdate.toActivity;
  const newFloor = w.temporalFloor.series.newByUpdate.toActivity;

  add(
    '1',
    'the bare-Temporal floor and the `streamText` floor measured in this run',
    `idle ${f1(idleFloor.p50)} ms, new ${f1(newFloor.p50)} ms, streamText ${f1(st.p50)} ms p50`,
    'every floor a number',
    [idleFloor.p50, newFloor.p50, st.p50, w.temporalFloor.activityToActivity.p50].every(Number.isFinite),
  );

  const idle = w.idleThread.toFirstDelta;
  const idleP50Bound = idleFloor.p50 + st.p50 + bounds.idleWakeP50SlackMs;
  const idleP99Bound = idleFloor.p99 + st.p99 + bounds.idleWakeP99SlackMs;
  add(
    '2a',
    'idle wake → first text-delta, p50',
    `${f1(idle.p50)} ms`,
    `≤ ${f1(idleFloor.p50)} + ${f1(st.p50)} + 3 = ${f1(idleP50Bound)} ms`,
    atMost(idle.p50, idleP50Bound),
  );
  add(
    '2b',
    'idle wake → first text-delta, p99',
    `${f1(idle.p99)} ms`,
    `≤ ${f1(idleFloor.p99)} + ${f1(st.p99)} + 10 = ${f1(idleP99Bound)} ms`,
    atMost(idle.p99, idleP99Bound),
  );

  const fresh = w.freshThread.toFirstDelta;
  const freshFloor = newFloor.p50 + st.p50;
  add(
    '3a',
    'new thread → first text-delta, p50',
    `${f1(fresh.p50)} ms`,
    `≤ ${f1(newFloor.p50)} + ${f1(st.p50)} + 5 = ${f1(freshFloor + bounds.newThreadP50SlackMs)} ms`,
    atMost(fresh.p50, freshFloor + bounds.newThreadP50SlackMs),
  );
  add(
    '3b',
    'new thread beats the floor itself (eager start), p50',
    `${f1(fresh.p50)} ms`,
    `< ${f1(freshFloor)} ms`,
    fresh.p50 < freshFloor,
  );

  const stepEnd = r.injection.stepEndToNextRequest;
  const a2a = w.temporalFloor.activityToActivity;
  add(
    '4',
    'step end → next model request, p50',
    `${f1(stepEnd.p50)} ms`,
    `≤ ${f1(a2a.p50)} + 5 = ${f1(a2a.p50 + bounds.stepEndP50SlackMs)} ms`,
    atMost(stepEnd.p50, a2a.p50 + bounds.stepEndP50SlackMs),
  );

  Object.values(r.interrupt.series).forEach((s, i) => {
    const notClosed = s.notClosed > 0 ? ` (${s.notClosed} of ${s.samples} never closed early)` : '';
    add(
      interruptTargetId(i),
      `provider request closed: ${s.label}`,
      `${f1(s.toClosed.p50)} / ${f1(s.toClosed.p99)} ms p50 / p99${notClosed}`,
      `≤ ${bounds.interruptP50Ms} / ≤ ${bounds.interruptP99Ms} ms`,
      atMost(s.toClosed.p50, bounds.interruptP50Ms) && atMost(s.toClosed.p99, bounds.interruptP99Ms),
    );
  });

  const d = r.signalIngest;
  const share = bounds.ingestShareOfFloor;
  const ratio = (x: number, floor: number) => `${f0(x)}/s (${f1((x / floor) * 100)} % of ${f0(floor)}/s)`;
  const atLeastShare = (id: string, target: string, measured: number, floorRate: number, floorName: string) =>
    add(
      id,
      target,
      ratio(measured, floorRate),
      `≥ 90 % of ${floorName} = ${f0(share * floorRate)}/s`,
      atMost(share * floorRate, measured),
    );
  atLeastShare(
    '6a',
    'state-dependent inputs over 1,000 threads: accepted/s',
    d.manyThreadsStateDependent.signalsPerSecond,
    d.floor.manyByUpdate.acceptedPerSecond,
    'update-with-start',
  );
  atLeastShare(
    '6b',
    'persist-only signals over 1,000 threads: accepted/s',
    d.manyThreads.signalsPerSecond,
    d.floor.manyBySignal.acceptedPerSecond,
    'signal-with-start',
  );
  atLeastShare(
    '6c',
    'persist-only signals over 1,000 threads: handled/s',
    d.manyThreads.handledPerSecond,
    d.floor.manyBySignal.handledPerSecond,
    'signal-with-start',
  );
  atLeastShare(
    '6d',
    'one thread stays at its floor: accepted/s',
    d.oneThread.signalsPerSecond,
    d.floor.oneWorkflow.acceptedPerSecond,
    'update-with-start, continue-as-new every 1,000',
  );
  const ingestOk = [d.oneThread, d.manyThreads, d.manyThreadsStateDependent].every((x) => x.verification.ok);
  add(
    '6e',
    'nothing lost, every input echoed once, the answer honest',
    ingestOk ? 'every check passed' : 'a check failed (see (d))',
    'every check',
    ingestOk,
  );

  const h = r.history;
  const laterEvents = h.eventsPerTurn.slice(1).flat();
  const maxLater = laterEvents.length > 0 ? Math.max(...laterEvents) : NaN;
  add(
    '7a',
    'history events per one-step turn (every later turn)',
    `${f0(maxLater)} at most`,
    `≤ ${bounds.historyEventsPerTurn}`,
    atMost(maxLater, bounds.historyEventsPerTurn),
  );
  const growth = bytesGrowthPerTurn(h.bytesPerTurn);
  add(
    '7b',
    'history bytes per turn flat as the conversation grows',
    `${f0(growth)} bytes more per turn`,
    `≤ ${bounds.historyBytesGrowthPerTurn}`,
    atMost(growth, bounds.historyBytesGrowthPerTurn),
  );
  const at2000 = largestInputAt(h.largestInputPerTurn, 1_000);
  add(
    '7c',
    'largest activity input of a 2,000-message thread (extrapolated)',
    `${f0(at2000 / 1024)} KiB`,
    `≤ ${f0(bounds.largestInputAt2000Messages / 1024)} KiB (limit 2 MiB)`,
    atMost(at2000, bounds.largestInputAt2000Messages),
  );

  const n = r.notifications;
  const speed = bounds.notificationsSpeedup * bounds.notificationsTodayPerSecond;
  add(
    '8a',
    'notifications accepted/s',
    `${f1(n.acceptedPerSecond)}/s (floor ${f1(n.floor.acceptedPerSecond)}/s)`,
    `≥ 3 × ${bounds.notificationsTodayPerSecond} = ${f1(speed)}/s`,
    atMost(speed, n.acceptedPerSecond),
  );
  add(
    '8b',
    'history events per notification',
    f1(n.history.eventsPerNotification),
    `≤ ${bounds.notificationEventsPerInput}`,
    atMost(n.history.eventsPerNotification, bounds.notificationEventsPerInput),
  );
  const full = per10k(n.wakes.modelRequests, n.accepted);
  add(
    '8c',
    'model requests per 10,000 notifications, full speed',
    f0(full),
    `≤ ${f0(bounds.modelRequestsPer10kFullSpeed)}`,
    atMost(full, bounds.modelRequestsPer10kFullSpeed),
  );
  const paced = per10k(n.paced.wakes.modelRequests, n.paced.accepted);
  add(
    '8d',
    `model requests per 10,000 notifications, paced at ${bounds.notificationsTodayPerSecond}/s`,
    f0(paced),
    `≤ ${f0(bounds.modelRequestsPer10kPaced)}`,
    atMost(paced, bounds.modelRequestsPer10kPaced),
  );
  const slow = [slowTaskSigns(n), slowTaskSigns(n.paced)].reduce((a, b) => ({
    timedOut: a.timedOut + b.timedOut,
    exceeded: a.exceeded + b.exceeded,
  }));
  add(
    '8e',
    '`WorkflowTaskTimedOut` and "workflow task exceeded 5 s" under that load',
    `${slow.timedOut} and ${slow.exceeded}`,
    '0 and 0',
    slow.timedOut === 0 && slow.exceeded === 0,
  );
  add(
    '8f',
    "the policy's decisions and the records check out",
    n.ok && n.paced.ok ? 'every check passed' : 'a check failed (see (h))',
    'every check',
    n.ok && n.paced.ok,
  );

  const m = r.memory;
  add(
    '9',
    'worker RSS per idle thread once evicted',
    `${f0(m.rssPerEvictedThread)} ± ${f0(m.rssPerEvictedThreadStandardError)} bytes (slope over the settled stages; cached: ${f0(m.rssPerCachedThread)})`,
    `≤ ${f0(bounds.rssPerEvictedThreadBytes)} bytes`,
    atMost(m.rssPerEvictedThread, bounds.rssPerEvictedThreadBytes),
  );

  const x = r.http;
  const idleGap = x.idleThread.gateway.p50 - x.idleThread.inProcess.p50;
  const newGap = x.newThread.gateway.p50 - x.newThread.inProcess.p50;
  add(
    '10a',
    'gateway + SSE (client in its own process) over the in-process client, idle wake, p50',
    `${signedF1(idleGap)} ms (${f1(x.idleThread.gateway.p50)} vs ${f1(x.idleThread.inProcess.p50)})`,
    `≤ ${bounds.gatewayP50SlackMs} ms`,
    atMost(idleGap, bounds.gatewayP50SlackMs),
  );
  add(
    '10b',
    'gateway + SSE (client in its own process) over the in-process client, new thread, p50',
    `${signedF1(newGap)} ms (${f1(x.newThread.gateway.p50)} vs ${f1(x.newThread.inProcess.p50)})`,
    `≤ ${bounds.gatewayP50SlackMs} ms`,
    atMost(newGap, bounds.gatewayP50SlackMs),
  );
  const httpIn = x.ingest.inProcess.acceptedPerSecond;
  add(
    '10c',
    'HTTP ingest (persist-only signals, 500 threads; client in its own process)',
    ratio(x.ingest.gateway.acceptedPerSecond, httpIn),
    `≥ 90 % of in-process = ${f0(bounds.httpIngestShare * httpIn)}/s`,
    atMost(bounds.httpIngestShare * httpIn, x.ingest.gateway.acceptedPerSecond),
  );
  return rows;
}

/** One Threadline figure beside its floor. */
export interface Comparison {
  path: string;
  floor: string;
  threadline: string;
  /** Threadline − floor, at p50 (or per second). */
  difference: number;
  /** Threadline ÷ floor. */
  ratio: number;
  unit: 'ms' | '/s';
}

export function comparisons(r: TargetInputs): Comparison[] {
  const w = r.idleWake;
  const st = w.floor.toFirstDelta;
  const tf = w.temporalFloor;
  const pair = (a: Pcts) => `${f1(a.p50)} / ${f1(a.p99)}`;
  const latency = (path: string, floorLabel: string, floor: Pcts, threadline: Pcts): Comparison => ({
    path,
    floor: `${pair(floor)}${floorLabel}`,
    threadline: pair(threadline),
    difference: threadline.p50 - floor.p50,
    ratio: threadline.p50 / floor.p50,
    unit: 'ms',
  });
  const sum = (a: Pcts, b: Pcts): Pcts => ({ p50: a.p50 + b.p50, p99: a.p99 + b.p99 });
  const rate = (path: string, floorLabel: string, floor: number, threadline: number): Comparison => ({
    path,
    floor: `${f1(floor)}${floorLabel}`,
    threadline: f1(threadline),
    difference: threadline - floor,
    ratio: threadline / floor,
    unit: '/s',
  });
  const d = r.signalIngest;
  const x = r.http;
  return [
    latency(
      'idle thread: input → first text-delta',
      ' (update → activity running + `streamText`)',
      sum(tf.series.idleByUpdate.toActivity, st),
      w.idleThread.toFirstDelta,
    ),
    latency(
      'new thread: input → first text-delta',
      ' (update-with-start → activity running + `streamText`)',
      sum(tf.series.newByUpdate.toActivity, st),
      w.freshThread.toFirstDelta,
    ),
    latency(
      'step end → next model request',
      ' (activity ends → next activity running)',
      tf.activityToActivity,
      r.injection.stepEndToNextRequest,
    ),
    rate(
      'state-dependent inputs/s over 1,000 threads',
      ' (update-with-start)',
      d.floor.manyByUpdate.acceptedPerSecond,
      d.manyThreadsStateDependent.signalsPerSecond,
    ),
    rate(
      'persist-only signals/s over 1,000 threads: accepted',
      ' (signal-with-start)',
      d.floor.manyBySignal.acceptedPerSecond,
      d.manyThreads.signalsPerSecond,
    ),
    rate(
      'persist-only signals/s over 1,000 threads: handled',
      ' (signal-with-start)',
      d.floor.manyBySignal.handledPerSecond,
      d.manyThreads.handledPerSecond,
    ),
    rate(
      'inputs/s into one thread',
      ' (update-with-start, continue-as-new every 1,000)',
      d.floor.oneWorkflow.acceptedPerSecond,
      d.oneThread.signalsPerSecond,
    ),
    rate(
      'notifications accepted/s (100 threads, 48 in flight)',
      ' (update-with-start, accept only)',
      r.notifications.floor.acceptedPerSecond,
      r.notifications.acceptedPerSecond,
    ),
    latency(
      'through the gateway: idle thread → first text-delta',
      ' (in-process client)',
      x.idleThread.inProcess,
      x.idleThread.gateway,
    ),
    latency(
      'through the gateway: new thread → first text-delta',
      ' (in-process client)',
      x.newThread.inProcess,
      x.newThread.gateway,
    ),
    rate(
      'through the gateway: persist-only signals/s over 500 threads',
      ' (in-process client)',
      x.ingest.inProcess.acceptedPerSecond,
      x.ingest.gateway.acceptedPerSecond,
    ),
  ];
}
