/**
 * (d) Signal ingest throughput with the `persist` behaviour: `sendSignal` stores a notification in the thread without
 * starting a run (idle: `ifIdle: persist`; active: `ifActive: persist`). A fixed number of sends is kept in flight
 * (the client's concurrency) and every signal is timed from the `sendSignal` call to its promise resolving (the
 * thread accepted it and it is in the thread's history). Two shapes: every signal to one thread (one workflow
 * execution chain, which continues as new every `maxUpdatesPerExecution` updates), and round-robin over many threads.
 *
 * At the end every signal is checked to have been stored exactly once (thread state, stored message ids and, on the
 * one thread, the persisted echoes a subscriber saw), and the threads' histories say where the time went.
 *
 * Long on purpose: both shapes share the sender, the exactly-once check and the segment tables of one benchmark.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { Client, Connection, makeGrpcRetryInterceptor, type WorkflowClient } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { ThreadEvent } from '../protocol/events';
import type { ThreadTarget } from '../protocol/schemas';
import { threadKey } from '../protocol/ids';
import { defaultThreadConfig } from '../protocol/thread-config';
import { connect, type AgentClient } from '../client/connect';
import { threadlineGrpcRetryOptions } from '../client/grpc-retry';
import { wallClock, workerLog, type BenchEnv } from './env';
import { floorIngest, type FloorIngestCase } from './floor/ingest';
import { countClientErrors, eventTypeName, historyChain, inputEvents, mapLimit } from './temporal-helpers';
import { summarize, type Summary } from './stats';

export interface IngestSizes {
  /** Signals to the single thread. */
  oneThread: number;
  /** Signals spread round-robin over `threads` threads. */
  manyThreads: number;
  threads: number;
  /** Sends kept in flight by the client. */
  concurrency: number;
  /**
   * The one-thread case again with fewer sends in flight than Temporal admits per workflow (10 in-flight updates):
   * the same path without the rejections and retries that more concurrency causes.
   */
  belowCapConcurrency: number;
  /** A case stops starting sends after this long (the sends in flight finish), so a collapse cannot stall the bench. */
  maxSecondsPerCase: number;
}

/** Workflow-task statistics read back from the threads' histories (server clock). */
export interface HistoryStats {
  /** Workflow executions read (a thread that continued as new has several). */
  executions: number;
  events: number;
  workflowTasks: number;
  updatesAccepted: number;
  /** `WorkflowExecutionSignaled`: inputs that came as signals (persist-only ones, by signal-with-start). */
  signalsRecorded: number;
  /** `ActivityTaskScheduled`: here the `publishEvents` activities that send the `persisted` echoes. */
  activities: number;
  /** `MarkerRecorded`: local activities, patch markers. */
  markers: number;
  /** Event types outside the expected set (failures, timeouts), with counts. */
  unexpected: Record<string, number>;
  /** WorkflowTaskScheduled → Started: waiting for the worker's poller. */
  taskScheduleToStart: Summary;
  /** WorkflowTaskStarted → Completed: the worker's activation, workflow code, local activity and reply. */
  taskStartToComplete: Summary;
}

export interface ContinueAsNewStats {
  /** Executions of the thread's chain (1 = never continued as new). */
  executions: number;
  /** Inputs (accepted updates and signals) each execution recorded, in order. */
  updatesPerExecution: number[];
  eventsPerExecution: number[];
  /** Server time from an execution's last input (update or signal) to the next execution's first: the hand-over stall. */
  handOverMs: number[];
  /** Bytes of each continue-as-new's input: the thread snapshot the next execution starts from. */
  continuedWithBytes: number[];
  /** Accept latency of the signals in flight while an execution continued as new (its close time). */
  spanningLatency: Summary;
  /** …and of all the others. */
  otherLatency: Summary;
}

