/**
 * BENCHMARKS.md from one run's results.
 *
 * Long on purpose: one section per benchmark, each a small renderer of its own result type; they share the tables,
 * the machine header and the targets, and are read together when the report changes.
 */
import type { FloorIngestCase } from './floor/ingest';
import { floorLatencySeries, type FloorLatencyName } from './floor/latency';
import type { GatewayBusResult } from './gateway-bus';
import type { GatewayMemoryResult } from './gateway-memory';
import type { GatewayFigures } from './gateway-memory-process';
import { gatewaySegments, type HttpResult } from './http';
import type { MemoryResult } from './memory';
import type { HistoryResult } from './history';
import type { IdleWakeResult, WakeSeries } from './idle-wake';
import type { InjectionResult } from './injection';
import {
  interruptSegments,
  interruptVariants,
  type InterruptResult,
  type InterruptSeries,
  type InterruptVariant,
} from './interrupt';
import type { NotificationsResult } from './notifications';
import type { IngestCase, SignalIngestResult } from './signal-ingest';
import type { StateIngestResult } from './state-ingest';
import type { Summary } from './stats';
import { bytesGrowthPerTurn, comparisons, evaluateTargets, largestInputAt, median, type TargetRow } from './targets';
import { whyNot } from './why-not';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  temporalCli: string;
  temporalDynamicConfig: Record<string, string | number | boolean>;
  /** `os.loadavg()` (1, 5, 15 min) when the run started and ended: other work on the machine skews latencies. */
  loadAverage: { start: number[]; end: number[] };
  date: string;
  command: string;
}

export interface BenchResults {
  machine: Machine;
  quick: boolean;
  idleWake: IdleWakeResult;
  injection: InjectionResult;
  history: HistoryResult;
  signalIngest: SignalIngestResult;
  interrupt: InterruptResult;
  gatewayBus: GatewayBusResult;
  stateIngest: StateIngestResult;
  notifications: NotificationsResult & { floor: FloorIngestCase; paced: NotificationsResult };
  http: HttpResult;
  memory: MemoryResult;
  /** `failed`: the benchmark threw (the run goes on; the report says why). */
  gatewayMemory: GatewayMemoryResult | { failed: string };
  /** Wall time of the whole run. */
  durationSeconds: number;
  /** The options the floor worker shares with Threadline's (bench/floor/world.ts). */
  floorWorkerSettings: Record<string, string>;
}

/** Mastra's in-process, non-durable path, for scale (from an earlier issue). */
const mastra = {
  firstDeltaP50Ms: '7.5–8.8',
  firstDeltaP99Ms: '16–20',
  stepEndToNextCallP50Ms: 8.2,
  /** Persisting to a libSQL file, queues in memory, 1,000 threads. */
  signalIngestPerSecond: 2_100,
};

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : x === Infinity ? '∞' : '–');
const pcts = (s: Summary) => `${ms(s.p50)} / ${ms(s.p90)} / ${ms(s.p99)}`;
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
const dynamicConfig = (c: Record<string, unknown>) =>
  Object.entries(c)
    .map(([key, value]) => `\`${key}=${JSON.stringify(value)}\``)
    .join(', ') || 'server defaults';
const verdict = (ok: boolean) => (ok ? '**met**' : '**not met**');

function segmentTable(segments: Record<string, Summary>): string[] {
  return [
    '| segment | p50 | p90 | p99 |',
    '| --- | ---: | ---: | ---: |',
    ...Object.entries(segments).map(([name, s]) => `| ${name} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} |`),
  ];
}

function wakeRow(name: string, s: WakeSeries): string {
  return `| ${name} | ${pcts(s.toModelRequest)} | ${pcts(s.toFirstDelta)} | ${pcts(s.toSendResolved)} |`;
}

function overStreamTextRow(name: string, s: WakeSeries): string {
  const { p50, p99 } = s.toFirstDelta;
  return `| ${name} | ${ms(p50)} | ${ms(p99)} | ${ms(s.overheadP50Ms)} | ${s.ratioP50.toFixed(1)}× |`;
}

function range(values: number[]): string {
  const [min, max] = [Math.min(...values), Math.max(...values)];
  return min === max ? `${min}` : `${min}–${max}`;
}

/** The turns the history table shows (1-based): the first, the second, and 5, 10, 20, … up to the last. */
function shownTurns(turns: number): number[] {
  return [...new Set([1, 2, 3, 5, 10, 20, 30, 40, 50, turns])].filter((t) => t <= turns).sort((a, b) => a - b);
}

const signed = (x: number, digits: number) =>
  Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(digits)}` : '–';

function floorSections(r: BenchResults): string[] {
  const rows = evaluateTargets(r);
  const met = rows.filter((row) => row.met).length;
  const tf = r.idleWake.temporalFloor;
  const floorCases: FloorIngestCase[] = [
    r.signalIngest.floor.oneWorkflow,
    r.signalIngest.floor.manyByUpdate,
    r.signalIngest.floor.manyBySignal,
    r.notifications.floor,
  ];
  return [
    '## Threadline beside its floor',
    '',
    'Each Threadline figure beside the same path on bare Temporal (and, for a model call, plus the direct `streamText` ' +
      'call), all measured in this run; latencies p50 / p99 in ms, rates per second. Difference and ratio at p50.',
    '',
    '| path | floor | Threadline | difference | ratio |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...comparisons(r).map(
      (c) =>
        `| ${c.path} | ${c.floor} | ${c.threadline} | ${signed(c.difference, 1)} ${c.unit === 'ms' ? 'ms' : '/s'} | ` +
        `${Number.isFinite(c.ratio) ? c.ratio.toFixed(2) : '–'}× |`,
    ),
    '',
    '## Issue #12 targets',
    '',
    `**${met} of ${rows.length} met** in this run. Every bound is computed from this run's numbers (its floors where ` +
      'the target has one); bench/targets.ts holds the arithmetic.',
    '',
    '| # | target | measured | bound | |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map((row) => `| ${row.id} | ${row.target} | ${row.measured} | ${row.bound} | ${verdict(row.met)} |`),
    '',
    ...whyNotSection(rows, r),
    '### The bare-Temporal floor',
    '',
    'A workflow that records each input in its handler and runs the activities the input asks for in its main loop ' +
      '(bench/floor/workflows.ts), its activity stamping when its code runs, on a worker of its own in this process ' +
      "with the options Threadline's `createWorker` passed to `Worker.create` in this run (less task queue, workflow " +
      'code, activities, interceptors and sinks), on the same dev server. Latency rounds run between the idle-wake ' +
      'rounds of (a); an idle workflow is settled (no task pending) before it is woken.',
    '',
    '| series | → activity code running | → the call returned |',
    '| --- | ---: | ---: |',
    ...(Object.keys(floorLatencySeries) as FloorLatencyName[]).map(
      (name) =>
        `| ${floorLatencySeries[name]} | ${pcts(tf.series[name].toActivity)} | ${pcts(tf.series[name].toReturned)} |`,
    ),
    `| one activity returns → the next one's code running | ${pcts(tf.activityToActivity)} | – |`,
    '',
    "Where the floor's update goes (history events, as (a) splits Threadline's wakes), new workflow " +
      '(update-with-start):',
    '',
    ...segmentTable(tf.segments.newByUpdate),
    '',
    'Idle workflow (update):',
    '',
    ...segmentTable(tf.segments.idleByUpdate),
    '',
    'Ingest: inputs that are only recorded, round-robin over the workflows, at most 8 in flight per workflow (as ' +
      "Threadline's client); handled = the workflow task that ran the workflow code with the input completed (history).",
    '',
    '| case | inputs | in flight | accepted/s | handled/s | latency p50 / p90 / p99 | history events per input | ' +
      'executions | in history exactly once |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...floorCases.map(
      (x) =>
        `| ${x.label} | ${int(x.sent - x.failed)}${x.failed ? ` (${x.failed} failed)` : ''} | ${x.concurrency} | ` +
        `**${x.acceptedPerSecond.toFixed(1)}** | ${x.handledPerSecond.toFixed(1)} | ${pcts(x.acceptLatency)} | ` +
        `${x.eventsPerInput.toFixed(2)} | ${int(x.executions)} | ${yes(x.exactlyOnce)} |`,
    ),
    '',
    ...floorCases.flatMap((x) => x.problems.map((problem) => `- floor, ${x.label}: ${problem}`)),
    `Worker options the floor shares with Threadline's: ${
      Object.entries(r.floorWorkerSettings)
        .map(([key, value]) => `\`${key}=${value}\``)
        .join(', ') || 'none'
    }.`,
    '',
  ];
}

/** What each unmet target's gap is made of, in this run's figures (bench/why-not.ts). */
function whyNotSection(rows: TargetRow[], r: BenchResults): string[] {
  const reasons = whyNot(rows, r);
  if (reasons.length === 0) return [];
  return [
    '### Why the unmet targets are not met',
    '',
    "Each from this run's own measurements (bench/why-not.ts reads them); the sections below have the full tables.",
    '',
    ...reasons.map((reason) => `- **${reason.ids.join(', ')}.** ${reason.text}`),
    '',
  ];
}

function historySection(c: HistoryResult): string[] {
  const p50 = (values: number[]) => median(values);
  return [
    '## (c) History per one-step turn',
    '',
    `${c.threads} fresh threads × ${c.turnsPerThread} one-step turns (no tools), each user message ` +
      `${c.messageBytes} characters; counted once the thread is idle again. Bytes are the server's ` +
      "`historySizeBytes`; the largest activity input is the biggest payload a turn scheduled (the step's, so far). " +
      'Medians over the threads.',
    '',
    '| turn | history events added (range over threads) | history bytes added | largest activity input (bytes) |',
    '| ---: | ---: | ---: | ---: |',
    ...shownTurns(c.turnsPerThread).map(
      (turn) =>
        `| ${turn}${turn === 1 ? ' (starts the workflow)' : ''} | ${range(c.eventsPerTurn[turn - 1])} | ` +
        `${int(p50(c.bytesPerTurn[turn - 1]))} | ${int(p50(c.largestInputPerTurn[turn - 1]))} |`,
    ),
    '',
    `A later turn adds ≈ ${int(bytesGrowthPerTurn(c.bytesPerTurn))} history bytes more than the one before it ` +
      '(least-squares slope over turns 2 on; 0 is flat). Extrapolated the same way, the largest activity input of a ' +
      `2,000-message thread (1,000 turns) would be ≈ ${kib(largestInputAt(c.largestInputPerTurn, 1_000))}; Temporal ` +
      'refuses payloads over 2 MiB.',
    '',
    'Events a later turn adds, in order:',
    '',
    '```',
    c.laterTurnTypes.join('\n'),
    '```',
    '',
  ];
}

