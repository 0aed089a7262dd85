/**
 * (g) State-signal ingest to one active thread (issue 5, part 7): a producer, such as a browser watcher, sends its
 * lane's current state at a fixed rate whether or not it changed, so most sends repeat the state before. The thread
 * is active throughout (its one step streams a slow reply that never ends by itself), so every new state is
 * delivered to the run and every repeat must be skipped.
 *
 * Measured: how many sends were accepted and skipped, accept latency (call → result) for each, and what the thread's
 * workflow history gained. A skipped state is refused by the update validator, so it should never reach history;
 * this is checked by decoding every accepted update's input. At the end the run is aborted: the states it had not
 * yet shown the model start the next run, and the thread's stored messages are checked to hold each accepted state.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ThreadInput, ThreadTarget } from '../protocol/schemas';
import { threadKey } from '../protocol/ids';
import { defaultThreadConfig } from '../protocol/thread-config';
import { withTimeout, type BenchEnv } from './env';
import { eventTypeName, historyChain } from './temporal-helpers';
import { summarize, type Summary } from './stats';

export interface StateIngestSizes {
  /** Sends per second, on a fixed schedule (open loop: a slow answer does not delay the next send). */
  ratePerSecond: number;
  seconds: number;
  /** Share of sends that repeat the lane's state before: 0.9 = the state changes on every 10th send. */
  duplicateShare: number;
}

export interface StateIngestResult {
  ratePerSecond: number;
  seconds: number;
  duplicateShare: number;
  contentsBytes: number;
  /** Sends made, and per second from the first to the last send's start (the schedule slips on a busy machine). */
  sent: number;
  sendRate: number;
  /** How late each send started against its schedule. */
  scheduleLagMs: Summary;
  /** States the producer had: what `accepted` is when every send arrives in order. */
  distinctStates: number;
  /** Not skipped (`deliver` while the thread is active). */
  accepted: number;
  skipped: number;
  failed: number;
  /** Results by action (and `failed`). */
  actions: Record<string, number>;
  acceptLatency: { accepted: Summary; skipped: Summary };
  history: {
    /** Events the thread's history gained from the first send until every send was answered and the thread settled. */
    eventsAdded: number;
    eventsPerAcceptedState: number;
    eventsByType: Record<string, number>;
    /** State updates accepted into history in that window (each must be an accepted send's, once). */
    stateUpdates: number;
    /** Skipped sends found anywhere in the thread's history (must be 0). */
    skippedInHistory: number;
    /** Every accepted send's input is in history exactly once, and nothing else state-like is. */
    acceptedExactlyOnce: boolean;
    /** Workflow executions of the thread's chain at the end (1: it never continued as new). */
    executions: number;
  };
  checks: {
    /** The run that started before the first send was still running after the last one was answered. */
    activeThroughout: boolean;
    /** The lane's version after the sends (= accepted, when nothing else touched the lane). */
    laneVersion: number;
    /** `state-updated` events a subscriber saw (= accepted: a skipped state announces nothing). */
    stateUpdatedEvents: number;
    /** Stored state messages once the aborted run's pending states had run (= accepted). */
    storedStates: number;
  };
  ok: boolean;
  problems: string[];
}

interface Sent {
  index: number;
  /** The input id, chosen here so that a failed send can be looked up in history too. */
  id: string;
  scheduledAt: number;
  start: number;
  end: number;
  action?: string;
  version?: number;
  error?: string;
}

const contentsBytes = 120;
/** The slow reply: a chunk every 250 ms, then no end until the bench aborts the run. */
const slowChunkDelayMs = 250;

