/**
 * (c) History per one-step turn (events and bytes), and the history helpers the latency benches use to split a turn into
 * server-side segments (event times are the server's wall clock; this process maps `performance.now()` onto the same
 * clock with `performance.timeOrigin`).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import type { ThreadTarget } from '../protocol/schemas';
import { threadKey } from '../protocol/ids';
import { watchTurn, withTimeout, type BenchEnv } from './env';

type RawHistory = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
type RawEvent = NonNullable<RawHistory['events']>[number];

/** A history event reduced to what the benches read. `at` is epoch milliseconds with sub-millisecond precision. */
export interface HistoryEvent {
  id: number;
  type: string;
  at: number;
  /** ActivityTaskScheduled: the activity's name. */
  activityType?: string;
  /** ActivityTaskStarted/Completed: the id of the ActivityTaskScheduled event. */
  scheduledId?: number;
  /** ActivityTaskScheduled: bytes of the activity's input payloads. */
  inputBytes?: number;
}

function toEvent(raw: RawEvent): HistoryEvent {
  const attributes = raw.attributes ?? 'unknownEventAttributes';
  const type = attributes.replace(/EventAttributes$/, '').replace(/^./, (c) => c.toUpperCase());
  const seconds = Number(raw.eventTime?.seconds ?? 0);
  const event: HistoryEvent = { id: Number(raw.eventId), type, at: seconds * 1000 + (raw.eventTime?.nanos ?? 0) / 1e6 };
  const activityType = raw.activityTaskScheduledEventAttributes?.activityType?.name;
  if (activityType) {
    event.activityType = activityType;
    const payloads = raw.activityTaskScheduledEventAttributes?.input?.payloads ?? [];
    event.inputBytes = payloads.reduce((sum, p) => sum + (p.data?.length ?? 0), 0);
  }
  const scheduledId =
    raw.activityTaskStartedEventAttributes?.scheduledEventId ??
    raw.activityTaskCompletedEventAttributes?.scheduledEventId;
  if (scheduledId != null) event.scheduledId = Number(scheduledId);
  return event;
}

/**
 * The thread's history once it is idle again: no workflow task and no activity pending (the `finish` event a
 * subscriber sees is published by a local activity, before the workflow task that records it completes).
 */
export async function settledHistory(
  env: BenchEnv,
  target: ThreadTarget,
  timeoutMs = 10_000,
): Promise<{ events: HistoryEvent[]; bytes: number }> {
  const handle = env.client.temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { raw } = await handle.describe();
    if (!raw.pendingWorkflowTask && (raw.pendingActivities?.length ?? 0) === 0) {
      const events = await eventsOf(handle);
      return { events, bytes: Number(raw.workflowExecutionInfo?.historySizeBytes ?? NaN) };
    }
    if (Date.now() > deadline) throw new Error(`Thread ${handle.workflowId} did not settle within ${timeoutMs} ms.`);
    await sleep(5);
  }
}

/** A workflow's history so far, reduced to what the benches read. */
export async function eventsOf(handle: WorkflowHandle): Promise<HistoryEvent[]> {
  return ((await handle.fetchHistory()).events ?? []).map(toEvent);
}

/** The first event at or after index `from` of `type` that satisfies `match`. */
export function findEvent(
  events: HistoryEvent[],
  from: number,
  type: string,
  match: (event: HistoryEvent) => boolean = () => true,
): HistoryEvent {
  const found = events.slice(from).find((e) => e.type === type && match(e));
  if (!found) throw new Error(`No ${type} event after #${from}: ${events.map((e) => e.type).join(', ')}`);
  return found;
}

/** The ActivityTaskStarted/Completed event of the `nth` (from 0) `runStep` scheduled at or after index `from`. */
export function stepEvent(events: HistoryEvent[], from: number, type: string, nth = 0): HistoryEvent {
  const scheduled = events
    .slice(from)
    .filter((e) => e.type === 'ActivityTaskScheduled' && e.activityType === 'runStep');
  const step = scheduled[nth];
  if (!step) throw new Error(`No runStep #${nth} after event #${from}.`);
  return findEvent(events, from, type, (e) => e.scheduledId === step.id);
}

/** `marks[i + 1] - marks[i]` for each named segment: the time between consecutive marks. */
export function splitAt<N extends string>(names: readonly N[], marks: number[]): Record<N, number> {
  return Object.fromEntries(names.map((name, i) => [name, marks[i + 1] - marks[i]])) as Record<N, number>;
}

export interface HistoryResult {
  threads: number;
  turnsPerThread: number;
  /** Size of each user message (JSON-free text), so byte growth per turn can be read against it. */
  messageBytes: number;
  /** `eventsPerTurn[turn][thread]`: events each one-step turn added (turn 0 includes the workflow start). */
  eventsPerTurn: number[][];
  /** `bytesPerTurn[turn][thread]`: history bytes each turn added (server's `historySizeBytes`). */
  bytesPerTurn: number[][];
  /** `largestInputPerTurn[turn][thread]`: the largest activity input the turn scheduled, in bytes (the step's, so far). */
  largestInputPerTurn: number[][];
  /** The event types the second turn added, in order. */
  laterTurnTypes: string[];
}

/** `turnsPerThread` one-step turns on each of `threads` fresh threads; what each turn added to history. */
export async function benchHistory(
  env: BenchEnv,
  { threads, turnsPerThread, messageBytes = 1_000 }: { threads: number; turnsPerThread: number; messageBytes?: number },
): Promise<HistoryResult> {
  const eventsPerTurn: number[][] = Array.from({ length: turnsPerThread }, () => []);
  const bytesPerTurn: number[][] = Array.from({ length: turnsPerThread }, () => []);
  const largestInputPerTurn: number[][] = Array.from({ length: turnsPerThread }, () => []);
  let laterTurnTypes: string[] = [];
  for (let i = 0; i < threads; i++) {
    const target = { resourceId: 'bench', threadId: `history-${randomUUID()}` };
    let before = { events: [] as HistoryEvent[], bytes: 0 };
    for (let turn = 0; turn < turnsPerThread; turn++) {
      const sub = env.agent.subscribeToThread(target);
      try {
        const watching = watchTurn(sub.stream);
        const marker = `history ${randomUUID()} `;
        await env.agent.sendMessage(marker.padEnd(messageBytes, 'x'), target);
        await withTimeout(watching, 'a history turn');
      } finally {
        sub.unsubscribe();
      }
      const after = await settledHistory(env, target);
      eventsPerTurn[turn].push(after.events.length - before.events.length);
      bytesPerTurn[turn].push(after.bytes - before.bytes);
      const added = after.events.slice(before.events.length);
      largestInputPerTurn[turn].push(Math.max(0, ...added.map((e) => e.inputBytes ?? 0)));
      if (turn === 1) laterTurnTypes = after.events.slice(before.events.length).map((e) => e.type);
      before = after;
    }
  }
  return { threads, turnsPerThread, messageBytes, eventsPerTurn, bytesPerTurn, largestInputPerTurn, laterTurnTypes };
}