export function renderReport(r: BenchResults): string {
  const { machine: m, idleWake: a, injection: b, history: c } = r;
  const fresh = a.freshThread;
  const idle = a.idleThread;
  return [
    '# Threadline benchmarks',
    '',
    `Generated by \`${m.command}\` on ${m.date}${r.quick ? ' (**quick run: too few samples to quote**)' : ''}. ` +
      'Re-run it to refresh this file; every number below comes from that one run.',
    '',
    '| machine | |',
    '| --- | --- |',
    `| CPU | ${m.cpu} (${m.cores} cores) |`,
    `| memory | ${m.memoryGiB} GiB |`,
    `| OS | ${m.os} |`,
    `| Node | ${m.node} |`,
    `| Temporal | \`${m.temporalCli}\` (dev server, in memory, headless, loopback) |`,
    `| dev server dynamic config | ${dynamicConfig(m.temporalDynamicConfig)} |`,
    `| load average (1/5/15 min) | ${load(m.loadAverage.start)} at start, ${load(m.loadAverage.end)} at end |`,
    `| run time | ${Math.round(r.durationSeconds / 60)} min |`,
    '',
    ...floorSections(r),
    '## How to read this',
    '',
    '- Everything runs in one process on loopback: the dev server (a child process), a scripted OpenAI-compatible',
    '  model server answering at once (zero delay), the in-process bus, one worker and the client. The numbers are',
    '  therefore Threadline + Temporal overhead, not model latency.',
    '- Latencies are milliseconds, shown as **p50 / p90 / p99** (nearest rank). Every sample counts; warm-up samples',
    '  (first threads after start-up) are run but not counted. No outliers are removed.',
    '- Two floors, both measured in this run: the *bare-Temporal floor* (the same dev server and worker options, a',
    '  trivial workflow and activity: what any program on Temporal pays; bench/floor/) and the *`streamText` floor* (a',
    '  direct AI SDK call to the same model server: what any in-process caller pays). Threadline minus the floors is',
    "  Threadline's own cost.",
    '- Segment tables split a turn at its history events (server clock, same machine) and at events a subscriber',
    '  sees. Each row is the time since the previous row; percentiles are per row, so they do not add up exactly',
    '  to the end-to-end percentiles.',
    "- `sendMessage` resolves when the update completed: the input is accepted and in the thread's history.",
    '- The same results go to stdout as JSON (`npm run -s bench > bench.json`); `npm run bench -- --quick` is a',
    '  smoke run with too few samples to quote.',
    '- The machine may be shared: the load averages above say how busy it was. On 2 cores, the dev server, the',
    '  worker and everything else in this process compete for CPU, which shows most in p90/p99.',
    '',
    `## (a) Idle wake: \`sendMessage\` → first \`text-delta\``,
    '',
    `${a.samples} samples per series after ${a.warmup} warm-up rounds, interleaved per round: fresh thread, floor, ` +
      'second turn on that thread. Measured from the `sendMessage` call (or `streamText` call) to the model server ' +
      'receiving the request, to the first `text-delta` at a subscriber, and to `sendMessage` resolving.',
    '',
    '| series | → model request | → first text-delta | → sendMessage resolved |',
    '| --- | ---: | ---: | ---: |',
    wakeRow('Threadline, fresh thread (update-with-start)', fresh),
    wakeRow('Threadline, idle thread (update)', idle),
    `| floor: AI SDK \`streamText\` direct | ${pcts(a.floor.toModelRequest)} | ${pcts(a.floor.toFirstDelta)} | – |`,
    '',
    '| first text-delta | p50 | p99 | p50 − `streamText` | p50 ÷ `streamText` |',
    '| --- | ---: | ---: | ---: | ---: |',
    overStreamTextRow('fresh thread', fresh),
    overStreamTextRow('idle thread', idle),
    '',
    'Beside the bare-Temporal floor: see the first two tables of this file (issue #12, parts 2 and 3).',
    '',
    `Mastra's in-process, non-durable path (from the issue): first text-delta ${mastra.firstDeltaP50Ms} ms p50 ` +
      `(${mastra.firstDeltaP99Ms} ms p99).`,
    '',
    '### Where a wake goes (fresh thread)',
    '',
    ...segmentTable(fresh.segments),
    '',
    '### Where a wake goes (idle thread)',
    '',
    ...segmentTable(idle.segments),
    '',
    '## (b) Active injection: step end → next model request',
    '',
    `${b.samples} samples after ${b.warmup} warm-up. Each on a fresh thread whose first step streams 10 chunks 30 ms ` +
      'apart; at the first `text-delta` a second `sendMessage` is sent (it joins the active run, action `deliver`). ' +
      "Measured from the first step's `step-finish` at the subscriber to the model server receiving the next " +
      'request (which carries the injected message).',
    '',
    '| measure | p50 / p90 / p99 |',
    '| --- | ---: |',
    `| step end → next model request | ${pcts(b.stepEndToNextRequest)} |`,
    `| mid-run \`sendMessage\` → accepted (resolved) | ${pcts(b.sendToAccepted)} |`,
    '',
    `Mastra (from the issue): step end → next model call ${mastra.stepEndToNextCallP50Ms} ms p50.`,
    '',
    ...segmentTable(b.segments),
    '',
    ...historySection(c),
    ...ingestSection(r.signalIngest),
    ...interruptSection(r.interrupt),
    ...gatewayBusSection(r.gatewayBus),
    ...stateIngestSection(r.stateIngest),
    ...notificationsSection(r.notifications),
    ...notificationCasesSection(r.notifications),
    ...httpSection(r.http),
    ...memorySection(r.memory),
    ...gatewayMemorySection(r.gatewayMemory),
  ].join('\n');
}

const int = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
const sec = (msValue: number) => (msValue / 1000).toFixed(1);
const yes = (ok: boolean | null) => (ok === null ? 'not checked' : ok ? 'yes' : '**no**');

function ingestRows(d: SignalIngestResult): [string, IngestCase][] {
  return [
    [`one thread, ${d.oneThread.concurrency} in flight`, d.oneThread],
    [`one thread, ${d.oneThreadBelowCap.concurrency} in flight`, d.oneThreadBelowCap],
    [`${d.manyThreads.threads.toLocaleString('en-US')} threads, ${d.manyThreads.concurrency} in flight`, d.manyThreads],
    [
      `${d.manyThreadsStateDependent.threads.toLocaleString('en-US')} threads, ${d.manyThreadsStateDependent.concurrency} ` +
        'in flight, `ifActive: deliver` (the answer depends on state)',
      d.manyThreadsStateDependent,
    ],
  ];
}