export interface Verification {
  /** Every `sendSignal` resolved with action `persist`, not a duplicate. */
  allAccepted: boolean;
  failures: number;
  /** Failed sends whose input is in history all the same (the client gave up on an update the thread took). */
  failedButAccepted: number;
  /** Every resolved send is in its thread's history exactly once (an accepted update, or a signal). */
  historyExactlyOnce: boolean;
  /** Sum of `getThread(...).messageCount` over the threads. */
  messageCountSum: number;
  /** What the sum should be: the inputs accepted in history, less what `maxStoredMessages` trims on a thread. */
  expectedMessageCount: number;
  /** The stored message ids are the newest accepted inputs, in acceptance (history) order, each once. */
  storedIdsMatch: boolean;
  /** Every accepted signal's `persisted` echo reached its thread's subscriber exactly once. */
  echoesExactlyOnce: boolean;
  /** No model request was made: nothing woke. */
  noModelRequests: boolean;
  ok: boolean;
  problems: string[];
}

export interface IngestCase {
  /** What an active thread would do with the input; `persist` on both sides makes the answer independent of state. */
  ifActive: 'persist' | 'deliver';
  threads: number;
  /** Signals sent; fewer than `planned` when the case hit its time budget. */
  signals: number;
  planned: number;
  stoppedAtBudget: boolean;
  concurrency: number;
  durationMs: number;
  signalsPerSecond: number;
  /** Inputs handled per second: first call → the last input's handling workflow task completed (history). */
  handledPerSecond: number;
  acceptLatency: Summary;
  /** Many threads: the first signal to each thread (update-with-start creates its workflow) vs the later ones. */
  firstToThreadLatency?: Summary;
  laterLatency?: Summary;
  /** Signals/s per tenth of the run, in order (shows stalls such as continue-as-new). */
  rateByTenth: number[];
  /** CPU seconds used during the case: this process (client, worker, model server, bus) and the dev server. */
  cpuSeconds: { benchProcess: number; devServer: number };
  /**
   * Every RPC attempt that carried an input (update and signal, with or without start), by gRPC status and message,
   * as a gRPC interceptor inside the Temporal client's retry interceptor sees them.
   */
  rpcAttempts: Record<string, number>;
  /** Errors the Temporal client threw to Threadline's own retry loop (after its gRPC retries gave up), by kind. */
  clientErrors: Record<string, number>;
  /** Worker (SDK and Core) warnings and errors logged during the case and its checks, by message. */
  workerLog: Record<string, number>;
  history: HistoryStats;
  continueAsNew?: ContinueAsNewStats;
  verification: Verification;
}

export interface SignalIngestResult {
  concurrency: number;
  maxSecondsPerCase: number;
  contentsBytes: number;
  maxStoredMessages: number;
  maxUpdatesPerExecution: number;
  maxSignalsPerExecution: number;
  continueAsNewAfterEvents: number;
  oneThread: IngestCase;
  oneThreadBelowCap: IngestCase;
  /** Persist-only signals (`ifIdle` and `ifActive` both `persist`): the answer does not depend on the thread's state. */
  manyThreads: IngestCase;
  /** `ifIdle: persist`, `ifActive: deliver`: the answer depends on the thread's state (idle here, so `persist`). */
  manyThreadsStateDependent: IngestCase;
  /** The bare-Temporal floor of each shape, run between the Threadline cases (bench/floor/ingest.ts). */
  floor: { oneWorkflow: FloorIngestCase; manyByUpdate: FloorIngestCase; manyBySignal: FloorIngestCase };
}

interface Sent {
  index: number;
  /** The input id, chosen here so that a failed send can be looked up in history too. */
  id: string;
  thread: number;
  start: number;
  end: number;
  signalId?: string;
  action?: string;
  duplicate?: boolean;
  error?: string;
}

const contentsBytes = 200;