export async function benchStateIngest(
  env: BenchEnv,
  sizes: StateIngestSizes,
  progress: (line: string) => void = () => undefined,
): Promise<StateIngestResult> {
  const target: ThreadTarget = { resourceId: 'bench', threadId: `state-ingest-${randomUUID()}` };
  const workflowId = threadKey(target.resourceId, target.threadId);
  const marker = `state-ingest ${randomUUID()}`;
  const problems: string[] = [];

  // Only the first request of the thread gets the slow reply; the run that follows the abort is answered at once.
  const reply = env.probe.reply;
  let slowReplyGiven = false;
  env.probe.reply = (req) => {
    if (slowReplyGiven || !JSON.stringify(req.messages).includes(marker)) return reply(req);
    slowReplyGiven = true;
    const chunks = Math.ceil(((sizes.seconds + 60) * 1000) / slowChunkDelayMs);
    return { text: Array.from({ length: chunks }, (_, i) => `s${i} `), chunkDelayMs: slowChunkDelayMs, hang: true };
  };
  const sub = env.agent.subscribeToThread(target);
  let stateUpdatedEvents = 0;
  let streaming!: () => void;
  const firstDelta = new Promise<void>((resolve) => (streaming = resolve));
  const reading = (async () => {
    for await (const event of sub.stream) {
      if (event.type === 'text-delta') streaming();
      if (event.type === 'state-updated') stateUpdatedEvents += 1;
    }
  })();
  reading.catch(() => undefined); // ends when unsubscribed

  try {
    // The thread becomes active: one step whose reply streams slowly and never finishes by itself.
    const wake = await env.agent.sendMessage(marker, target);
    await withTimeout(firstDelta, 'the slow reply to start streaming', 60_000);
    await untilNoWorkflowTask(env, workflowId);
    const eventsBefore = (await executionChain(env, workflowId)).flatMap((x) => x.events).length;

    const total = Math.round(sizes.ratePerSecond * sizes.seconds);
    const period = Math.max(1, Math.round(1 / (1 - sizes.duplicateShare)));
    const idPrefix = `state-${randomUUID().slice(0, 8)}`;
    const sent: Sent[] = [];
    const pending: Promise<void>[] = [];
    const ticker = setInterval(() => {
      const answered = sent.filter((s) => Number.isFinite(s.end)).length;
      progress(`  ${sent.length} of ${total} sent, ${answered} answered…`);
    }, 10_000);
    const t0 = performance.now();
    try {
      for (let index = 0; index < total; index++) {
        const scheduledAt = t0 + (index * 1000) / sizes.ratePerSecond;
        const wait = scheduledAt - performance.now();
        if (wait > 0) await sleep(wait);
        const state = Math.floor(index / period);
        const record: Sent = { index, id: `${idPrefix}-${index}`, scheduledAt, start: performance.now(), end: NaN };
        sent.push(record);
        pending.push(
          env.agent
            .sendStateSignal(
              {
                id: 'browser',
                mode: 'snapshot',
                cacheKey: `browser:https://example.com/page-${state}`,
                contents: `Browser is open. Active tab URL: https://example.com/page-${state}.`.padEnd(
                  contentsBytes,
                  ' ',
                ),
                value: { activeUrl: `https://example.com/page-${state}`, open: true },
              },
              { ...target, ifIdle: { behavior: 'persist' } },
              { id: record.id },
            )
            .then(
              (result) => {
                record.action = result.action;
                record.version = result.version;
              },
              (err: Error) => {
                record.error = err.message;
              },
            )
            .finally(() => (record.end = performance.now())),
        );
      }
      await Promise.all(pending);
    } finally {
      clearInterval(ticker);
    }
    await untilNoWorkflowTask(env, workflowId);

    const view = await env.client.getThread(target);
    const activeThroughout = view?.status === 'active' && view.activeRun?.runId === wake.runId;
    if (!activeThroughout) problems.push(`the thread was not active with the first run at the end (${view?.status})`);
    const laneVersion = view?.lanes.find((lane) => lane.id === 'browser')?.version ?? 0;

    const chain = await executionChain(env, workflowId);
    const window = chain.flatMap((x) => x.events).slice(eventsBefore);
    const accepted = sent.filter((s) => !s.error && s.action !== 'skipped');
    const skipped = sent.filter((s) => s.action === 'skipped');
    const failed = sent.filter((s) => s.error);
    if (failed.length > 0) problems.push(`${failed.length} sends failed, e.g. ${failed[0].error}`);
    const wrongAction = accepted.filter((s) => s.action !== 'deliver');
    if (wrongAction.length > 0) {
      problems.push(
        `${wrongAction.length} accepted sends were not delivered to the run, e.g. ${wrongAction[0].action}`,
      );
    }

    const stateIds = window.flatMap((e) => (e.input?.type === 'state' ? [e.input.id] : []));
    const timesInHistory = new Map<string, number>();
    for (const id of stateIds) timesInHistory.set(id, (timesInHistory.get(id) ?? 0) + 1);
    const acceptedIds = new Set(accepted.map((s) => s.id));
    const acceptedExactlyOnce =
      accepted.every((s) => timesInHistory.get(s.id) === 1) && stateIds.every((id) => acceptedIds.has(id));
    if (!acceptedExactlyOnce) {
      problems.push(`${stateIds.length} state updates in history for ${accepted.length} accepted sends`);
    }
    const everyInput = new Set(chain.flatMap((x) => x.events).flatMap((e) => (e.input ? [e.input.id] : [])));
    const skippedInHistory = skipped.filter((s) => everyInput.has(s.id)).length;
    if (skippedInHistory > 0) problems.push(`${skippedInHistory} skipped sends are in history`);
    if (laneVersion !== accepted.length) problems.push(`lane version ${laneVersion} for ${accepted.length} accepted`);
    const eventsByType: Record<string, number> = {};
    for (const e of window) eventsByType[e.type] = (eventsByType[e.type] ?? 0) + 1;

    // End the run: the states it has not shown the model yet start the next one (answered at once), and are stored.
    await env.agent.abortThread(target);
    await untilIdle(env, target);
    const page = await env.client.getMessages(target, { limit: defaultThreadConfig.maxStoredMessages });
    const storedStates = (page?.messages ?? []).filter((m) => (m as { type?: string }).type === 'state').length;
    if (storedStates !== accepted.length)
      problems.push(`${storedStates} stored states for ${accepted.length} accepted`);
    // Only an accepted state is announced (the next run adds none), so by now the subscriber has seen them all.
    if (stateUpdatedEvents !== accepted.length) {
      problems.push(`${stateUpdatedEvents} state-updated events for ${accepted.length} accepted`);
    }

    const starts = sent.map((s) => s.start);
    const actions: Record<string, number> = {};
    for (const s of sent) actions[s.error ? 'failed' : s.action!] = (actions[s.error ? 'failed' : s.action!] ?? 0) + 1;
    return {
      ratePerSecond: sizes.ratePerSecond,
      seconds: sizes.seconds,
      duplicateShare: sizes.duplicateShare,
      contentsBytes,
      sent: sent.length,
      sendRate: round(((sent.length - 1) / (Math.max(...starts) - Math.min(...starts))) * 1000),
      // A timer may fire a fraction of a millisecond early: that is on time.
      scheduleLagMs: summarize(sent.map((s) => Math.max(0, s.start - s.scheduledAt))),
      distinctStates: Math.ceil(total / period),
      accepted: accepted.length,
      skipped: skipped.length,
      failed: failed.length,
      actions,
      acceptLatency: {
        accepted: summarize(accepted.map((s) => s.end - s.start)),
        skipped: summarize(skipped.map((s) => s.end - s.start)),
      },
      history: {
        eventsAdded: window.length,
        eventsPerAcceptedState: round(window.length / Math.max(1, accepted.length)),
        eventsByType,
        stateUpdates: stateIds.length,
        skippedInHistory,
        acceptedExactlyOnce,
        executions: chain.length,
      },
      checks: { activeThroughout, laneVersion, stateUpdatedEvents, storedStates },
      ok: problems.length === 0,
      problems,
    };
  } finally {
    env.probe.reply = reply;
    sub.unsubscribe();
  }
}