/** `{ reason: count }` as "n × reason; …", largest first. */
function counts(c: Record<string, number>, none = 'none'): string {
  const entries = Object.entries(c);
  if (entries.length === 0) return none;
  return entries
    .sort((p, q) => q[1] - p[1])
    .map(([reason, n]) => `${n.toLocaleString('en-US')} × ${reason}`)
    .join('; ');
}

const sumWhere = (c: Record<string, number>, match: (key: string) => boolean) =>
  Object.entries(c).reduce((sum, [key, n]) => sum + (match(key) ? n : 0), 0);
const inFlightRejections = (x: IngestCase) => sumWhere(x.rpcAttempts, (key) => /in-flight updates/.test(key));
const closingRejections = (x: IngestCase) => sumWhere(x.rpcAttempts, (key) => /workflow is closing/.test(key));
const kib = (bytes: number) =>
  Number.isFinite(bytes) ? `${Math.round(bytes / 1024).toLocaleString('en-US')} KiB` : '–';
/** Inputs (updates accepted, signals recorded) per workflow task. */
const perTask = (x: IngestCase) =>
  (x.history.updatesAccepted + x.history.signalsRecorded) / Math.max(1, x.history.workflowTasks);
const cpuPer1000 = (x: IngestCase) => (x.cpuSeconds.benchProcess + x.cpuSeconds.devServer) / (x.signals / 1000);
const meanRate = (rates: number[]) => rates.reduce((sum, r) => sum + r, 0) / Math.max(1, rates.length);

