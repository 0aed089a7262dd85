/**
 * Why an issue #12 target is not met, in this run's own figures: each explanation reads the measurements the target
 * depends on (segments, events, workflow tasks, CPU), so BENCHMARKS.md says what the gap is made of, not only that it
 * exists. Pure, like bench/targets.ts: test/unit/bench-report.test.ts holds it to synthetic results.
 */
import { interruptTargetId, type TargetRow } from './targets';

interface Pcts {
  p50: number;
  p99: number;
}

/** The figures the explanations read (`BenchResults` has all of them). */
export interface WhyNotInputs {
  idleWake: {
    freshThread: { segments: Record<string, { p50: number }> };
    idleThread: { segments: Record<string, { p50: number }> };
    floor: { toFirstDelta: Pcts };
    temporalFloor: {
      series: { newByUpdate: { toActivity: Pcts }; idleByUpdate: { toActivity: Pcts } };
      activityToActivity: { p50: number };
      segments: Record<'newByUpdate' | 'idleByUpdate', Record<string, { p50: number }>>;
    };
  };
  signalIngest: Record<'oneThread' | 'manyThreads' | 'manyThreadsStateDependent', IngestCaseFigures> & {
    floor: Record<'oneWorkflow' | 'manyByUpdate' | 'manyBySignal', { eventsPerInput: number }>;
  };
  injection: { stepEndToNextRequest: Pcts; segments: Record<string, { p50: number }> };
  history: { laterTurnTypes: string[] };
  interrupt: { series: Record<string, { label: string; toClosed: Pcts; segments: Record<string, Pcts> }> };
  notifications: NotificationCaseFigures & { floor: { eventsPerInput: number }; paced: NotificationCaseFigures };
  memory: {
    rssPerEvictedThread: number;
    rssPerEvictedThreadStandardError?: number;
    heapPerEvictedThread: number;
    workflowHeapPerEvictedThread?: number;
  };
  http: Record<'newThread' | 'idleThread', Record<'gateway' | 'gatewayLocalClient', { p50: number }>> & {
    /** Each side's turn split where the paths part (bench/http.ts, `gatewaySegments`), in that order. */
    segments: Record<'newThread' | 'idleThread', Record<'inProcess' | 'gateway', Record<string, { p50: number }>>>;
    ingest: { concurrency: number } & Record<
      'inProcess' | 'gateway' | 'gatewayLocalClient',
      {
        acceptedPerSecond: number;
        acceptLatency: { mean: number };
        cpuMsPerSignal: Record<'benchProcess' | 'devServer' | 'clientProcess', number>;
      }
    >;
  };
}

interface IngestCaseFigures {
  signals: number;
  cpuSeconds: { benchProcess: number; devServer: number };
  rpcAttempts: Record<string, number>;
  history: { events: number; workflowTasks: number; activities: number; taskScheduleToStart: { p50: number } };
  continueAsNew?: { spanningLatency: { p50: number; max: number }; otherLatency: { p50: number } };
}

interface NotificationCaseFigures {
  accepted: number;
  wakes: { runs: number; notificationsPerRun: number; modelRequests: number };
  history: { eventsPerNotification: number; eventsByType: Record<string, number> };
}