export async function benchSignalIngest(
  env: BenchEnv,
  sizes: IngestSizes,
  progress: (line: string) => void = () => undefined,
): Promise<SignalIngestResult> {
  const tag = randomUUID().slice(0, 8);
  const one: ThreadTarget[] = [{ resourceId: 'bench', threadId: `ingest-one-${tag}` }];
  const oneBelowCap: ThreadTarget[] = [{ resourceId: 'bench', threadId: `ingest-one-below-cap-${tag}` }];
  const manyOf = (kind: string): ThreadTarget[] =>
    Array.from({ length: sizes.threads }, (_, k) => ({ resourceId: 'bench', threadId: `ingest-${kind}-${tag}-${k}` }));
  const rpcs = new Map<string, number>();
  const instrumented = await instrumentedClient(env, rpcs);
  const ingest: Ingest = { env, agent: instrumented.agent, workflow: instrumented.workflow, rpcs, progress };
  try {
    return await runCases(ingest, sizes, {
      one,
      oneBelowCap,
      many: manyOf('many'),
      manyDependent: manyOf('many-dependent'),
    });
  } finally {
    await instrumented.close();
  }
}

interface Ingest {
  env: BenchEnv;
  /** The sending client: its own connection, so its RPCs can be counted. */
  agent: AgentClient;
  workflow: WorkflowClient;
  rpcs: Map<string, number>;
  progress: (line: string) => void;
}

async function runCases(
  ingest: Ingest,
  sizes: IngestSizes,
  {
    one,
    oneBelowCap,
    many: manyTargets,
    manyDependent,
  }: { one: ThreadTarget[]; oneBelowCap: ThreadTarget[]; many: ThreadTarget[]; manyDependent: ThreadTarget[] },
): Promise<SignalIngestResult> {
  const budgetMs = sizes.maxSecondsPerCase * 1000;
  const { floor } = ingest.env;
  const floorCase = (
    label: string,
    via: 'update-with-start' | 'signal-with-start',
    workflows: number,
    inputs: number,
  ) => {
    ingest.progress(`  floor: ${label}…`);
    const continueAsNewAfter = workflows === 1 ? defaultThreadConfig.maxUpdatesPerExecution : 0;
    return floorIngest(floor, {
      label,
      via,
      workflows,
      inputs,
      concurrency: sizes.concurrency,
      continueAsNewAfter,
      maxSeconds: sizes.maxSecondsPerCase,
    });
  };
  const oneWorkflow = await floorCase('one workflow, update-with-start', 'update-with-start', 1, sizes.oneThread);
  const oneThread = await ingestCase(ingest, one, sizes.oneThread, sizes.concurrency, budgetMs);
  const oneThreadBelowCap = await ingestCase(ingest, oneBelowCap, sizes.oneThread, sizes.belowCapConcurrency, budgetMs);
  const many = `${sizes.threads.toLocaleString('en-US')} workflows`;
  const manyByUpdate = await floorCase(
    `${many}, update-with-start`,
    'update-with-start',
    sizes.threads,
    sizes.manyThreads,
  );
  const manyThreadsStateDependent = await ingestCase(
    ingest,
    manyDependent,
    sizes.manyThreads,
    sizes.concurrency,
    budgetMs,
    'deliver',
  );
  const manyBySignal = await floorCase(
    `${many}, signal-with-start`,
    'signal-with-start',
    sizes.threads,
    sizes.manyThreads,
  );
  const manyThreads = await ingestCase(ingest, manyTargets, sizes.manyThreads, sizes.concurrency, budgetMs);
  return {
    concurrency: sizes.concurrency,
    maxSecondsPerCase: sizes.maxSecondsPerCase,
    contentsBytes,
    maxStoredMessages: defaultThreadConfig.maxStoredMessages,
    maxUpdatesPerExecution: defaultThreadConfig.maxUpdatesPerExecution,
    maxSignalsPerExecution: defaultThreadConfig.maxSignalsPerExecution,
    continueAsNewAfterEvents: defaultThreadConfig.continueAsNewAfterEvents,
    oneThread,
    oneThreadBelowCap,
    manyThreads,
    manyThreadsStateDependent,
    floor: { oneWorkflow, manyByUpdate, manyBySignal },
  };
}