function ingestSection(d: SignalIngestResult): string[] {
  const rows = ingestRows(d);
  const one = d.oneThread;
  const eight = d.oneThreadBelowCap;
  const many = d.manyThreads;
  const perThread = many.signals / many.threads;
  const h = (x: IngestCase) => x.history;
  const can = (x: IngestCase) => x.continueAsNew!;
  const canRow = (name: string, x: IngestCase) => {
    const c = can(x);
    return (
      `| ${name} | ${c.executions} | ${c.updatesPerExecution.join(', ')} | ${c.eventsPerExecution.join(', ')} | ` +
      `${c.handOverMs.map(int).join(', ') || '–'} | ${c.continuedWithBytes.map(kib).join(', ') || '–'} | ` +
      `${ms(c.spanningLatency.p50)} / ${ms(c.spanningLatency.max)} (${c.spanningLatency.n}) | ` +
      `${ms(c.otherLatency.p50)} / ${ms(c.otherLatency.p99)} (${c.otherLatency.n}) |`
    );
  };
  // The last hand-over of the first case: the largest snapshot, with this many stored messages.
  const handOvers = can(one).continuedWithBytes;
  const snapshotBytes = handOvers[handOvers.length - 1] ?? NaN;
  const storedAtHandOver = Math.min(
    d.maxStoredMessages,
    can(one)
      .updatesPerExecution.slice(0, handOvers.length)
      .reduce((sum, n) => sum + n, 0),
  );
  const continuedAsNew = can(one).executions > 1 || can(eight).executions > 1;
  const payloadWarnings = (x: IngestCase) => sumWhere(x.workerLog, (key) => /TMPRL1103|exceeded the warning/.test(key));
  const startPhase = many.rateByTenth.slice(0, 4);
  const steadyPhase = many.rateByTenth.slice(-4);
  const interpretation = [
    `- **Over ${many.threads.toLocaleString('en-US')} threads: ${int(many.signalsPerSecond)} signals/s**, ` +
      `${(many.signalsPerSecond / mastra.signalIngestPerSecond).toFixed(2)}× Mastra's ≈ ` +
      `${mastra.signalIngestPerSecond.toLocaleString('en-US')}/s. The case is CPU-bound: ` +
      `${cpuPer1000(many).toFixed(1)} CPU seconds per 1,000 signals (${(many.cpuSeconds.benchProcess / (many.signals / 1000)).toFixed(1)} ` +
      `in this process, ${(many.cpuSeconds.devServer / (many.signals / 1000)).toFixed(1)} in the dev server) on 2 cores. ` +
      'A persist-only signal is recorded by the server as it arrives (signal-with-start: no workflow task before the ' +
      "answer); the thread's next workflow task takes it, a `publishEvents` activity sends its `persisted` echo and " +
      "another workflow task records that activity's completion: " +
      `${(h(many).events / many.signals).toFixed(1)} history events and ` +
      `${(h(many).workflowTasks / many.signals).toFixed(1)} workflow tasks per signal ` +
      `(${perTask(many).toFixed(2)} inputs per task). The first signal to a thread also starts its workflow: ` +
      `≈ ${int(meanRate(startPhase))}/s in the first four tenths of the run (mostly starts) against ` +
      `≈ ${int(meanRate(steadyPhase))}/s in the last four, and p50 ${ms(many.firstToThreadLatency!.p50)} ms against ` +
      `${ms(many.laterLatency!.p50)} ms per send.`,
    `- **One thread: ${int(one.signalsPerSecond)} signals/s with ${one.concurrency} in flight, ` +
      `${int(eight.signalsPerSecond)}/s with ${eight.concurrency}.** The client passes at most 8 inputs per thread ` +
      'to Temporal at a time (Temporal admits 10 in-flight updates per workflow; signals keep the same bound so a ' +
      "flood cannot starve the thread's continue-as-new) and queues the rest in order, so the extra sends only wait " +
      `in the client: p50 ${ms(one.acceptLatency.p50)} ms against ` +
      `${ms(eight.acceptLatency.p50)} ms. ` +
      (inFlightRejections(one) + inFlightRejections(eight) === 0
        ? 'No update attempt hit the in-flight limit. '
        : `${int(inFlightRejections(one) + inFlightRejections(eight))} update attempts hit the in-flight limit. `) +
      'Inputs to a busy thread share workflow tasks ' +
      `(${perTask(one).toFixed(1)} per task, ${(h(one).events / one.signals).toFixed(1)} history events per ` +
      `signal), which is why one thread takes more per second than ${many.threads.toLocaleString('en-US')} do.`,
    ...(continuedAsNew
      ? [
          `- **Continue-as-new shows up in the tail.** ${can(one).executions} and ${can(eight).executions} executions for ` +
            `${one.signals.toLocaleString('en-US')} signals (a thread continues as new after ` +
            `${d.maxSignalsPerExecution.toLocaleString('en-US')} signals, ` +
            `${d.maxUpdatesPerExecution.toLocaleString('en-US')} updates or ` +
            `${d.continueAsNewAfterEvents.toLocaleString('en-US')} events; the few past that arrived while it wound ` +
            `down). The server's hand-over takes ${[...can(one).handOverMs, ...can(eight).handOverMs].map(int).join(', ')} ` +
            'ms (last input of one execution to the first of the next), but inputs arriving meanwhile are turned away ' +
            `with RESOURCE_EXHAUSTED "workflow is closing" (${int(closingRejections(one) + closingRejections(eight))} ` +
            "attempts), which Threadline's client resends from 50 ms (client/grpc-retry.ts; the SDK's own first wait for " +
            `RESOURCE_EXHAUSTED is ≈ 1.7 s): sends spanning a hand-over took up to ${ms(Math.max(can(one).spanningLatency.max, can(eight).spanningLatency.max))} ms, ` +
            `the maximum of both cases, against p99 ${ms(can(one).otherLatency.p99)} / ${ms(can(eight).otherLatency.p99)} ms ` +
            'for the rest.',
          `- **Snapshot size.** Each continue-as-new carries the thread (stored messages, remembered input ids) as the ` +
            `next execution's input: ${handOvers.map(kib).join(', ')} at the hand-overs of the first case, the last ` +
            `with ${storedAtHandOver.toLocaleString('en-US')} stored ${d.contentsBytes}-character notifications ` +
            `(≈ ${int(snapshotBytes / storedAtHandOver)} bytes per stored message). The worker logged ` +
            `${int(payloadWarnings(one) + payloadWarnings(eight) + payloadWarnings(many))} payload-size warnings ` +
            '(TMPRL1103: a payload over 512 KiB). Temporal rejects payloads over 2 MiB by default, so at the default ' +
            `${d.maxStoredMessages.toLocaleString('en-US')} stored messages, messages of about 1 KB would make the ` +
            'snapshot too large to continue as new.',
        ]
      : [
          `- **No continue-as-new in these cases.** ${one.signals.toLocaleString('en-US')} persist-only signals ` +
            'to one thread stay in one execution: a thread continues as new after ' +
            `${d.maxSignalsPerExecution.toLocaleString('en-US')} signals, ` +
            `${d.maxUpdatesPerExecution.toLocaleString('en-US')} updates or ` +
            `${d.continueAsNewAfterEvents.toLocaleString('en-US')} history events, and these executions ended the ` +
            `cases with ${[...can(one).eventsPerExecution, ...can(eight).eventsPerExecution].map(int).join(' and ')} ` +
            'events (signals add fewer events than updates: no accepted and completed pair each). The worker logged ' +
            `${int(payloadWarnings(one) + payloadWarnings(eight) + payloadWarnings(many))} payload-size warnings ` +
            "(TMPRL1103: a payload over 512 KiB): the check's `getMessages` answer carrying a thread's " +
            `${d.maxStoredMessages.toLocaleString('en-US')} stored messages back in one query result (a warning ` +
            'logged late counts in the next case).',
        ]),
    `- **Stored exactly once:** ` +
      rows
        .map(([name, x]) => `${name}: ${x.verification.ok ? 'yes' : `**no** (${x.verification.problems.join('; ')})`}`)
        .join('; ') +
      `. A thread keeps its newest ${d.maxStoredMessages.toLocaleString('en-US')} messages, so ` +
      `${one.signals.toLocaleString('en-US')} signals to one thread leave ` +
      `${Math.min(one.signals, d.maxStoredMessages).toLocaleString('en-US')}: \`messageCount\` alone cannot show that ` +
      "every signal was stored, which is why the check also reads every execution's history.",
  ];
  return [
    '## (d) Signal ingest: `sendSignal` with `persist` (stored, no run)',
    '',
    `\`sendSignal({ type: 'notification', contents, attributes }, { ...thread, ifIdle: { behavior: 'persist' }, ` +
      `ifActive: { behavior: 'persist' } })\`, contents ${d.contentsBytes} characters, from one client (a ` +
      'connection of its own) keeping a fixed number of sends in flight: ' +
      `${one.planned.toLocaleString('en-US')} signals to one thread (${one.concurrency} in flight, and again on a ` +
      `fresh thread with ${eight.concurrency}), and ${many.planned.toLocaleString('en-US')} round-robin over ` +
      `${many.threads.toLocaleString('en-US')} fresh threads (${perThread} each, ${many.concurrency} in flight; the ` +
      'first signal to a thread starts its workflow). The client itself passes at most 8 inputs per thread to ' +
      'Temporal at a time and queues the rest. A signal counts once `sendSignal` resolved: a persist-only signal ' +
      'once the server recorded it (signal-with-start, in history), one whose answer depends on state (last case) ' +
      'once the thread accepted the update; latency is from the call to that. Threads use the default config: ' +
      `continue-as-new after ${d.maxSignalsPerExecution.toLocaleString('en-US')} signals, ` +
      `${d.maxUpdatesPerExecution.toLocaleString('en-US')} updates or ` +
      `${d.continueAsNewAfterEvents.toLocaleString('en-US')} events, newest ` +
      `${d.maxStoredMessages.toLocaleString('en-US')} messages kept. A case stops starting sends after ` +
      `${d.maxSecondsPerCase} s (the sends in flight still finish and count).`,
    '',
    '| case | signals | wall s | accepted / s | handled / s | accept latency p50 / p90 / p99 | max | stored exactly once |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(
      ([name, x]) =>
        `| ${name} | ${x.signals.toLocaleString('en-US')}` +
        `${x.stoppedAtBudget ? ` of ${x.planned.toLocaleString('en-US')} (stopped at the time budget)` : ''} | ` +
        `${sec(x.durationMs)} | **${int(x.signalsPerSecond)}** | ${int(x.handledPerSecond)} | ` +
        `${pcts(x.acceptLatency)} | ${ms(x.acceptLatency.max)} | ${yes(x.verification.ok)} |`,
    ),
    `| ↳ first signal to each thread (the first input creates the workflow) | ` +
      `${many.firstToThreadLatency!.n.toLocaleString('en-US')} | | | | ${pcts(many.firstToThreadLatency!)} | ` +
      `${ms(many.firstToThreadLatency!.max)} | |`,
    `| ↳ later signals (to a running workflow) | ${many.laterLatency!.n.toLocaleString('en-US')} | | | | ` +
      `${pcts(many.laterLatency!)} | ${ms(many.laterLatency!.max)} | |`,
    '',
    'Handled: the first call to the moment the last input had been through a workflow task (history, server clock). ' +
      'The bare-Temporal floor of each shape is in the floor tables at the top.',
    '',
    `For scale: Mastra persisting to a libSQL file (queues in memory) accepts about ` +
      `${mastra.signalIngestPerSecond.toLocaleString('en-US')} signals/s over 1,000 threads on this kind of ` +
      'machine.',
    '',
    'Accepted signals per second in each tenth of the run (wall time), in order:',
    '',
    '| case | rate by tenth |',
    '| --- | --- |',
    ...rows.map(([name, x]) => `| ${name} | ${x.rateByTenth.map(int).join(' · ')} |`),
    '',
    '### Checks',
    '',
    'After each case: every send resolved with action `persist` (not a duplicate); each resolved signal is in its ' +
      "thread's history (an accepted update or a signal, over every execution of the chain) exactly once; " +
      '`getThread(...).messageCount` and the stored message ids are the newest accepted inputs (a thread keeps ' +
      `${d.maxStoredMessages.toLocaleString('en-US')}) in history order; a subscriber per thread saw each ` +
      "accepted signal's `persisted` echo exactly once, on its thread; no model request was made.",
    '',
    '| case | every send resolved `persist` | accepted once in history | `messageCount` sum (expected) | ' +
      'stored ids = newest accepted | `persisted` echo exactly once | no model request |',
    '| --- | --- | --- | ---: | --- | --- | --- |',
    ...rows.map(
      ([name, x]) =>
        `| ${name} | ${yes(x.verification.allAccepted)}` +
        `${x.verification.failures ? ` (${x.verification.failures} failed, ${x.verification.failedButAccepted} of them in history)` : ''} | ` +
        `${yes(x.verification.historyExactlyOnce)} | ` +
        `${int(x.verification.messageCountSum)} (${int(x.verification.expectedMessageCount)}) | ` +
        `${yes(x.verification.storedIdsMatch)} | ${yes(x.verification.echoesExactlyOnce)} | ` +
        `${yes(x.verification.noModelRequests)} |`,
    ),
    '',
    ...rows.flatMap(([name, x]) => x.verification.problems.map((problem) => `- ${name}: ${problem}`)),
    ...(rows.some(([, x]) => x.verification.problems.length > 0) ? [''] : []),
    '### Where ingest time goes',
    '',
    "From the threads' histories (server clock) and CPU time over the case (this process runs the client, worker, " +
      'bus and model server; the dev server is a child process). Update attempts are counted by a gRPC interceptor ' +
      "inside the Temporal client's retry interceptor. Worker log lines reach the bench with a delay, so a few may " +
      'be counted in the next case.',
    '',
    '| case | executions | events per signal | workflow tasks | updates per task | `publishEvents` activities | ' +
      'task schedule → start p50 / p99 | task start → complete p50 / p90 / p99 | CPU s per 1,000 signals ' +
      '(bench process + dev server) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      ([name, x]) =>
        `| ${name} | ${h(x).executions.toLocaleString('en-US')} | ${(h(x).events / x.signals).toFixed(2)} | ` +
        `${h(x).workflowTasks.toLocaleString('en-US')} | ${perTask(x).toFixed(2)} | ` +
        `${h(x).activities.toLocaleString('en-US')} | ` +
        `${ms(h(x).taskScheduleToStart.p50)} / ${ms(h(x).taskScheduleToStart.p99)} | ${pcts(h(x).taskStartToComplete)} | ` +
        `${(x.cpuSeconds.benchProcess / (x.signals / 1000)).toFixed(1)} + ` +
        `${(x.cpuSeconds.devServer / (x.signals / 1000)).toFixed(1)} |`,
    ),
    '',
    ...rows.map(
      ([name, x]) =>
        `- ${name}: input RPC attempts (update or signal, gRPC, retries counted): ${counts(x.rpcAttempts)}. Errors the Temporal ` +
        `client threw to Threadline's own retry loop: ${counts(x.clientErrors)}. Worker warnings and errors: ` +
        `${counts(x.workerLog)}.`,
    ),
    ...rows.flatMap(([name, x]) =>
      Object.keys(h(x).unexpected).length > 0
        ? [`- Unexpected history events, ${name}: ${JSON.stringify(h(x).unexpected)}.`]
        : [],
    ),
    '',
    '### Continue-as-new on the one thread',
    '',
    '| case | executions | updates per execution | events per execution | hand-over ms (last update of one ' +
      'execution → first of the next, server) | snapshot carried over | sends spanning a hand-over p50 / max (n) | ' +
      'other sends p50 / p99 (n) |',
    '| --- | ---: | --- | --- | --- | --- | ---: | ---: |',
    canRow(rows[0][0], one),
    canRow(rows[1][0], eight),
    '',
    '### What this says',
    '',
    ...interpretation,
    '',
  ];
}