export interface WhyNot {
  /** The target ids it explains, e.g. `['2a', '2b']`. */
  ids: string[];
  text: string;
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const f0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');

/**
 * Threadline's wake beside the floor's update, segment by segment at p50: the floor's segments in order (up to its
 * activity code running), each against Threadline's at the same place, then Threadline's model request and first
 * text-delta against the `streamText` floor.
 */
function besideFloor(
  threadline: Record<string, { p50: number }>,
  floor: Record<string, { p50: number }>,
  streamText: number,
): string {
  const ours = Object.entries(threadline);
  const theirs = Object.entries(floor);
  const pair = (name: string, a: number, b: number, against = 'floor') =>
    `${name.replace(/^→ /, '')}: ${f1(a)} vs ${against} ${f1(b)} (${signed(a - b)})`;
  const paired = theirs.map(([, b], i) => pair(ours[i][0], ours[i][1].p50, b.p50));
  const rest = ours.slice(theirs.length).reduce((sum, [, a]) => sum + a.p50, 0);
  const restNames = ours
    .slice(theirs.length)
    .map(([name]) => name.replace(/^→ /, ''))
    .join(' + ');
  return [...paired, pair(restNames, rest, streamText, '`streamText`')].join('; ');
}

const signed = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(1)}` : '–');

/** Events of one type per input, from a by-type count. */
const per = (byType: Record<string, number>, type: string, inputs: number) => (byType[type] ?? 0) / inputs;

/** A one-step turn with one update and one activity, as bare Temporal records it. */
const bareTurn = [
  'WorkflowTaskScheduled',
  'WorkflowTaskStarted',
  'WorkflowTaskCompleted',
  'WorkflowExecutionUpdateAccepted',
  'WorkflowExecutionUpdateCompleted',
  'ActivityTaskScheduled',
  'ActivityTaskStarted',
  'ActivityTaskCompleted',
  'WorkflowTaskScheduled',
  'WorkflowTaskStarted',
  'WorkflowTaskCompleted',
];

function ingestWhy(name: string, c: IngestCaseFigures, floorEvents: number): string {
  const n = c.signals;
  const cpu = ((c.cpuSeconds.benchProcess + c.cpuSeconds.devServer) / n) * 1000;
  return (
    `${name}: ${f2(c.history.events / n)} history events per input (the floor: ${f2(floorEvents)}), ` +
    `${f2(c.history.workflowTasks / n)} workflow tasks and ${f2(c.history.activities / n)} activities per input; ` +
    `a workflow task waited ${f1(c.history.taskScheduleToStart.p50)} ms p50 for a poller; ` +
    `${f1(cpu)} CPU s per 1,000 inputs (this process + the dev server) on 2 cores`
  );
}

/** One explanation per group of unmet targets; met targets get none. */
export function whyNot(rows: TargetRow[], r: WhyNotInputs): WhyNot[] {
  const unmet = new Set(rows.filter((row) => !row.met).map((row) => row.id));
  const out: WhyNot[] = [];
  /** `text` is given the ids of the group that are not met (in the order given), when any is not. */
  const explain = (ids: string[], text: (which: string[]) => string) => {
    const which = ids.filter((id) => unmet.has(id));
    if (which.length > 0) out.push({ ids: which, text: text(which) });
  };
  const w = r.idleWake;

  explain(['2a', '2b'], () => {
    const floor = w.temporalFloor.series.idleByUpdate.toActivity.p50;
    return (
      `The idle wake beside the floor's update, p50 ms (a and the floor's tables): ` +
      `${besideFloor(w.idleThread.segments, w.temporalFloor.segments.idleByUpdate, w.floor.toFirstDelta.p50)}. ` +
      `The floor does update → activity code running in ${f1(floor)} ms; Threadline's workflow task carries the ` +
      `update's validation, the thread's state code and a search-attribute upsert, and the step's start is observed ` +
      `through the bus (\`step-start\` at a subscriber).`
    );
  });
  explain(['3a', '3b'], () => {
    const floor = w.temporalFloor.series.newByUpdate.toActivity.p50;
    return (
      `A new thread's first input beside the floor's update-with-start, p50 ms: ` +
      `${besideFloor(w.freshThread.segments, w.temporalFloor.segments.newByUpdate, w.floor.toFirstDelta.p50)}. ` +
      `The floor reaches activity code in ${f1(floor)} ms. Beating the floor needs an eager workflow start (the ` +
      `first workflow task handed to a co-located worker in the start's answer); see docs/performance.md.`
    );
  });

  explain(['4'], () => {
    const floor = w.temporalFloor.activityToActivity.p50;
    const split = Object.entries(r.injection.segments)
      .map(([name, v]) => `${name.replace(/^→ /, '')} ${f1(v.p50)}`)
      .join('; ');
    return (
      `Step end → next model request ${f1(r.injection.stepEndToNextRequest.p50)} ms p50 against the floor's one ` +
      `activity returning → the next one's code running, ${f1(floor)} ms. Threadline's, split at its history ` +
      `events, p50 ms (b): ${split}. The floor's path is not split; beyond it, Threadline's workflow task records ` +
      'the step, takes the joined input and schedules the next step, whose start is seen through the bus, and the ' +
      'step sends its model request.'
    );
  });

  Object.values(r.interrupt.series).forEach((s, i) => {
    explain([interruptTargetId(i)], () => {
      const [decided, reported] = Object.values(s.segments);
      return (
        `${s.label}: the request closed at ${f1(s.toClosed.p50)} / ${f1(s.toClosed.p99)} ms p50 / p99, and the ` +
        `workflow task that decided the cancellation completed at ${f1(decided?.p50 ?? NaN)} / ` +
        `${f1(decided?.p99 ?? NaN)} ms (send → step cancellation requested; the step then reported itself cancelled ` +
        `${f1(reported?.p50 ?? NaN)} / ${f1(reported?.p99 ?? NaN)} ms later). The close follows that task: its sink ` +
        'sends the cancel notice as the task completes and the step aborts its model call when it hears it, with no ' +
        "heartbeat in between; a slow close is a slow decision (the update's workflow task on the shared 2 cores)."
      );
    });
  });

  const d = r.signalIngest;
  explain(['6a'], () =>
    ingestWhy(
      'State-dependent inputs over 1,000 threads',
      d.manyThreadsStateDependent,
      d.floor.manyByUpdate.eventsPerInput,
    ),
  );
  explain(['6b', '6c'], () =>
    ingestWhy('Persist-only signals over 1,000 threads', d.manyThreads, d.floor.manyBySignal.eventsPerInput),
  );
  explain(['6d'], () => {
    const c = d.oneThread;
    const closing = Object.entries(c.rpcAttempts)
      .filter(([status]) => /RESOURCE_EXHAUSTED/.test(status))
      .reduce((sum, [, count]) => sum + count, 0);
    const can = c.continueAsNew;
    const spanning = can
      ? ` Sends spanning a continue-as-new hand-over took ${f1(can.spanningLatency.p50)} ms p50 (${f1(can.spanningLatency.max)} max) against ${f1(can.otherLatency.p50)} for the rest.`
      : '';
    return `${ingestWhy('One thread', c, d.floor.oneWorkflow.eventsPerInput)}; ${closing} update attempts were turned away with RESOURCE_EXHAUSTED ("workflow is closing") during hand-overs.${spanning}`;
  });

  explain(['7a'], () => {
    const types = r.history.laterTurnTypes;
    const count = (type: string) => types.filter((t) => t === type).length;
    const upserts = count('UpsertWorkflowSearchAttributes');
    const activities = count('ActivityTaskScheduled');
    const tasks = count('WorkflowTaskCompleted');
    return (
      `A later turn adds ${types.length} events (list in (c)); one update and one activity on bare Temporal take ` +
      `${bareTurn.length}. Beyond those: ${upserts} \`UpsertWorkflowSearchAttributes\` (the thread's status when a run ` +
      `starts and ends, issue #11's search attributes) and ${activities - 1} more activit${activities - 1 === 1 ? 'y' : 'ies'} ` +
      `with ${tasks - 2} more workflow task${tasks - 2 === 1 ? '' : 's'} (${3 * (activities - 1) + 3 * (tasks - 2)} events): ` +
      `\`publishEvents\`, which sends \`run-finish\`. The workflow decides that the run is over only after the step ` +
      `returned (an input may have joined it meanwhile), and publishes a decision only once a committed workflow task ` +
      `scheduled it; folding it into the step activity would announce decisions the workflow has not made.`
    );
  });

  const n = r.notifications;
  explain(['8a', '8b', '8c', '8d'], () => {
    const t = n.history.eventsByType;
    const k = n.accepted;
    return (
      `Per notification: ${f2(per(t, 'WorkflowTaskCompleted', k))} workflow tasks, ` +
      `${f2(per(t, 'ActivityTaskScheduled', k))} activities, ${f2(per(t, 'TimerStarted', k))} timers, ` +
      `${f2(per(t, 'UpsertWorkflowSearchAttributes', k))} search-attribute upserts: ` +
      `${f1(n.history.eventsPerNotification)} events against the accept-only floor's ${f1(n.floor.eventsPerInput)}. ` +
      `Each send is an update with a workflow task of its own (the answer — record id, coalesced or new — depends ` +
      `on the inbox), and the ${f0(n.wakes.runs)} runs the digests woke (${f1(n.wakes.notificationsPerRun)} ` +
      `notifications per run, ${f2(n.wakes.modelRequests / Math.max(1, n.wakes.runs))} model requests per run; paced: ` +
      `${f1(n.paced.wakes.notificationsPerRun)} per run) add their steps, publishes and digest timers to the same ` +
      `histories and the same 2 cores. A digest that comes due while its thread runs joins that run at its next step ` +
      `boundary, which is one more model request.`
    );
  });

  explain(['9'], () => {
    const m = r.memory;
    return (
      `Of the ${f0(m.rssPerEvictedThread)} ± ${f0(m.rssPerEvictedThreadStandardError ?? 0)} bytes of RSS per evicted ` +
      `thread (the slope over the settled stages, ± its standard error), the V8 heaps hold ` +
      `${f0(m.workflowHeapPerEvictedThread ?? NaN)} (the workflow thread's) and ${f0(m.heapPerEvictedThread)} (the main ` +
      `thread's), after full GCs in both: the rest is memory outside V8 (see (j) and docs/limits.md, worker memory).`
    );
  });
  explain(['10a', '10b'], (which) => {
    const x = r.http;
    const inside = (side: typeof x.idleThread) => f1(side.gatewayLocalClient.p50 - side.gateway.p50);
    const split = (path: 'idleThread' | 'newThread') => {
      const { inProcess, gateway } = x.segments[path];
      return Object.keys(gateway)
        .map((name) => {
          const [a, b] = [gateway[name].p50, inProcess[name]?.p50 ?? NaN];
          return `${name}: ${f1(a)} vs ${f1(b)} (${signed(a - b)})`;
        })
        .join('; ');
    };
    // Each unmet path split where it parts from the in-process client's (10a the idle wake, 10b a new thread).
    const paths = which.map((id) =>
      id === '10a'
        ? `The idle wake through the gateway beside the in-process client, p50 ms (see (i)): ${split('idleThread')}.`
        : `A new thread through the gateway beside the in-process client, p50 ms (see (i)): ${split('newThread')}.`,
    );
    return (
      `${paths.join(' ')} The first row ` +
      'holds the HTTP request (the client process writing it, the gateway parsing, authorizing and validating it, ' +
      'then the same client call); the last is the SSE hop (framing, the socket write, the client process waking ' +
      'and parsing); the middle is the same workflow and step, with the gateway and a third process on the 2 ' +
      `cores. A client inside the bench's process would add ${inside(x.idleThread)} ms (idle) and ` +
      `${inside(x.newThread)} ms (new) more at p50: it reads its socket only after the worker's step burst.`
    );
  });
  explain(['10c'], () => {
    const x = r.http.ingest;
    const share = (rate: number) => `${Math.round((100 * rate) / x.inProcess.acceptedPerSecond)} %`;
    const cpu = (c: typeof x.inProcess) => {
      const { benchProcess: b, devServer: d, clientProcess: k } = c.cpuMsPerSignal;
      return { b, d, k, all: b + d + k };
    };
    const [inside, outside] = [cpu(x.inProcess), cpu(x.gateway)];
    return (
      `Persist-only signals through the gateway, driven from a process of their own: ` +
      `${f1(x.gateway.acceptedPerSecond)}/s against ${f1(x.inProcess.acceptedPerSecond)}/s in-process ` +
      `(${share(x.gateway.acceptedPerSecond)}). CPU per signal (accepted and handled), ms: in-process ` +
      `${f2(inside.b)} in the bench's process + ${f2(inside.d)} in the dev server = ${f2(inside.all)}; through the ` +
      `gateway ${f2(outside.b)} + ${f2(outside.d)} + ${f2(outside.k)} in the client process = ${f2(outside.all)} ` +
      `(${signed(outside.all - inside.all)}). The three processes share 2 cores, so the extra CPU per request (HTTP ` +
      'parsing and writing on both ends, routing, validation, the request log and metrics; docs/performance.md) ' +
      `costs rate: ${f2(inside.all)} / ${f2(outside.all)} = ${Math.round((100 * inside.all) / outside.all)} %. ` +
      `Driven by \`fetch\` inside the bench's process: ${f1(x.gatewayLocalClient.acceptedPerSecond)}/s ` +
      `(${share(x.gatewayLocalClient.acceptedPerSecond)}). With ${x.concurrency} sends in flight a side's rate is ` +
      `${x.concurrency} over its mean accept latency: ${f1(x.inProcess.acceptLatency.mean)} ms in-process, ` +
      `${f1(x.gateway.acceptLatency.mean)} ms through the gateway ` +
      `(${signed(x.gateway.acceptLatency.mean - x.inProcess.acceptLatency.mean)}).`
    );
  });
  return out;
}