async function ingestCase(
  { env, agent, workflow, rpcs, progress }: Ingest,
  targets: ThreadTarget[],
  planned: number,
  concurrency: number,
  budgetMs: number,
  ifActive: IngestCase['ifActive'] = 'persist',
): Promise<IngestCase> {
  const modelRequestsBefore = env.probe.server.requests.length;
  rpcs.clear();
  const workerLogBefore = new Map(workerLog);
  const clientErrors = countClientErrors(workflow);
  // A subscriber per thread counts the `persisted` echoes (the bus retains 10,000 events per thread).
  const echoes = collectEchoes(env, targets);
  const sent: Sent[] = [];
  const idPrefix = `ingest-${randomUUID().slice(0, 8)}`;
  const cpuBefore = cpuSnapshot();
  let next = 0;
  const deadline = performance.now() + budgetMs;
  let stoppedAtBudget = false;
  const ticker = setInterval(() => {
    const failed = sent.filter((s) => s.error).length;
    progress(
      `  ${targets.length} thread(s), ${concurrency} in flight: ${sent.length - failed} accepted, ${failed} failed…`,
    );
  }, 15_000);
  const sender = async () => {
    for (let index = next++; index < planned; index = next++) {
      if (performance.now() > deadline) {
        stoppedAtBudget = true;
        return;
      }
      const thread = index % targets.length;
      const record: Sent = { index, id: `${idPrefix}-${index}`, thread, start: performance.now(), end: NaN };
      try {
        const result = await agent.sendSignal(
          {
            type: 'notification',
            contents: `ingest ${index} `.padEnd(contentsBytes, '.'),
            attributes: { source: 'bench', seq: String(index) },
          },
          { ...targets[thread], ifIdle: { behavior: 'persist' }, ifActive: { behavior: ifActive } },
          { id: record.id },
        );
        Object.assign(record, { signalId: result.signalId, action: result.action, duplicate: !!result.duplicate });
      } catch (err) {
        record.error = (err as Error).message;
      }
      record.end = performance.now();
      sent.push(record);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, sender));
  } finally {
    clearInterval(ticker);
    clientErrors.restore();
  }
  const rpcAttempts = Object.fromEntries(rpcs);
  const cpuAfter = cpuSnapshot();
  const signals = sent.length;
  sent.sort((a, b) => a.index - b.index);
  const firstStart = Math.min(...sent.map((s) => s.start));
  const lastEnd = Math.max(...sent.map((s) => s.end));
  const durationMs = lastEnd - firstStart;
  const ok = sent.filter((s) => !s.error);

  // An input is handled once a workflow task has run with it (an update: when accepted; a signal: the next task).
  const readChains = () => mapLimit(targets, 32, (target) => executionChain(env, target));
  let chains = await readChains();
  const unhandled = () => chains.flat().some((x) => x.handledAt.some(Number.isNaN));
  for (const deadline = Date.now() + 60_000; unhandled() && Date.now() < deadline; chains = await readChains()) {
    await sleep(250);
  }
  const verification = await verify(env, targets, sent, chains, echoes, modelRequestsBefore);
  // Up to here: the sends, continue-as-new and the checks' queries (one thread: all stored messages in one answer).
  const caseLog = Object.fromEntries(
    [...workerLog].flatMap(([message, n]) => {
      const added = n - (workerLogBefore.get(message) ?? 0);
      return added > 0 ? [[message, added]] : [];
    }),
  );
  const history = historyStats(chains.flat());
  const handledAt = chains.flat().flatMap((x) => x.handledAt.filter(Number.isFinite));
  const lastHandled = Math.max(...handledAt);
  const handled = handledAt.length;
  const result: IngestCase = {
    ifActive,
    threads: targets.length,
    signals,
    planned,
    stoppedAtBudget,
    concurrency,
    durationMs: round(durationMs),
    signalsPerSecond: round((ok.length / durationMs) * 1000),
    handledPerSecond: round((handled / (lastHandled - wallClock(firstStart))) * 1000),
    acceptLatency: summarize(ok.map((s) => s.end - s.start)),
    rateByTenth: rateByTenth(ok, firstStart, durationMs),
    cpuSeconds: {
      benchProcess: round(cpuAfter.process - cpuBefore.process),
      devServer: round(cpuAfter.server - cpuBefore.server),
    },
    rpcAttempts,
    clientErrors: clientErrors.counts,
    workerLog: caseLog,
    history,
    verification,
  };
  if (targets.length > 1) {
    result.firstToThreadLatency = summarize(ok.filter((s) => s.index < targets.length).map((s) => s.end - s.start));
    result.laterLatency = summarize(ok.filter((s) => s.index >= targets.length).map((s) => s.end - s.start));
  } else {
    result.continueAsNew = continueAsNewStats(chains[0], ok);
  }
  return result;
}