function interruptRow(s: InterruptSeries): string {
  const actions = Object.entries(s.actions)
    .map(([action, n]) => `${n} × ${action}`)
    .join(', ');
  return (
    `| ${s.label} | ${pcts(s.toClosed)} | ${s.notClosed} of ${s.samples} | ` +
    `${s.how === 'abort' ? '–' : pcts(s.toNewFirstDelta)} | ${pcts(s.toSendResolved)} | ${actions} |`
  );
}

function interruptSection(e: InterruptResult): string[] {
  const variants = Object.keys(interruptVariants) as InterruptVariant[];
  const { streaming, hanging, hangingLater } = e.series;
  const hb = e.heartbeat;
  const afterClose = (x: InterruptSeries) => ms(x.toNewFirstDelta.p50 - x.toClosed.p50);
  return [
    "## (e) Interrupt: `sendMessage(..., { ifActive: { behavior: 'interrupt' } })` during a step",
    '',
    `${e.samples} samples per variant after ${e.warmup} warm-up, interleaved, each on a fresh thread. The first ` +
      "step's model reply either keeps streaming (a chunk every 50 ms) or hangs after its first chunk; " +
      "`sendMessage('new question …', { ...thread, ifActive: { behavior: 'interrupt' } })` is sent at that step's " +
      'first `text-delta` at the subscriber, or (third row) at a moment spread over 1.1–4.4 s into the hang. ' +
      "Measured from the send call to (a) the model server seeing the interrupted request's connection close, " +
      "(b) the new step's first `text-delta` at the subscriber, and the send resolving.",
    '',
    '| interrupted step | (a) → interrupted request closed | never closed early (∞ above) | (b) → new step first ' +
      'text-delta | → send resolved | answered |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
    ...variants.map((v) => interruptRow(e.series[v])),
    '',
    ...variants
      .filter((v) => e.series[v].how === 'interrupt' && e.series[v].notClosed < e.series[v].samples)
      .flatMap((v) => [
        `### Where an interrupt goes (${e.series[v].label})`,
        '',
        ...segmentTable(e.series[v].segments),
        '',
      ]),
    '### What this says',
    '',
    '- The workflow decides the cancellation in the workflow task that takes the send (first segment, p50 ' +
      `${ms(streaming.segments[interruptSegments[0]].p50)} / ${ms(hanging.segments[interruptSegments[0]].p50)} / ` +
      `${ms(hangingLater.segments[interruptSegments[0]].p50)} ms in the three interrupted cases). As that task ` +
      'completes, a sink has the worker send a `step-cancel` notice on the bus; the worker running the step hears it ' +
      'and aborts the model call at once, so the request closes about when the task completes (p50 ' +
      `${ms(streaming.toClosed.p50)} / ${ms(hanging.toClosed.p50)} / ${ms(hangingLater.toClosed.p50)} ms), ` +
      'streaming or hanging, early or late in the step: no heartbeat is waited for. The step then asks the server ' +
      'whether the cancellation is recorded (a heartbeat of its own, not throttled) and reports itself cancelled ' +
      "(second segment); Temporal's cancellation stays the source of truth (activities/cancel-notices.ts).",
    "- Without the notice (a bus that cannot deliver it), the cancellation reaches the step only in a heartbeat's " +
      `response: the worker sends at most one heartbeat per ${int(hb.maxThrottleMs)} ms ` +
      '(`maxHeartbeatThrottleInterval`), and a step heartbeats on its stream parts and on a timer every ' +
      `${int(hb.stepTimerMs)} ms (heartbeat timeout ${int(hb.stepHeartbeatTimeoutMs)} ms ÷ 3, activities/step.ts): ` +
      'up to a second for a streaming step, up to the timer period in a hang.',
    `- After the close, the new step's first text-delta follows in p50 ${afterClose(streaming)} / ` +
      `${afterClose(hanging)} / ${afterClose(hangingLater)} ms: the cancelled activity reports, a workflow task ` +
      'schedules the next step, and the step runs as in an idle wake. The send itself resolves in ' +
      `p50 ${ms(streaming.toSendResolved.p50)} ms.`,
    '',
  ];
}

const share = (x: number) => (Number.isFinite(x) ? `${Math.round(x * 100)} %` : '–');

function gatewayBusSection(r: GatewayBusResult): string[] {
  const { firstDelta: f, fanOut, resume } = r;
  return [
    '## (f) Gateway and event bus: in-process vs Redis Streams',
    '',
    'A `redis-server` of the bench’s own on loopback. Series (1) and (3) run a gateway and a worker on each bus in ' +
      'this process (the Redis pair’s worker and gateway each with a connection of its own), so the two series ' +
      'differ only in the bus; (2) uses a gateway process of its own on Redis. Clients speak HTTP and SSE.',
    '',
    `### First token through the gateway`,
    '',
    `${f.samples} samples per bus after ${f.warmup} warm-up rounds, interleaved: an SSE stream on a fresh thread, ` +
      'then `POST send-message`; measured from the POST to the first `text-delta` on the stream, and to the POST’s ' +
      'response.',
    '',
    '| bus | → first text-delta p50 / p90 / p99 | → send-message response p50 / p90 / p99 |',
    '| --- | ---: | ---: |',
    `| in-process | ${pcts(f.memory.toFirstDelta)} | ${pcts(f.memory.toResponse)} |`,
    `| Redis Streams | ${pcts(f.redis.toFirstDelta)} | ${pcts(f.redis.toResponse)} |`,
    '',
    `Redis costs ${ms(f.overheadP50Ms)} ms at p50: ${f.ratioP50.toFixed(2)}× the in-process bus at p50, ` +
      `${f.ratioP99.toFixed(2)}× at p99.`,
    '',
    '### Fan-out from one gateway process',
    '',
    `One run streams ${fanOut.deltas.toLocaleString('en-US')} deltas with no delay between them; every subscriber ` +
      'holds its own SSE stream to the same gateway process (and the gateway one Redis read per stream). Rate: events ' +
      'of the run from its first `text-delta` (at any subscriber) to its `finish` (at the last one), per second; ' +
      'lag: from the step activity handing an event to its publisher (so it includes the wait behind earlier ' +
      'batches when the model streams faster than the bus takes them) to a subscriber receiving it. With one ' +
      'subscriber the rate is what the worker produces; the drop at 100 is the fan-out’s cost.',
    '',
    '| subscribers | runs | events per run | events/s per subscriber | SSE events/s written | lag p50 / p90 / p99 | ' +
      'CPU: gateway process / bench process / Redis |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...fanOut.cases.map(
      (c) =>
        `| ${c.subscribers} | ${c.runs} | ${int(c.eventsPerRun)} | ${int(c.eventsPerSecondPerSubscriber)} | ` +
        `**${int(c.deliveriesPerSecond)}** | ${pcts(c.lagMs)} | ${share(c.cpuShare.gateway)} / ` +
        `${share(c.cpuShare.benchProcess)} / ${share(c.cpuShare.redis)} |`,
    ),
    '',
    'CPU is CPU time over wall time from the send to the last `finish` (100 % = one core busy throughout). The ' +
      'bench process also runs the worker, the model server and every subscriber’s SSE parsing. Whichever is near ' +
      '100 % limits the rate; on a machine with other work on it, none may be, and the load average says why.',
    '',
    '### Resume after a dropped connection',
    '',
    `${resume.samples} samples per bus after ${resume.warmup} warm-up rounds. A subscriber drops its SSE connection ` +
      'after the third `text-delta` of a streaming run and, once the run has published further, reconnects to the ' +
      'same gateway with `Last-Event-ID`; measured from the reconnect to the first resumed event (checked to be the ' +
      'event right after that id).',
    '',
    '| bus | reconnect → first resumed event p50 / p90 / p99 |',
    '| --- | ---: |',
    `| in-process | ${pcts(resume.memory)} |`,
    `| Redis Streams | ${pcts(resume.redis)} |`,
    '',
  ];
}