interface ChainEvent {
  type: string;
  /** `WorkflowExecutionUpdateAccepted`: the update's input. */
  input?: ThreadInput;
}

/** Every execution of the thread's chain, oldest first (following `continuedExecutionRunId` back from the latest). */
async function executionChain(env: BenchEnv, workflowId: string): Promise<{ runId: string; events: ChainEvent[] }[]> {
  const chain = await historyChain(env.client.temporal.workflow, workflowId);
  return chain.map(({ runId, events }) => ({
    runId,
    events: events.map((e) => {
      const type = eventTypeName(e);
      const payload = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
      return payload ? { type, input: defaultPayloadConverter.fromPayload<ThreadInput>(payload) } : { type };
    }),
  }));
}

/** Resolves once no workflow task is scheduled or running: what the thread decided so far is in its history. */
async function untilNoWorkflowTask(env: BenchEnv, workflowId: string, timeoutMs = 60_000): Promise<void> {
  const handle = env.client.temporal.workflow.getHandle(workflowId);
  const deadline = performance.now() + timeoutMs;
  while ((await handle.describe()).raw.pendingWorkflowTask) {
    if (performance.now() > deadline) throw new Error(`Thread ${workflowId} kept a workflow task for ${timeoutMs} ms.`);
    await sleep(20);
  }
}

/** Resolves once the thread is idle with nothing queued. */
async function untilIdle(env: BenchEnv, target: ThreadTarget, timeoutMs = 120_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const view = await env.client.getThread(target);
    if (view?.status === 'idle' && view.queue.length === 0) return;
    if (performance.now() > deadline) throw new Error(`The thread did not go idle within ${timeoutMs} ms.`);
    await sleep(50);
  }
}

const round = (x: number) => Math.round(x * 100) / 100;