/**
 * A client of its own (same server, bus and task queue, the Temporal client's default gRPC retries), with a gRPC
 * interceptor inside the retry interceptor that counts every update attempt by status: a workflow admits at most 10
 * updates in flight, and the server turns the rest away with RESOURCE_EXHAUSTED, which the Temporal client retries
 * after 1.7 s, 2.9 s, 4.9 s, then 5 s (its default backoff for that status).
 */
async function instrumentedClient(
  env: BenchEnv,
  rpcs: Map<string, number>,
): Promise<{ agent: AgentClient; workflow: WorkflowClient; close(): Promise<void> }> {
  const count: grpc.Interceptor = (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        next(metadata, {
          onReceiveStatus(status, nextStatus) {
            const method = String(options.method_definition.path).split('/').pop();
            if (method && inputMethods.has(method)) {
              const key = status.code === grpc.status.OK ? 'OK' : describeStatus(status);
              rpcs.set(key, (rpcs.get(key) ?? 0) + 1);
            }
            nextStatus(status);
          },
        });
      },
    });
  const connection = await Connection.connect({
    address: (env.client.temporal.connection as Connection).options.address,
    interceptors: [makeGrpcRetryInterceptor(threadlineGrpcRetryOptions()), count],
  });
  const temporal = new Client({ connection, namespace: env.client.temporal.options.namespace });
  const client = await connect({ client: temporal, bus: env.client.bus, taskQueue: env.client.taskQueue });
  return { agent: client.agent(env.agent.agentId), workflow: temporal.workflow, close: () => connection.close() };
}

/** The RPCs that carry an input to a thread: update(-with-start) and signal(-with-start). */
const inputMethods = new Set([
  'ExecuteMultiOperation',
  'UpdateWorkflowExecution',
  'SignalWithStartWorkflowExecution',
  'SignalWorkflowExecution',
]);

/**
 * `CODE: message` of a failed RPC. Update-with-start wraps the update's own status in a MultiOperationExecutionFailure
 * (the outer message only says "Update-with-Start could not be executed."): the first operation status that is not
 * merely "aborted because the other operation failed" names the reason.
 */
function describeStatus(status: grpc.StatusObject): string {
  let code = status.code;
  let message = status.details;
  try {
    const bin = status.metadata.get('grpc-status-details-bin')[0];
    const details = bin instanceof Buffer ? proto.google.rpc.Status.decode(bin).details : [];
    for (const detail of details ?? []) {
      if (!detail.type_url?.endsWith('MultiOperationExecutionFailure') || !detail.value) continue;
      const failure = proto.temporal.api.errordetails.v1.MultiOperationExecutionFailure.decode(detail.value);
      const cause = failure.statuses?.find(
        (op) => op.code && !op.details?.[0]?.type_url?.endsWith('MultiOperationExecutionAborted'),
      );
      if (cause?.code) [code, message] = [cause.code, cause.message ?? message];
    }
  } catch {
    // Undecodable details: the outer status stands.
  }
  return `${grpc.status[code] ?? code}: ${message}`.slice(0, 140);
}

interface Echoes {
  /** Per thread, the ids of the `persisted` echoes its subscriber saw, in order. */
  ids: string[][];
  stop(): void;
}

/** A subscriber per thread, collecting the ids of the `persisted` echoes it sees until `stop()`. */
function collectEchoes(env: BenchEnv, targets: ThreadTarget[]): Echoes {
  const subs = targets.map((target) => env.agent.subscribeToThread(target));
  const ids = subs.map((sub) => {
    const mine: string[] = [];
    void (async () => {
      try {
        for await (const event of sub.stream) {
          const payload = (event as ThreadEvent).payload as { id?: string; persisted?: boolean } | undefined;
          if (event.type === 'data-signal' && payload?.persisted && payload.id) mine.push(payload.id);
        }
      } catch {
        // Unsubscribed.
      }
    })();
    return mine;
  });
  return { ids, stop: () => subs.forEach((sub) => sub.unsubscribe()) };
}