function stateIngestSection(g: StateIngestResult): string[] {
  const { history: h, checks: c, acceptLatency: lat } = g;
  const period = Math.max(1, Math.round(1 / (1 - g.duplicateShare)));
  const latencyRow = (name: string, s: Summary) => `| ${name} | ${int(s.n)} | ${pcts(s)} | ${ms(s.max)} |`;
  const byType = Object.entries(h.eventsByType)
    .sort((p, q) => q[1] - p[1])
    .map(([type, n]) => `${type} ${int(n)}`)
    .join(', ');
  const equals = (actual: number) => `${actual === g.accepted ? 'yes' : '**no**'} (${int(actual)})`;
  return [
    '## (g) State-signal ingest to one active thread',
    '',
    "`sendStateSignal({ id: 'browser', mode: 'snapshot', cacheKey, contents, value }, { ...thread, ifIdle: { " +
      `behavior: 'persist' } })\` ${g.ratePerSecond} times a second for ${g.seconds} s on a fixed schedule (a send ` +
      `does not wait for the one before), contents ${g.contentsBytes} characters. ` +
      `${Math.round(g.duplicateShare * 100)} % of the sends repeat the lane's state before: the state changes on ` +
      `every ${period}th send, as a watcher that reports on a timer would. The thread is active throughout: its one ` +
      'step streams a slow reply (a chunk every 250 ms) that does not end by itself, so a new state joins the run ' +
      '(`deliver`) and a repeat is `skipped`. Latency is from the call to its result. History is read back after ' +
      'the last result, once the thread has no workflow task in flight; a skipped state is refused by the update ' +
      'validator, so it should leave nothing there.',
    '',
    '| sent (achieved rate) | distinct states | accepted (`deliver`) | skipped | failed |',
    '| ---: | ---: | ---: | ---: | ---: |',
    `| ${int(g.sent)} (${g.sendRate.toFixed(1)}/s) | ${int(g.distinctStates)} | **${int(g.accepted)}** | ` +
      `${int(g.skipped)} | ${int(g.failed)} |`,
    '',
    '| result | n | accept latency p50 / p90 / p99 | max |',
    '| --- | ---: | ---: | ---: |',
    latencyRow('accepted (new state)', lat.accepted),
    latencyRow('skipped (repeat)', lat.skipped),
    '',
    `Sends started ${ms(g.scheduleLagMs.p50)} ms (p50) / ${ms(g.scheduleLagMs.p99)} ms (p99) behind their schedule.`,
    '',
    '| state updates in workflow history | skipped sends in history | history events added | per accepted state |',
    '| ---: | ---: | ---: | ---: |',
    `| ${int(h.stateUpdates)} | ${int(h.skippedInHistory)} | ${int(h.eventsAdded)} | ` +
      `**${h.eventsPerAcceptedState.toFixed(2)}** |`,
    '',
    `History events added during the sends, by type: ${byType || 'none'}. Executions of the thread's chain at the ` +
      `end: ${h.executions}.`,
    '',
    '### Checks',
    '',
    'Each accepted send is a `WorkflowExecutionUpdateAccepted` in history exactly once (its input decoded) and ' +
      "nothing else state-like is; no skipped send's id is anywhere in history; the first run was still active " +
      "after the last result; the lane's version, the `state-updated` events a subscriber saw and, once the run was " +
      'aborted and its pending states had run, the stored state messages each equal the accepted count.',
    '',
    '| accepted once in history | no skipped in history | active throughout | lane version = accepted | ' +
      '`state-updated` events = accepted | stored states = accepted |',
    '| --- | --- | --- | --- | --- | --- |',
    `| ${yes(h.acceptedExactlyOnce)} | ${yes(h.skippedInHistory === 0)} | ${yes(c.activeThroughout)} | ` +
      `${equals(c.laneVersion)} | ${equals(c.stateUpdatedEvents)} | ${equals(c.storedStates)} |`,
    '',
    ...g.problems.map((problem) => `- ${problem}`),
    ...(g.problems.length > 0 ? [''] : []),
  ];
}

function notificationsSection(h: NotificationsResult): string[] {
  const { records: rec, wakes: w, history: hist } = h;
  const perThread = Math.ceil(h.notifications / h.threads);
  const keysPerThread = Math.ceil(perThread / h.dedupeRun);
  const pct = (x: number) => `${Math.round(x * 100)} %`;
  const mix = Object.entries(h.priorityMix)
    .map(([p, share]) => `${pct(share)} ${p}`)
    .join(', ');
  const latencyRow = (name: string, s: Summary) => `| ${name} | ${int(s.n)} | ${pcts(s)} | ${ms(s.max)} |`;
  const actionColumns = [...new Set(Object.values(h.actionsByPriority).flatMap((row) => Object.keys(row)))].sort();
  const byType = Object.entries(hist.eventsByType)
    .sort((p, q) => q[1] - p[1])
    .map(([type, n]) => `${type} ${int(n)} (${(n / Math.max(1, h.accepted)).toFixed(2)})`)
    .join(', ');
  return [
    '## (h) Notification ingest: dedupe, wakes and history',
    '',
    `${int(h.notifications)} notifications over ${int(h.threads)} fresh threads (${int(perThread)} each), one per ` +
      `\`sendNotificationSignal\` call as a webhook receiver makes them, ${h.concurrency} calls in flight over all ` +
      'threads (round-robin: notification i of every thread before notification i + 1 of any; the client keeps at ' +
      `most 8 in flight per thread). Notification i of a thread carries \`dedupeKey: k\${Math.floor(i / ${h.dedupeRun})}\`: ` +
      `each key is used by ${h.dedupeRun} consecutive notifications of its thread (${keysPerThread} keys per thread, ` +
      `${int(h.distinctKeys)} in all), each key with one source and kind (in turn ${h.streams.map((x) => `\`${x}\``).join(', ')}), ` +
      `since records coalesce only within a source and kind. Priorities: ${mix} (exact counts, shuffled ` +
      `with a fixed seed; a coalesced send replaces its record's priority). The threads' digest window is ` +
      `${int(h.digestWindowMs)} ms (thread setting \`digestWindowMs\`: the bench agent has no \`notifications\` of its ` +
      'own), the built-in delivery policy decides, and the scripted model server answers every wake at once. ' +
      'Latency is from the call to its answer; the rest is read back once every thread has settled (idle, nothing ' +
      'queued, no pending record due later, no workflow task or activity in flight).',
    '',
    '| sent | accepted | failed | wall time | **accepted/s** | settled after the last answer |',
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${int(h.sent)} | ${int(h.accepted)} | ${int(h.failed)} | ${sec(h.durationMs)} s | ` +
      `**${h.acceptedPerSecond.toFixed(1)}** | ${sec(h.settleMs)} s |`,
    '',
    '| call → answer | n | p50 / p90 / p99 | max |',
    '| --- | ---: | ---: | ---: |',
    latencyRow('every send', h.acceptLatency),
    latencyRow('first send to a thread (creates it)', h.firstToThreadLatency),
    latencyRow('later sends', h.laterLatency),
    '',
    '### Records and wakes',
    '',
    '| | count | per notification |',
    '| --- | ---: | ---: |',
    `| notifications accepted | ${int(h.accepted)} | 1 |`,
    `| inbox records created | **${int(rec.created)}** | ${(rec.created / Math.max(1, h.accepted)).toFixed(3)} |`,
    `| sends coalesced into a pending record | ${int(rec.coalescedSends)} | ` +
      `${(rec.coalescedSends / Math.max(1, h.accepted)).toFixed(3)} |`,
    `| fewest records possible (one per key) | ${int(h.distinctKeys)} | ` +
      `${(h.distinctKeys / Math.max(1, h.notifications)).toFixed(3)} |`,
    `| model wakes (runs started) | **${int(w.runs)}** | ${(w.runs / Math.max(1, h.accepted)).toFixed(3)} |`,
    `| one wake per notification | ${int(h.accepted)} | 1 |`,
    `| model requests (steps) | ${int(w.modelRequests)} | ${(w.modelRequests / Math.max(1, h.accepted)).toFixed(3)} |`,
    `| full \`<notification>\` deliveries stored | ${int(w.fullDeliveries)} | ` +
      `${(w.fullDeliveries / Math.max(1, h.accepted)).toFixed(3)} |`,
    `| \`<notification-summary>\` digests stored (without a run: ${int(w.digestsWithoutRun)}) | ${int(w.digests)} | ` +
      `${(w.digests / Math.max(1, h.accepted)).toFixed(3)} |`,
    '',
    `${w.notificationsPerRun.toFixed(1)} notifications per wake. Records per key (thread × key): ` +
      `${rec.perKey.min}–${rec.perKey.max}, p50 ${rec.perKey.p50}: a key's record stops coalescing once it is ` +
      'delivered in full (only pending records coalesce), so the next send with that key opens a new one. ' +
      `Records by status at the end: ${counts(rec.byStatus)}; ${int(w.recordsSummarized)} were summarized at least once.`,
    '',
    'What the threads answered, per priority sent:',
    '',
    `| priority | ${actionColumns.join(' | ')} |`,
    `| --- | ${actionColumns.map(() => '---:').join(' | ')} |`,
    ...Object.keys(h.priorityMix).map(
      (p) => `| ${p} | ${actionColumns.map((a) => int(h.actionsByPriority[p]?.[a] ?? 0)).join(' | ')} |`,
    ),
    '',
    '### History',
    '',
    '| executions (max per thread) | history events | **per notification** | per thread p50 / max |',
    '| ---: | ---: | ---: | ---: |',
    `| ${int(hist.executions)} (${hist.maxExecutionsPerThread}) | ${int(hist.events)} | ` +
      `**${hist.eventsPerNotification.toFixed(2)}** | ${int(hist.eventsPerThread.p50)} / ${int(hist.eventsPerThread.max)} |`,
    '',
    `Every event of every execution of every thread (sends, digests, the runs they woke, continue-as-new), by type ` +
      `(per notification): ${byType}.`,
    '',
    '### Checks',
    '',
    'The `coalescedCount` of every record (read back with `listNotifications`, every page) adds up to the ' +
      'notifications accepted; each record counts exactly the sends answered with its id, all with its key; the ' +
      "records listed, the threads' `inbox.total` and the sends answered as new agree; every thread settled.",
    '',
    '| nothing lost (Σ coalescedCount = accepted) | counts = answers | records agree | settled |',
    '| --- | --- | --- | --- |',
    `| ${yes(h.checks.nothingLost)} (${int(rec.coalescedCountSum)}) | ${yes(h.checks.countsMatchAnswers)} | ` +
      `${yes(h.checks.recordsAgree)} (${int(rec.listed)} / ${int(rec.created)} / ${int(rec.newAnswers)}) | ` +
      `${yes(h.checks.settled)} |`,
    '',
    `Client errors retried or thrown: ${counts(h.clientErrors)}. Worker warnings and errors: ${counts(h.workerLog)}.`,
    '',
    ...h.problems.map((problem) => `- ${problem}`),
    ...(h.problems.length > 0 ? [''] : []),
  ];
}

