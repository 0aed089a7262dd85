/**
 * (h) Notification ingest (issue 6, part 7): webhook-style traffic into many threads' inboxes. Every call of
 * `sendNotificationSignal` carries one notification; a fixed number of calls is kept in flight over all threads
 * (round-robin, so each thread sees a share of them; the client itself keeps at most 8 in flight per thread). Within
 * a thread, consecutive notifications share a dedupe key in runs of `dedupeRun` (notification i of a thread carries
 * `dedupeKey: k${Math.floor(i / dedupeRun)}`, with the source and kind of that key), and priorities follow a fixed,
 * shuffled mix. The threads use a short digest window and the scripted model server, which answers at once.
 *
 * Measured: accept throughput and latency, the inbox records the sends created (vs notifications sent), the model
 * wakes they caused (runs started, vs one per notification) and the model requests, what the model was shown (full
 * notifications and digests), and the history events of every execution of every thread per notification. Checked:
 * nothing lost (the coalesced counts of all records add up to the notifications sent, and each record's count is the
 * number of sends answered with its id), no failed send, every thread settled (idle, nothing due).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { NotificationInput, NotificationPriority, ThreadTarget } from '../protocol/schemas';
import { connect, type ThreadlineClient } from '../client/connect';
import { threadKey } from '../protocol/ids';
import type { NotificationRecord } from '../protocol/views';
import type { InputMessage } from '../protocol/messages';
import type { NotificationOutcome } from '../protocol/views';
import { defaultThreadConfig } from '../protocol/thread-config';
import { workerLog, type BenchEnv } from './env';
import { countClientErrors, eventTypeName, historyChain, mapLimit } from './temporal-helpers';
import { summarize, type Summary } from './stats';

export interface NotificationsSizes {
  /** Notifications sent in all, one per call, spread round-robin over `threads`. */
  notifications: number;
  threads: number;
  /** Calls kept in flight over all threads. */
  concurrency: number;
  /** Consecutive notifications of a thread that share a dedupe key. */
  dedupeRun: number;
  /** The threads' digest window (thread config `digestWindowMs`; the bench agent sets none of its own). */
  digestWindowMs: number;
  /** No send starts after this long (those in flight finish), so a collapse cannot stall the bench. */
  maxSeconds: number;
  /** How long the threads may take to settle after the last send was answered. */
  settleSeconds: number;
  /** Start send n at n / ratePerSecond seconds (a fixed schedule; a send does not wait for the one before); unset: as fast as the calls in flight allow. */
  ratePerSecond?: number;
}

export interface NotificationsResult {
  /** The schedule the sends kept, if paced. */
  ratePerSecond?: number;
  notifications: number;
  threads: number;
  concurrency: number;
  dedupeRun: number;
  digestWindowMs: number;
  /** Share of each priority in the mix (exact counts, shuffled with a fixed seed). */
  priorityMix: Record<NotificationPriority, number>;
  /** `source/kind` of the keys, in turn: key group g of thread t uses stream (t + g) mod their number. */
  streams: string[];
  /** Sends made (fewer than `notifications` if the time budget ran out) and accepted. */
  sent: number;
  accepted: number;
  failed: number;
  stoppedAtBudget: boolean;
  /** First call to last answer. */
  durationMs: number;
  acceptedPerSecond: number;
  acceptLatency: Summary;
  /** The first call to each thread (update-with-start creates its workflow) vs the later ones. */
  firstToThreadLatency: Summary;
  laterLatency: Summary;
  /** What the thread answered per send, `action/coalesced|new`. */
  outcomes: Record<string, number>;
  /** Per priority sent: the actions the threads chose. */
  actionsByPriority: Record<string, Record<string, number>>;
  /** Distinct dedupe keys sent over all threads: the fewest records full dedupe could make. */
  distinctKeys: number;
  records: {
    /** Sum over threads of `getThread().inbox.total`. */
    created: number;
    /** Records read back with `listNotifications` (every page). */
    listed: number;
    /** Sends answered `coalesced: false`. */
    newAnswers: number;
    coalescedSends: number;
    byStatus: Record<string, number>;
    /** Records per dedupe key: how many each key ended up as. */
    perKey: Summary;
    /** Sum of `coalescedCount` over every record (= notifications accepted when nothing is lost). */
    coalescedCountSum: number;
  };
  wakes: {
    /** Runs the threads started (sum of `runsCompleted` once settled): each is one model wake. */
    runs: number;
    /** Notifications per run (one wake per notification would be 1). */
    notificationsPerRun: number;
    /** Chat-completion requests the model server received meanwhile (a run may take more than one step). */
    modelRequests: number;
    /** What the threads stored for the model: full `<notification>` deliveries and `<notification-summary>` digests. */
    fullDeliveries: number;
    digests: number;
    /** Digests stored without a run (low-only: they do not wake the thread). */
    digestsWithoutRun: number;
    /** Records that were summarized at least once (`summarySignalId`). */
    recordsSummarized: number;
  };
  history: {
    /** Executions over all threads (a thread that continued as new has several). */
    executions: number;
    maxExecutionsPerThread: number;
    events: number;
    eventsPerNotification: number;
    eventsPerThread: Summary;
    eventsByType: Record<string, number>;
    /** `WorkflowTaskTimedOut` events by their timeout type (`TIMEOUT_TYPE_SCHEDULE_TO_START`, …). */
    taskTimeoutsByType: Record<string, number>;
  };
  /** From the last answer until every thread was idle with nothing due. */
  settleMs: number;
  /** Errors the Temporal client threw to Threadline's retry loop (retried or not), by kind. */
  clientErrors: Record<string, number>;
  /** Worker (SDK and Core) warnings and errors logged during the bench, by message. */
  workerLog: Record<string, number>;
  checks: {
    /** Sum of `coalescedCount` over all records = notifications accepted. */
    nothingLost: boolean;
    /** Every record's `coalescedCount` = the sends answered with its id, and those sends all carried its key. */
    countsMatchAnswers: boolean;
    /** Records listed = `inbox.total` = sends answered as new. */
    recordsAgree: boolean;
    /** Every thread idle, nothing queued, no pending record due later, no workflow task or activity in flight. */
    settled: boolean;
  };
  ok: boolean;
  problems: string[];
}