async function verify(
  env: BenchEnv,
  targets: ThreadTarget[],
  sent: Sent[],
  chains: Execution[][],
  echoes: Echoes,
  modelRequestsBefore: number,
): Promise<Verification> {
  const problems: string[] = [];
  const failures = sent.filter((s) => s.error);
  if (failures.length > 0) problems.push(`${failures.length} sends failed, e.g. ${failures[0].error}`);
  const notPersisted = sent.filter((s) => !s.error && (s.action !== 'persist' || s.duplicate || s.signalId !== s.id));
  if (notPersisted.length > 0) {
    problems.push(`${notPersisted.length} sends were not a fresh persist, e.g. ${JSON.stringify(notPersisted[0])}`);
  }
  const allAccepted = failures.length === 0 && notPersisted.length === 0;

  // Acceptance as Temporal recorded it: each thread's accepted input ids, in order, over its whole chain.
  const accepted = chains.map((chain) => chain.flatMap((execution) => execution.acceptedIds));
  let historyExactlyOnce = true;
  let failedButAccepted = 0;
  const cap = defaultThreadConfig.maxStoredMessages;
  targets.forEach((target, k) => {
    const times = new Map<string, number>();
    for (const id of accepted[k]) times.set(id, (times.get(id) ?? 0) + 1);
    const mine = sent.filter((s) => s.thread === k);
    const missing = mine.filter((s) => !s.error && times.get(s.id) !== 1);
    failedButAccepted += mine.filter((s) => s.error && times.has(s.id)).length;
    const known = new Set(mine.map((s) => s.id));
    const strangers = accepted[k].filter((id) => !known.has(id));
    const repeated = [...times.values()].filter((n) => n > 1).length;
    if ((missing.length > 0 || strangers.length > 0 || repeated > 0) && historyExactlyOnce) {
      problems.push(
        `thread ${target.threadId}: ${missing.length} resolved sends not accepted exactly once in history, ` +
          `${repeated} ids accepted more than once, ${strangers.length} unknown ids`,
      );
    }
    historyExactlyOnce &&= missing.length === 0 && strangers.length === 0 && repeated === 0;
  });

  // The persisted echoes: each accepted signal exactly once, on its own thread.
  const expectedEchoes = accepted.reduce((sum, ids) => sum + ids.length, 0);
  const echoed = () => echoes.ids.reduce((sum, ids) => sum + ids.length, 0);
  const deadline = Date.now() + 30_000;
  while (echoed() < expectedEchoes && Date.now() < deadline) await sleep(20);
  await sleep(200); // Anything extra (a duplicate) would arrive right behind.
  echoes.stop();
  let repeated = 0;
  let neverEchoed = 0;
  let strangers = 0;
  accepted.forEach((ids, k) => {
    const expected = new Set(ids);
    const unique = new Set(echoes.ids[k]);
    repeated += echoes.ids[k].length - unique.size;
    neverEchoed += [...expected].filter((id) => !unique.has(id)).length;
    strangers += [...unique].filter((id) => !expected.has(id)).length;
  });
  const echoesExactlyOnce = repeated === 0 && neverEchoed === 0 && strangers === 0;
  if (!echoesExactlyOnce) {
    problems.push(
      `${echoed()} persisted echoes for ${expectedEchoes} accepted signals: ${repeated} repeated, ` +
        `${neverEchoed} never echoed, ${strangers} on the wrong thread or unknown`,
    );
  }

  // Thread state and stored ids: a thread keeps its newest `maxStoredMessages` messages, in acceptance order.
  let messageCountSum = 0;
  let expectedMessageCount = 0;
  let storedIdsMatch = true;
  await mapLimit(targets, 32, async (target, k) => {
    const newest = accepted[k].slice(-cap);
    expectedMessageCount += newest.length;
    const view = await env.client.getThread(target);
    const page = await env.client.getMessages(target, { limit: accepted[k].length + 10 });
    messageCountSum += view?.messageCount ?? 0;
    const stored = (page?.messages ?? []).map((m) => m.id);
    const match =
      view?.messageCount === newest.length &&
      stored.join() === newest.join() &&
      view.status === 'idle' &&
      view.runsCompleted === 0;
    if (!match && storedIdsMatch) {
      problems.push(
        `thread ${target.threadId}: messageCount ${view?.messageCount}, ${stored.length} stored ids, expected the ` +
          `newest ${newest.length} accepted (status ${view?.status}, runs ${view?.runsCompleted})`,
      );
    }
    storedIdsMatch &&= match;
  });
  if (messageCountSum !== expectedMessageCount) {
    problems.push(`messageCount sum ${messageCountSum}, expected ${expectedMessageCount}`);
  }
  const noModelRequests = env.probe.server.requests.length === modelRequestsBefore;
  if (!noModelRequests) problems.push('model requests were made: a persisted signal woke a thread');
  return {
    allAccepted,
    failures: failures.length,
    failedButAccepted,
    historyExactlyOnce,
    messageCountSum,
    expectedMessageCount,
    storedIdsMatch,
    echoesExactlyOnce,
    noModelRequests,
    ok: problems.length === 0,
    problems,
  };
}