function notificationCasesSection(n: BenchResults['notifications']): string[] {
  const row = (name: string, x: NotificationsResult) =>
    `| ${name} | ${int(x.accepted)} over ${int(x.threads)} | **${x.acceptedPerSecond.toFixed(1)}** | ` +
    `${int(x.wakes.runs)} | ${int(x.wakes.modelRequests)} | ` +
    `**${int((x.wakes.modelRequests / Math.max(1, x.accepted)) * 10_000)}** | ` +
    `${x.history.eventsPerNotification.toFixed(2)} | ${int(x.history.eventsByType.WorkflowTaskTimedOut ?? 0)} | ${yes(x.ok)} |`;
  return [
    '### Full speed, paced, and the floor',
    '',
    `The case above at full speed; the same workload paced at ${n.paced.ratePerSecond}/s (send n starts at n / rate ` +
      `seconds, ${int(n.paced.notifications)} notifications over ${int(n.paced.threads)} threads; the rest as above); ` +
      `and the floor: update-with-start accept-only into ${int(n.floor.workflows)} workflows, ` +
      `${n.floor.concurrency} in flight, ${n.floor.acceptedPerSecond.toFixed(1)} accepted/s, ` +
      `${n.floor.eventsPerInput.toFixed(2)} history events per input.`,
    '',
    '| case | accepted | accepted/s | runs | model requests | per 10,000 | history events per notification | ' +
      '`WorkflowTaskTimedOut` | checks |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    row('full speed', n),
    row(`paced at ${n.paced.ratePerSecond}/s`, n.paced),
    '',
    ...n.paced.problems.map((problem) => `- paced: ${problem}`),
    ...(n.paced.problems.length > 0 ? [''] : []),
  ];
}

function httpSection(h: HttpResult): string[] {
  const row = (name: string, side: HttpResult['newThread']) =>
    `| ${name} | ${pcts(side.inProcess)} | ${pcts(side.gateway)} | ${signed(side.gateway.p50 - side.inProcess.p50, 1)} | ` +
    `${pcts(side.gatewayLocalClient)} | ${signed(side.gatewayLocalClient.p50 - side.inProcess.p50, 1)} |`;
  const ingestRow = (name: string, x: HttpResult['ingest']['inProcess']) => {
    const { benchProcess, devServer, clientProcess } = x.cpuMsPerSignal;
    return (
      `| ${name} | ${int(x.signals - x.failed)}${x.failed ? ` (${x.failed} failed)` : ''} | ${sec(x.durationMs)} | ` +
      `**${x.acceptedPerSecond.toFixed(1)}** | ${pcts(x.acceptLatency)} | ${benchProcess.toFixed(2)} | ` +
      `${devServer.toFixed(2)} | ${clientProcess.toFixed(2)} | ${(benchProcess + devServer + clientProcess).toFixed(2)} |`
    );
  };
  return [
    '## (i) Through the HTTP gateway, as users see it',
    '',
    `${h.samples} rounds after ${h.warmup} warm-up, interleaved: a new thread and then its next turn once idle, ` +
      "through a gateway served in this process on the bench's bus and worker (`POST send-message`, the first " +
      '`text-delta` on an SSE stream opened before it, timed at the client) and through the in-process client ' +
      "(`sendMessage`, `subscribeToThread`). The gateway's client runs in a process of its own " +
      "(bench/http-client-process.ts, Node's `http`), as a user's does; the targets (10a, 10b) use it. The last " +
      "columns time the gateway with a client inside the bench's process (undici `fetch`): it shares the event loop " +
      "with the worker's step, and the scripted model answers a whole reply in one burst, so it reads its socket " +
      'only once that burst is done.',
    '',
    '| send → first text-delta | in-process client | gateway + SSE, client outside | gateway − in-process (p50) | ' +
      'gateway + SSE, client inside | inside − in-process (p50) |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    row('new thread', h.newThread),
    row('idle thread', h.idleThread),
    '',
    "Where the two paths part, p50 ms: the server recording the input (history, the server's clock), the first " +
      "`text-delta` published (stamped by a subscriber in the bench's process, which is the worker's and the " +
      "gateway's; the gateway's own subscription sees it as soon), and the first `text-delta` at the client (the " +
      'in-process client is that subscriber, so 0). Each row is the time since the row before.',
    '',
    '| segment | new thread: in-process | new thread: gateway | idle thread: in-process | idle thread: gateway | ' +
      'idle: gateway − in-process |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...gatewaySegments.map((name) => {
      const p50 = (x: HttpResult['segments']['newThread']['inProcess']) => x[name].p50;
      const { newThread: n, idleThread: i } = h.segments;
      return (
        `| ${name} | ${ms(p50(n.inProcess))} | ${ms(p50(n.gateway))} | ${ms(p50(i.inProcess))} | ` +
        `${ms(p50(i.gateway))} | ${signed(p50(i.gateway) - p50(i.inProcess), 1)} |`
      );
    }),
    '',
    `Persist-only signals round-robin over ${int(h.ingest.threads)} fresh threads, ${h.ingest.concurrency} in flight ` +
      '(`POST /api/agents/bench/signals` against `sendSignal`), each path in two halves run A B C C B A. The client ' +
      "outside (Node's `http`, kept-alive connections) is the target's (10c); the one inside (undici `fetch`) spends " +
      "about 1 ms of this process's CPU per request on its own work, which the gateway and the worker then lack.",
    '',
    "CPU per accepted signal, ms, of each process from a half's start until its signals were handled (the bench's " +
      "process and the dev server quiet again): the bench's process runs the worker, the client and the gateway (and " +
      'the inside client); the client process is the outside one, idle in the other cases. All three share 2 cores.',
    '',
    '| path | accepted | wall s | accepted/s | latency p50 / p90 / p99 | CPU: bench process | dev server | ' +
      'client process | all |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ingestRow('in-process client', h.ingest.inProcess),
    ingestRow('gateway, client outside', h.ingest.gateway),
    ingestRow('gateway, client inside', h.ingest.gatewayLocalClient),
    '',
  ];
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