interface Sent {
  thread: number;
  /** Position of the notification in its thread (sets its key). */
  index: number;
  priority: NotificationPriority;
  key: string;
  start: number;
  end: number;
  outcome?: NotificationOutcome;
  error?: string;
}

/** Streams a key stands for: a key's notifications share source and kind (coalescing needs both equal). */
const streams = [
  { source: 'github', kind: 'ci-status' },
  { source: 'github', kind: 'pr-review' },
  { source: 'slack', kind: 'mention' },
  { source: 'email', kind: 'message' },
  { source: 'linear', kind: 'issue-updated' },
  { source: 'sentry', kind: 'error-alert' },
  { source: 'calendar', kind: 'reminder' },
] as const;

const priorityMix: Record<NotificationPriority, number> = { urgent: 0.05, high: 0.15, medium: 0.4, low: 0.4 };
const priorities = Object.keys(priorityMix) as NotificationPriority[];

export async function benchNotifications(
  env: BenchEnv,
  sizes: NotificationsSizes,
  progress: (line: string) => void = () => undefined,
): Promise<NotificationsResult> {
  const tag = randomUUID().slice(0, 8);
  const targets: ThreadTarget[] = Array.from({ length: sizes.threads }, (_, t) => ({
    resourceId: 'bench',
    threadId: `notifications-${tag}-${t}`,
  }));
  const perThread = Math.ceil(sizes.notifications / sizes.threads);
  const mix = shuffledMix(sizes.notifications, 0x5eed);
  // Send order: notification i of every thread before notification i + 1 of any.
  const plan = Array.from({ length: sizes.notifications }, (_, n) => ({
    thread: n % sizes.threads,
    index: Math.floor(n / sizes.threads),
    priority: mix[n],
  }));
  const problems: string[] = [];

  // A connection of our own (same server, bus and task queue): threads made with the short digest window, history
  // reads above gRPC's default 4 MB, and the client errors counted on a Temporal client no one else uses.
  const connection = await Connection.connect({
    address: (env.client.temporal.connection as Connection).options.address,
    channelArgs: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
  });
  try {
    const temporal = new Client({ connection, namespace: env.client.temporal.options.namespace });
    const client = await connect({
      client: temporal,
      bus: env.client.bus,
      taskQueue: env.client.taskQueue,
      threadConfig: { digestWindowMs: sizes.digestWindowMs },
    });
    const agent = client.agent(env.agent.agentId);
    const modelRequestsBefore = env.probe.server.requests.length;
    const workerLogBefore = new Map(workerLog);
    const clientErrors = countClientErrors(temporal.workflow);

    const sent: Sent[] = [];
    let next = 0;
    let stoppedAtBudget = false;
    const scheduleStart = performance.now();
    const deadline = scheduleStart + sizes.maxSeconds * 1000;
    const ticker = setInterval(() => {
      const answered = sent.filter((s) => Number.isFinite(s.end)).length;
      const failed = sent.filter((s) => s.error).length;
      progress(`  ${answered} of ${sizes.notifications} answered (${failed} failed)…`);
    }, 15_000);
    const sender = async () => {
      for (let n = next++; n < plan.length; n = next++) {
        if (sizes.ratePerSecond) {
          const wait = scheduleStart + (n * 1000) / sizes.ratePerSecond - performance.now();
          if (wait > 0) await sleep(wait);
        }
        if (performance.now() > deadline) {
          stoppedAtBudget = true;
          return;
        }
        const { thread, index, priority } = plan[n];
        const group = Math.floor(index / sizes.dedupeRun);
        const key = `k${group}`;
        const stream = streams[(thread + group) % streams.length];
        const record: Sent = { thread, index, priority, key, start: performance.now(), end: NaN };
        sent.push(record);
        try {
          const result = await agent.sendNotificationSignal(
            notification(stream, key, priority, thread, index),
            targets[thread],
          );
          record.outcome = result.notifications[0];
        } catch (err) {
          record.error = (err as Error).message;
        }
        record.end = performance.now();
      }
    };
    try {
      await Promise.all(Array.from({ length: sizes.concurrency }, sender));
    } finally {
      clearInterval(ticker);
    }
    const lastAnswer = Math.max(...sent.map((s) => s.end));
    const firstCall = Math.min(...sent.map((s) => s.start));
    const ok = sent.filter((s) => s.outcome);
    const failed = sent.filter((s) => s.error);
    if (failed.length > 0) problems.push(`${failed.length} sends failed, e.g. ${failed[0].error}`);
    if (stoppedAtBudget) problems.push(`stopped at the ${sizes.maxSeconds} s budget after ${sent.length} sends`);

    // Settle: digests go out a window after the last send and may wake the threads again.
    progress(`  ${ok.length} accepted in ${((lastAnswer - firstCall) / 1000).toFixed(1)} s; waiting for the threads…`);
    const settled = await untilSettled(client, targets, sizes.settleSeconds * 1000);
    const settleMs = performance.now() - lastAnswer;
    if (!settled.ok) problems.push(`not settled after ${sizes.settleSeconds} s: ${settled.why}`);
    clientErrors.restore();
    const modelRequests = env.probe.server.requests.length - modelRequestsBefore;

    // Read back every thread: view, every record, stored messages, and the histories of its whole chain.
    const threads = await mapLimit(targets, 16, async (target) => ({
      view: await client.getThread(target),
      records: await allRecords(client, target),
      messages: (await client.getMessages(target, { limit: defaultThreadConfig.maxStoredMessages }))?.messages ?? [],
      chain: (await historyChain(temporal.workflow, threadKey(target.resourceId, target.threadId))).map((x) => ({
        runId: x.runId,
        types: x.events.map(eventTypeName),
        taskTimeouts: x.events.flatMap((e) => {
          const type = e.workflowTaskTimedOutEventAttributes?.timeoutType;
          return type == null ? [] : [proto.temporal.api.enums.v1.TimeoutType[type] ?? String(type)];
        }),
      })),
    }));

    // Records.
    const allListed = threads.flatMap((t) => t.records);
    const created = threads.reduce((sum, t) => sum + (t.view?.inbox.total ?? 0), 0);
    const newAnswers = ok.filter((s) => !s.outcome!.coalesced).length;
    const coalescedCountSum = allListed.reduce((sum, r) => sum + r.coalescedCount, 0);
    const byStatus: Record<string, number> = {};
    for (const r of allListed) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    const nothingLost = coalescedCountSum === ok.length;
    if (!nothingLost) problems.push(`coalescedCount sums to ${coalescedCountSum} for ${ok.length} accepted sends`);
    const recordsAgree = allListed.length === created && created === newAnswers;
    if (!recordsAgree) {
      problems.push(`${allListed.length} records listed, inbox totals ${created}, ${newAnswers} sends answered new`);
    }
    let countsMatchAnswers = true;
    threads.forEach(({ records }, t) => {
      const answers = new Map<string, Sent[]>();
      for (const s of ok.filter((x) => x.thread === t)) {
        answers.set(s.outcome!.id, [...(answers.get(s.outcome!.id) ?? []), s]);
      }
      for (const r of records) {
        const mine = answers.get(r.id) ?? [];
        const match = mine.length === r.coalescedCount && mine.every((s) => s.key === r.dedupeKey);
        if (!match && countsMatchAnswers) {
          problems.push(
            `thread ${t} record ${r.id} (${r.dedupeKey}): coalescedCount ${r.coalescedCount}, ` +
              `${mine.length} sends answered with it (keys ${[...new Set(mine.map((s) => s.key))].join(', ')})`,
          );
        }
        countsMatchAnswers &&= match;
      }
      const unknown = [...answers.keys()].filter((id) => !records.some((r) => r.id === id));
      if (unknown.length > 0 && countsMatchAnswers) {
        problems.push(`thread ${t}: sends answered with ids no record has: ${unknown.slice(0, 5).join(', ')}`);
      }
      countsMatchAnswers &&= unknown.length === 0;
    });
    const recordsPerKey = new Map<string, number>();
    for (const s of sent) recordsPerKey.set(`${s.thread}/${s.key}`, 0);
    threads.forEach(({ records }, t) => {
      for (const r of records)
        recordsPerKey.set(`${t}/${r.dedupeKey}`, (recordsPerKey.get(`${t}/${r.dedupeKey}`) ?? 0) + 1);
    });

    // Wakes and what the model was shown.
    const runs = threads.reduce((sum, t) => sum + (t.view?.runsCompleted ?? 0), 0);
    const inputs = threads.flatMap((t) => t.messages).filter((m): m is InputMessage => m.role === 'user');
    const full = inputs.filter((m) => m.type === 'notification' && m.tagName === undefined);
    const digests = inputs.filter((m) => m.type === 'notification' && m.tagName === 'notification-summary');

    // History.
    const executions = threads.flatMap((t) => t.chain);
    const eventsByType: Record<string, number> = {};
    for (const x of executions) for (const type of x.types) eventsByType[type] = (eventsByType[type] ?? 0) + 1;
    const events = executions.reduce((sum, x) => sum + x.types.length, 0);
    const failures = Object.keys(eventsByType).filter((type) =>
      /Failed|TimedOut|Terminated|ExecutionCanceled|ActivityTaskCanceled/.test(type),
    );
    if (failures.length > 0) {
      problems.push(`failures in history: ${failures.map((type) => `${eventsByType[type]} × ${type}`).join(', ')}`);
    }

    const outcomes: Record<string, number> = {};
    const actionsByPriority: Record<string, Record<string, number>> = {};
    for (const s of sent) {
      const key = s.outcome ? `${s.outcome.action}/${s.outcome.coalesced ? 'coalesced' : 'new'}` : 'failed';
      outcomes[key] = (outcomes[key] ?? 0) + 1;
      const row = (actionsByPriority[s.priority] ??= {});
      const action = s.outcome?.action ?? 'failed';
      row[action] = (row[action] ?? 0) + 1;
    }
    const workerLogAdded = Object.fromEntries(
      [...workerLog].flatMap(([message, n]) => {
        const added = n - (workerLogBefore.get(message) ?? 0);
        return added > 0 ? [[message, added]] : [];
      }),
    );
    const durationMs = lastAnswer - firstCall;
    const checks = { nothingLost, countsMatchAnswers, recordsAgree, settled: settled.ok };
    return {
      ratePerSecond: sizes.ratePerSecond,
      notifications: sizes.notifications,
      threads: sizes.threads,
      concurrency: sizes.concurrency,
      dedupeRun: sizes.dedupeRun,
      digestWindowMs: sizes.digestWindowMs,
      priorityMix,
      streams: streams.map((x) => `${x.source}/${x.kind}`),
      sent: sent.length,
      accepted: ok.length,
      failed: failed.length,
      stoppedAtBudget,
      durationMs: round(durationMs),
      acceptedPerSecond: round((ok.length / durationMs) * 1000),
      acceptLatency: summarize(ok.map((s) => s.end - s.start)),
      firstToThreadLatency: summarize(ok.filter((s) => s.index === 0).map((s) => s.end - s.start)),
      laterLatency: summarize(ok.filter((s) => s.index > 0).map((s) => s.end - s.start)),
      outcomes,
      actionsByPriority,
      distinctKeys: Math.ceil(perThread / sizes.dedupeRun) * sizes.threads,
      records: {
        created,
        listed: allListed.length,
        newAnswers,
        coalescedSends: ok.length - newAnswers,
        byStatus,
        perKey: summarize([...recordsPerKey.values()]),
        coalescedCountSum,
      },
      wakes: {
        runs,
        notificationsPerRun: round(ok.length / Math.max(1, runs)),
        modelRequests,
        fullDeliveries: full.length,
        digests: digests.length,
        digestsWithoutRun: digests.filter((m) => m.runId === undefined).length,
        recordsSummarized: allListed.filter((r) => r.summarySignalId !== undefined).length,
      },
      history: {
        executions: executions.length,
        maxExecutionsPerThread: Math.max(...threads.map((t) => t.chain.length)),
        events,
        eventsPerNotification: round(events / Math.max(1, ok.length)),
        eventsPerThread: summarize(threads.map((t) => t.chain.reduce((sum, x) => sum + x.types.length, 0))),
        eventsByType,
        // Why each `WorkflowTaskTimedOut` timed out: schedule-to-start is a sticky queue's task that its worker did not
        // poll in time (it moves to the normal queue, and the next worker replays); start-to-close is a task a worker
        // took and did not finish.
        taskTimeoutsByType: executions
          .flatMap((x) => x.taskTimeouts)
          .reduce<Record<string, number>>((counts, type) => ({ ...counts, [type]: (counts[type] ?? 0) + 1 }), {}),
      },
      settleMs: round(settleMs),
      clientErrors: clientErrors.counts,
      workerLog: workerLogAdded,
      checks,
      ok: problems.length === 0,
      problems,
    };
  } finally {
    await connection.close();
  }
}

