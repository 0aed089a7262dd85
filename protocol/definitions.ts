/**
 * The thread workflow's public surface: every signal, update and query, one constant each.
 * Wire names are documented in docs/temporal-wire-format.md and versioned with the
 * payload schema in `schemas.ts`.
 *
 * The definitions are the plain `{ type, name }` objects `defineSignal` / `defineUpdate` / `defineQuery` return, built
 * here without importing @temporalio/workflow, so browser bundles of protocol/ stay small.
 */
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';
import type {
  InputResult,
  NotificationBatch,
  NotificationQuery,
  NotificationStatusRequest,
  ThreadInput,
} from './schemas';
import type { NotificationRecord, RecordPage } from './views';
import type { AbortResult, NotificationSendResult, ThreadView, ToolApproval, ToolApprovalResult } from './views';
import type { MessagesPage } from './views';
import type { StoredMessage } from './messages';

/** Fire-and-forget message: joins the active run at the next step boundary, or wakes the thread. */
export const sendMessageSignal = signal<[ThreadInput]>('sendMessage');
/** Fire-and-forget message that waits for the active run to finish. */
export const queueMessageSignal = signal<[ThreadInput]>('queueMessage');
/** Fire-and-forget signal of any type (`reactive`, `notification`, `user`, ...). */
export const sendSignalSignal = signal<[ThreadInput]>('sendSignal');

/** Any input, answered with the thread's decision (action, runId, duplicate). Used with update-with-start. */
export const submitInputUpdate = update<InputResult, [ThreadInput]>('submitInput');

/** Stops the active run (cancelling its model call and tools). Queued runs go next unless `clearPendingSignals`. */
export const abortThreadUpdate = update<AbortResult, [{ clearPendingSignals?: boolean }]>('abortThread');

/** Removes queued runs that have not started; answers the input ids actually removed. */
export const cancelQueuedUpdate = update<{ cancelledSignalIds: string[] }, [{ signalIds: string[] }]>('cancelQueued');

/** Approves or declines a tool call the run is parked on (behaviour §2.4). Unknown → rejected; decided → rejected. */
export const approveToolUpdate = update<ToolApprovalResult, [ToolApproval]>('approveTool');

/** Fire-and-forget notifications (behaviour §4): for webhook receivers in any language. Bad payloads are dropped. */
export const sendNotificationSignal = signal<[NotificationBatch]>('sendNotification');
/** Notifications answered with what the thread did with each (record id, status, action, coalesced). */
export const submitNotificationsUpdate = update<NotificationSendResult, [NotificationBatch]>('submitNotifications');
/** `seen` / `dismiss` / `archive` for inbox records; unknown ids → rejected, nothing changed. */
export const changeNotificationStatusUpdate = update<NotificationRecord[], [NotificationStatusRequest]>(
  'changeNotificationStatus',
);
/** The inbox, newest first, filtered and paged. */
export const notificationsQuery = query<RecordPage, [NotificationQuery]>('notifications');

export const threadStateQuery = query<ThreadView>('threadState');

/** Stored messages, newest last; `before` is a message id to page backwards from. */
export const threadMessagesQuery = query<MessagesPage, [{ limit?: number; before?: string }]>('threadMessages');

/**
 * The context window of the step in flight (by its thread-wide step key), for a step activity whose worker does not
 * hold the previous step's window (`StepWindow`). Internal: refused for any step but the one in flight.
 */
export const stepWindowQuery = query<StoredMessage[], [string]>('threadlineStepWindow');

function signal<Args extends unknown[]>(name: string): SignalDefinition<Args> {
  return { type: 'signal', name } as SignalDefinition<Args>;
}

function update<Ret, Args extends unknown[]>(name: string): UpdateDefinition<Ret, Args> {
  return { type: 'update', name } as UpdateDefinition<Ret, Args>;
}

function query<Ret, Args extends unknown[] = []>(name: string): QueryDefinition<Ret, Args> {
  return { type: 'query', name } as QueryDefinition<Ret, Args>;
}