function memorySection(m: MemoryResult): string[] {
  const rows = m.configs.flatMap((c) =>
    c.snapshots.map(
      (x) =>
        `| ${c.name} | ${int(x.threads)} | ${int(x.cached)} | ${mib(x.rss)} | ${mib(x.rssAnon)} | ` +
        `${mib(x.workflowHeapUsedBeforeGc)} → ${mib(x.workflowHeapUsed)} | ${mib(x.workflowHeapTotal)} | ` +
        `${mib(x.heapUsed)} | ${mib(x.heapTotal)} | ${mib(x.external)} | ${mib(x.v8Malloced)} | ` +
        `${x.loadAverage.toFixed(1)} |`,
    ),
  );
  const steps = m.configs.map(
    (c) =>
      `| ${c.name} | ${int(c.rssPerCachedThread)} | ` +
      c.steps.map((s) => `${int(s.rss)} (heaps ${int(s.workflowHeapUsed)}, ${int(s.heapUsed)})`).join(' | ') +
      ` | ${c.failed ? int(c.failed) : ''} |`,
  );
  const stepHeads = m.stages.slice(1).map((n, i) => `${int(m.stages[i]!)} → ${int(n)}`);
  return [
    '## (j) Worker memory with idle threads',
    '',
    `Threadline workers in processes of their own (bench/memory-worker.ts), side by side in one run, one per ` +
      `configuration (each malloc configuration on the Redis bus, as production workers run, and glibc's default on ` +
      `the in-process bus, as \`npm start\` runs), each with its own task queue and a workflow cache of ${int(m.cacheSize)} workflows (the ` +
      `bench's worker runs with ${int(m.threadlineCacheSize)}, the SDK's default for its heap). Threads are created ` +
      'with one persist-only signal each (no run) and left idle, the same number in each worker; each measurement ' +
      "waits until the worker has caught up and runs full GCs in every V8 heap of the worker: the SDK's workflow " +
      "thread, where every workflow's code and objects live (reached through the inspector), and the main thread " +
      "(Temporal's client and core bridge, activities, the bus). Once a worker's cache is full it evicts the least " +
      'recently used workflow for each new one, so each stage after the first evicts as many threads as it creates. ' +
      'RSS anon is the anonymous part of the RSS (malloc and V8 heaps, no mapped files); the workflow thread heap is ' +
      'shown as found → after its GC (what V8 had not yet collected is the difference); V8 malloced is what the ' +
      "main thread's V8 holds from malloc outside its heap.",
    '',
    '| configuration | threads created | cached | RSS | RSS anon | workflow thread heap used | its committed | ' +
      'main heap used | main heap committed | external | V8 malloced | load average |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    'Bytes of RSS per thread: per cached idle thread (the first stage), then per evicted idle thread over each ' +
      'later stage (the RSS it grew by over the threads it evicted; in brackets the workflow thread heap and the ' +
      'main heap, after their GCs). Memory an allocator keeps and reuses falls toward 0 stage by stage; a leak ' +
      'stays level.',
    '',
    `| configuration | per cached thread | ${stepHeads.map((h) => `per evicted, ${h}`).join(' | ')} | failed |`,
    `| --- | ---: | ${stepHeads.map(() => '---:').join(' | ')} | ---: |`,
    ...steps,
    '',
    'Per evicted idle thread once the plateau is reached: the least-squares slope of RSS (and of the V8 heaps used) ' +
      'against the threads evicted so far, over every measurement from the end of the first eviction stage on (that ' +
      "stage is the allocator's climb to its plateau), ± its standard error. One stage's difference carries a whole " +
      "measurement's noise; the slope spreads it over every thread evicted since.",
    '',
    '| configuration | fitted over (threads evicted) | RSS per evicted thread | workflow thread heap | main heap |',
    '| --- | --- | ---: | ---: | ---: |',
    ...m.configs.map((c) => {
      const x = c.evictedSlope;
      return x
        ? `| ${c.name} | ${int(x.fromEvicted)} → ${int(x.toEvicted)} (${x.points} measurements) | ` +
            `${int(x.rss)} ± ${int(x.rssStandardError)} | ` +
            `${int(x.workflowHeapUsed)} ± ${int(x.workflowHeapStandardError)} | ` +
            `${int(x.heapUsed)} ± ${int(x.heapStandardError)} |`
        : `| ${c.name} | too few stages | | | |`;
    }),
    '',
    `Target 9 reads ${m.primary} on Redis, a production worker (\`npm start\` uses glibc's defaults too; the ` +
      `Docker image sets \`MALLOC_ARENA_MAX=2\` and \`MALLOC_TRIM_THRESHOLD_=131072\`): ` +
      `**${int(m.rssPerEvictedThread)} ± ${int(m.rssPerEvictedThreadStandardError)} bytes** per evicted idle thread ` +
      `(workflow thread heap ${int(m.workflowHeapPerEvictedThread)}, main heap ${int(m.heapPerEvictedThread)}), ` +
      `${int(m.rssPerCachedThread)} per cached one (of which the workflow thread heap holds ` +
      `${int(m.workflowHeapPerCachedThread)}). The in-process bus row ` +
      "is the same worker as `npm start` runs it: that bus keeps each thread's recent events in the process until " +
      `the thread's stream has been idle for its retention. Threads created at ${m.createdPerSecond.toFixed(1)}/s, ` +
      'all workers together. docs/limits.md ' +
      '(worker memory) explains the figures.',
    '',
  ];
}

function gatewayMemorySection(g: GatewayMemoryResult | { failed: string }): string[] {
  if ('failed' in g) {
    return ['## (k) Gateway memory with stalled subscribers', '', `**Failed in this run:** ${g.failed}`, ''];
  }
  const row = (name: string, x: GatewayFigures) =>
    `| ${name} | ${mib(x.rss)} | ${mib(x.heapUsed)} | ${mib(x.heapTotal)} | ${mib(x.external)} | ${mib(x.arrayBuffers)} |`;
  const bound = g.subscribers * g.maxSubscriberBufferBytes;
  const last = g.rounds.at(-1);
  return [
    '## (k) Gateway memory with stalled subscribers',
    '',
    `A gateway in a process of its own (bench/gateway-memory-process.ts) on Redis, default settings. Each round, ` +
      `${int(g.subscribers)} SSE subscribers of one thread read their response head and never read again, while a ` +
      `${int(g.chunks)}-chunk answer streams to that thread and one more subscriber reads it all (in the bench's ` +
      'process; if the gateway drops it as slow, it resumes with `Last-Event-ID` as a client does, counted below). ' +
      'Each stalled ' +
      `subscriber may make the gateway hold ${mib(g.maxSubscriberBufferBytes)} of events ` +
      '(`THREADLINE_MAX_SUBSCRIBER_BUFFER_BYTES`) before it is dropped, or is dropped after ' +
      `${sec(g.subscriberStallMs)} s without progress (\`THREADLINE_SUBSCRIBER_STALL_MS\`): ${mib(bound)} in all. ` +
      'Rows are after two full GCs in the gateway, but for the peak while streaming: the highest of samples taken ' +
      'every 250 ms without one (garbage included). The live peak is the highest of those taken after two full GCs, ' +
      'one a second.',
    '',
    '| | RSS | V8 heap used | V8 heap committed | external | array buffers |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    row('started (one short answer served)', g.started),
    ...g.rounds.flatMap((r, i) => [
      row(`round ${i + 1}: ${int(g.subscribers)} stalled subscribers connected`, r.connected),
      row(`round ${i + 1}: peak while streaming`, r.peak),
      row(`round ${i + 1}: live peak while streaming`, r.peakLive),
      row(`round ${i + 1}: every stalled subscriber dropped`, r.afterDrops),
      row(`round ${i + 1}: their sockets closed`, r.afterClose),
      row(`round ${i + 1}: 30 s later`, r.afterIdle),
    ]),
    '',
    '| round | dropped: buffer full | dropped: stalled | not dropped | reader resumed | answer | send → last drop | `GET /health` meanwhile p50 / p90 / max |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...g.rounds.map(
      (r, i) =>
        `| ${i + 1} | ${int(r.dropped.bufferFull)} | ${int(r.dropped.stalled)} | ${int(r.notDropped)} | ` +
        `${int(r.readerResumes ?? 0)} | ${int(r.answerEvents)} events, ${mib(r.answerBytes)} | ${r.seconds.toFixed(1)} s | ` +
        `${ms(r.healthMs.p50)} / ${ms(r.healthMs.p90)} / ${ms(r.healthMs.max)} ms |`,
    ),
    '',
    ...(last
      ? [
          `Peak RSS over the start: ${mib(Math.max(...g.rounds.map((r) => r.peak.rss)) - g.started.rss)}, live V8 ` +
            `heap ${mib(Math.max(...g.rounds.map((r) => r.peakLive.heapUsed)) - g.started.heapUsed)} (the buffers' ` +
            `bound: ${mib(bound)}). 30 s after the last round's sockets closed: RSS ` +
            `${mib(last.afterIdle.rss - g.started.rss)} and V8 heap ${mib(last.afterIdle.heapUsed - g.started.heapUsed)} ` +
            'over the start.',
          '',
        ]
      : []),
  ];
}