interface Execution {
  runId: string;
  /** Bytes of the input the execution continued as new with (the thread snapshot); NaN if it did not. */
  continuedWithBytes: number;
  events: RawHistoryEvent[];
  /** The input id of each accepted update or signal, in order. */
  acceptedIds: string[];
  /** When a workflow task had handled each of them (server clock), in the same order. */
  handledAt: number[];
}

interface RawHistoryEvent {
  type: string;
  at: number;
}

/** Every execution of a thread's chain, oldest first (following `continuedExecutionRunId` back from the latest). */
async function executionChain(env: BenchEnv, target: ThreadTarget): Promise<Execution[]> {
  const chain = await historyChain(env.client.temporal.workflow, threadKey(target.resourceId, target.threadId));
  return chain.map(({ runId, events: raw }) => ({
    runId,
    continuedWithBytes: payloadBytes(
      raw.find((e) => e.workflowExecutionContinuedAsNewEventAttributes)?.workflowExecutionContinuedAsNewEventAttributes
        ?.input?.payloads,
    ),
    acceptedIds: inputEvents(raw).map((input) => input.id ?? '(no id)'),
    handledAt: inputEvents(raw).map((input) => input.handledAt),
    events: raw.map((e) => ({
      type: eventTypeName(e),
      at: Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6,
    })),
  }));
}

function payloadBytes(payloads: { data?: Uint8Array | null }[] | null | undefined): number {
  return payloads ? payloads.reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0) : NaN;
}

const expectedTypes = new Set([
  'WorkflowExecutionStarted',
  'WorkflowTaskScheduled',
  'WorkflowTaskStarted',
  'WorkflowTaskCompleted',
  'WorkflowExecutionUpdateAccepted',
  'WorkflowExecutionUpdateCompleted',
  'WorkflowExecutionSignaled',
  'MarkerRecorded',
  'ActivityTaskScheduled',
  'ActivityTaskStarted',
  'ActivityTaskCompleted',
  // `patched()` records its change id as a search attribute once per execution.
  'UpsertWorkflowSearchAttributes',
  'WorkflowExecutionContinuedAsNew',
]);