/** One webhook event: its key's source and kind, the priority of the mix, a short summary and payload. */
function notification(
  stream: (typeof streams)[number],
  key: string,
  priority: NotificationPriority,
  thread: number,
  index: number,
): NotificationInput {
  return {
    source: stream.source,
    kind: stream.kind,
    priority,
    summary: `${stream.source} ${stream.kind} ${key}: event ${index} on thread ${thread}.`,
    payload: { thread, index, key },
    dedupeKey: key,
  };
}

/** `n` priorities in the exact proportions of the mix (the rest low), shuffled with a fixed seed. */
function shuffledMix(n: number, seed: number): NotificationPriority[] {
  const out: NotificationPriority[] = [];
  for (const p of priorities) {
    if (p === 'low') continue;
    out.push(...Array.from({ length: Math.round(n * priorityMix[p]) }, () => p));
  }
  while (out.length < n) out.push('low');
  const random = mulberry32(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every record of a thread, newest first, page by page. */
async function allRecords(
  client: ThreadlineClient,
  target: ThreadTarget,
  status?: NotificationRecord['status'][],
): Promise<NotificationRecord[]> {
  const all: NotificationRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listNotifications(target, {
      limit: 200,
      ...(status && { status }),
      ...(cursor && { cursor }),
    });
    if (!page) break;
    all.push(...page.notifications);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return all;
}

/**
 * Waits until every thread is idle with nothing queued, no pending record waits for a digest, a deferred delivery or
 * an idle thread, and no workflow task or activity is in flight: nothing more can happen by itself.
 */
async function untilSettled(
  client: ThreadlineClient,
  targets: ThreadTarget[],
  timeoutMs: number,
): Promise<{ ok: boolean; why: string }> {
  const deadline = performance.now() + timeoutMs;
  let why = '';
  for (;;) {
    const unsettled = (await mapLimit(targets, 16, (target) => settledWhy(client, target))).filter(
      (reason): reason is string => reason !== null,
    );
    if (unsettled.length === 0) return { ok: true, why: '' };
    why = `${unsettled.length} threads, e.g. ${unsettled[0]}`;
    if (performance.now() > deadline) return { ok: false, why };
    await sleep(250);
  }
}

async function settledWhy(client: ThreadlineClient, target: ThreadTarget): Promise<string | null> {
  const view = await client.getThread(target);
  if (!view) return `${target.threadId}: no such thread`;
  if (view.status !== 'idle' || view.queue.length > 0)
    return `${target.threadId}: ${view.status}, ${view.queue.length} queued`;
  const pending = await allRecords(client, target, ['pending']);
  const due = pending.filter((r) => r.summaryAt !== undefined || r.deliverAt !== undefined || r.fullWhenIdle);
  if (due.length > 0) return `${target.threadId}: ${due.length} pending records due later`;
  const description = await client.temporal.workflow
    .getHandle(threadKey(target.resourceId, target.threadId))
    .describe();
  if (description.raw.pendingWorkflowTask) return `${target.threadId}: a workflow task in flight`;
  if ((description.raw.pendingActivities ?? []).length > 0) return `${target.threadId}: an activity in flight`;
  return null;
}

const round = (x: number) => Math.round(x * 100) / 100;