function historyStats(executions: Execution[]): HistoryStats {
  const unexpected: Record<string, number> = {};
  const scheduleToStart: number[] = [];
  const startToComplete: number[] = [];
  let events = 0;
  let workflowTasks = 0;
  let updatesAccepted = 0;
  let signalsRecorded = 0;
  let activities = 0;
  let markers = 0;
  for (const { events: list } of executions) {
    events += list.length;
    let scheduled = NaN;
    let started = NaN;
    for (const e of list) {
      if (!expectedTypes.has(e.type)) unexpected[e.type] = (unexpected[e.type] ?? 0) + 1;
      if (e.type === 'WorkflowTaskScheduled') scheduled = e.at;
      if (e.type === 'WorkflowTaskStarted') {
        started = e.at;
        scheduleToStart.push(e.at - scheduled);
      }
      if (e.type === 'WorkflowTaskCompleted') {
        workflowTasks += 1;
        startToComplete.push(e.at - started);
      }
      if (e.type === 'WorkflowExecutionUpdateAccepted') updatesAccepted += 1;
      if (e.type === 'WorkflowExecutionSignaled') signalsRecorded += 1;
      if (e.type === 'ActivityTaskScheduled') activities += 1;
      if (e.type === 'MarkerRecorded') markers += 1;
    }
  }
  return {
    executions: executions.length,
    events,
    workflowTasks,
    updatesAccepted,
    signalsRecorded,
    activities,
    markers,
    unexpected,
    taskScheduleToStart: summarize(scheduleToStart.filter(Number.isFinite)),
    taskStartToComplete: summarize(startToComplete.filter(Number.isFinite)),
  };
}

function continueAsNewStats(chain: Execution[], ok: Sent[]): ContinueAsNewStats {
  // Persist-only signals travel as signals (signal-with-start), the rest as updates: both are the thread's inputs.
  const inputTypes = new Set(['WorkflowExecutionUpdateAccepted', 'WorkflowExecutionSignaled']);
  const updates = chain.map((x) => x.events.filter((e) => inputTypes.has(e.type)));
  const handOverMs: number[] = [];
  const closes: number[] = [];
  for (let i = 0; i + 1 < chain.length; i++) {
    const last = updates[i][updates[i].length - 1];
    const first = updates[i + 1][0];
    if (last && first) handOverMs.push(round(first.at - last.at));
    const closed = chain[i].events.find((e) => e.type === 'WorkflowExecutionContinuedAsNew');
    if (closed) closes.push(closed.at);
  }
  const spans = (s: Sent) => closes.some((at) => wallClock(s.start) <= at && at <= wallClock(s.end));
  return {
    executions: chain.length,
    updatesPerExecution: updates.map((u) => u.length),
    eventsPerExecution: chain.map((x) => x.events.length),
    handOverMs,
    continuedWithBytes: chain.slice(0, -1).map((x) => x.continuedWithBytes),
    spanningLatency: summarize(ok.filter(spans).map((s) => s.end - s.start)),
    otherLatency: summarize(ok.filter((s) => !spans(s)).map((s) => s.end - s.start)),
  };
}

function rateByTenth(ok: Sent[], start: number, durationMs: number): number[] {
  const counts = Array.from({ length: 10 }, () => 0);
  for (const s of ok) counts[Math.min(9, Math.floor(((s.end - start) / durationMs) * 10))] += 1;
  return counts.map((n) => Math.round(n / (durationMs / 10 / 1000)));
}

/**
 * CPU seconds so far of this process and of the dev server (a child process named `temporal`, read from /proc; NaN
 * where there is no /proc).
 */
export function cpuSnapshot(): { process: number; server: number } {
  const { user, system } = process.cpuUsage();
  let server = NaN;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = readProcStat(Number(pid));
      if (stat?.name === 'temporal' && stat.parent === process.pid) server = stat.cpuSeconds;
    }
  } catch {
    // No /proc: the server's share stays unknown.
  }
  return { process: (user + system) / 1e6, server };
}

/** CPU seconds so far of process `pid` (user + system, from /proc); NaN when it cannot be read. */
export function processCpuSeconds(pid: number | undefined): number {
  return pid === undefined ? NaN : (readProcStat(pid)?.cpuSeconds ?? NaN);
}

function readProcStat(pid: number): { name: string; parent: number; cpuSeconds: number } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // Gone, or no /proc.
  }
  const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[1] is the parent pid; [11] and [12] are user and system time in clock ticks (100 per second).
  return { name, parent: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100 };
}

const round = (x: number) => Math.round(x * 100) / 100;
