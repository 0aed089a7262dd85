/**
 * Notifications into the thread (behaviour §4.1–§4.3): a send creates or coalesces inbox records, the delivery policy
 * decides each with the thread's own state, and the dispatcher delivers what is due: deferred deliveries, full
 * deliveries that waited for an idle thread, and one digest of every record due for a summary.
 */
import type { DeliveryDecision } from '../../protocol/agent-profile';
import { ThreadRefusal, depthRefusal, refuseOversized } from '../../protocol/failures';
import type { NotificationBatch, ThreadInput } from '../../protocol/schemas';
import type { ThreadConfig } from '../../protocol/thread-config';
import { nestedDeeperThan } from '../../protocol/vocabulary';
import type { NotificationOutcome, NotificationRecord, NotificationSendResult } from '../../protocol/views';
import { decideDelivery } from '../delivery-policy';
import { byPriority, coalesce, findCoalescable, isClosed, newRecord, summaryOf, unschedule } from '../inbox';
import type { Inbox } from './inbox';
import {
  openGates,
  type InputRouter,
  type NotificationSettings,
  type RememberedBatch,
  type ThreadClock,
  type ThreadGates,
  type ThreadSnapshot,
} from './snapshot';

/** The longest wait between two delivery attempts of a record. */
const MAX_RETRY_BACKOFF_MS = 60_000;

export class Notifications {
  private readonly rememberedBatches: Map<string, RememberedBatch>;

  constructor(
    private readonly s: ThreadSnapshot,
    private readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
    private readonly inbox: Pick<Inbox, 'announce' | 'signalOf' | 'evictClosed'>,
    private readonly inputs: InputRouter,
  ) {
    this.rememberedBatches = new Map(s.rememberedBatches);
  }

  /** The remembered sends, oldest first, for the snapshot. */
  rememberedEntries(): [string, RememberedBatch][] {
    return [...this.rememberedBatches.entries()];
  }

  /**
   * Refuses a send the inbox cannot take: pending records never leave it, so they bound it. `gates`: as for an
   * input (`Inputs.validate`), an update validator passes `openGates`.
   */
  validate(batch: NotificationBatch, gates: ThreadGates = openGates): void {
    const maxDepth = this.config.maxInputDepth;
    const deep = batch.notifications.findIndex((notification) => nestedDeeperThan(notification, maxDepth));
    if (deep >= 0 && gates.boundedInputDepth()) throw depthRefusal(`Notification ${deep}`, maxDepth);
    if (this.rememberedBatches.has(batch.id)) return;
    for (const [i, notification] of batch.notifications.entries()) {
      refuseOversized(notification, `Notification ${i}`, this.config.maxInputBytes);
    }
    const open = this.s.inbox.filter((r) => !isClosed(r)).length;
    if (open + batch.notifications.length > this.config.maxInboxRecords) {
      throw new ThreadRefusal(
        'InputRejected',
        `The thread's inbox holds ${open} open notifications (limit ${this.config.maxInboxRecords}). Mark some seen, dismiss or archive them, or raise maxInboxRecords.`,
        { limit: 'maxInboxRecords', value: this.config.maxInboxRecords },
      );
    }
  }

  /**
   * Records a send (behaviour §4.1): each notification creates a record or coalesces into a pending one with the same
   * source, kind and dedupeKey/coalesceKey, then the delivery policy decides (behaviour §4.2) with the thread's own state.
   */
  accept(batch: NotificationBatch, settings: NotificationSettings = {}): NotificationSendResult {
    const previous = this.rememberedBatches.get(batch.id);
    if (previous) return { ...this.replayBatch(previous), duplicate: true };
    const inbox = this.s.inbox;
    const now = this.clock.now();
    const outcomes = batch.notifications.map((input, i): NotificationOutcome => {
      let record = findCoalescable(inbox, input);
      const coalesced = record !== undefined;
      if (record) coalesce(record, input, now);
      else {
        const id = `n${(this.s.notificationSeq += 1)}`;
        record = newRecord(
          input,
          { id, resourceId: this.s.resourceId, threadId: this.s.threadId, agentId: batch.agentId },
          now,
        );
        inbox.push(record);
      }
      const decision = decideDelivery(record, this.s.run !== null, settings.policy, settings.decided?.[i]);
      this.applyDecision(record, decision, settings.digestWindowMs ?? this.config.digestWindowMs, now);
      this.inbox.announce(record, coalesced ? 'coalesced' : 'created');
      return {
        id: record.id,
        status: record.status,
        action: decision.action,
        coalesced,
        coalescedCount: record.coalescedCount,
        ...(record.deliveryReason ? { deliveryReason: record.deliveryReason } : {}),
      };
    });
    this.inbox.evictClosed();
    this.rememberedBatches.set(batch.id, {
      ids: outcomes.map((o) => o.id),
      actions: outcomes.map((o) => o.action),
      coalesced: outcomes.map((o) => (o.coalesced ? 1 : 0)),
    });
    while (this.rememberedBatches.size > this.config.rememberNotificationBatches) {
      this.rememberedBatches.delete(this.rememberedBatches.keys().next().value as string);
    }
    return { accepted: true, notifications: outcomes };
  }

  /** Something is due now: a deferred delivery, a summary, or a full delivery waiting for the thread to be idle. */
  hasDue(): boolean {
    const now = this.clock.now();
    const idle = !this.s.run && this.s.queue.length === 0;
    return this.s.inbox.some(
      (r) =>
        r.status === 'pending' &&
        ((r.deliverAt !== undefined && r.deliverAt <= now) ||
          (r.summaryAt !== undefined && r.summaryAt <= now) ||
          (idle && r.fullWhenIdle === true)),
    );
  }

  /** The earliest future `deliverAt`/`summaryAt`: the one timer the workflow keeps for the inbox. */
  nextDeadline(): number | undefined {
    const now = this.clock.now();
    let next: number | undefined;
    for (const r of this.s.inbox) {
      if (r.status !== 'pending') continue;
      for (const at of [r.deliverAt, r.summaryAt]) {
        if (at !== undefined && at > now && (next === undefined || at < next)) next = at;
      }
    }
    return next;
  }

  /**
   * Dispatches what is due (behaviour §4.3), urgent first: deferred full deliveries, full deliveries that waited for an
   * idle thread, then one summary of every record due for one.
   */
  dispatch(): void {
    const inbox = this.s.inbox;
    if (inbox.length === 0) return;
    const now = this.clock.now();
    const pending = () => inbox.filter((r) => r.status === 'pending');
    for (const record of pending()
      .filter((r) => r.deliverAt !== undefined && r.deliverAt <= now)
      .sort(byPriority)) {
      this.deliver(record, 'send');
      this.inbox.announce(record, record.status === 'delivered' ? 'delivered' : 'updated');
    }
    if (!this.s.run && this.s.queue.length === 0) {
      for (const record of pending()
        .filter((r) => r.fullWhenIdle)
        .sort(byPriority)) {
        this.deliver(record, 'send');
        this.inbox.announce(record, record.status === 'delivered' ? 'delivered' : 'updated');
      }
    }
    const due = pending()
      .filter((r) => r.summaryAt !== undefined && r.summaryAt <= now)
      .sort(byPriority);
    if (due.length > 0) this.summarize(due);
  }

  /** A repeated send answers with the first one's records and actions, and the records' current status. */
  private replayBatch(batch: RememberedBatch): NotificationSendResult {
    const byId = new Map(this.s.inbox.map((r) => [r.id, r]));
    return {
      accepted: true,
      notifications: batch.ids.map((id, i) => {
        const record = byId.get(id);
        return {
          id,
          status: record?.status ?? 'archived',
          action: batch.actions[i],
          coalesced: batch.coalesced[i] === 1,
          coalescedCount: record?.coalescedCount ?? 1,
        };
      }),
    };
  }

  private applyDecision(record: NotificationRecord, decision: DeliveryDecision, windowMs: number, now: number): void {
    if (decision.reason) record.deliveryReason = decision.reason;
    // A digest already scheduled (even one due this instant) keeps its time.
    const scheduledDigest = record.summaryAt;
    delete record.summaryAt;
    switch (decision.action) {
      case 'deliver':
      case 'queue':
        this.deliver(record, decision.action === 'queue' ? 'queue' : 'send');
        return;
      case 'defer':
        record.deliverAt = decision.deliverAt ?? now + windowMs;
        return;
      case 'summarize':
        // `high` while active is summarized at once and delivered in full once idle; the rest join the digest.
        record.summaryAt =
          decision.summaryAt ?? (decision.fullWhenIdle ? now : (scheduledDigest ?? this.nextDigestAt(now, windowMs)));
        if (decision.fullWhenIdle) record.fullWhenIdle = true;
        return;
      case 'persist':
        this.persist(record);
        return;
      case 'discard':
        record.status = 'discarded';
        record.discardedAt = now;
        return;
    }
  }

  /** The open digest's time, so summaries batch per window; a new window opens when none is open. */
  private nextDigestAt(now: number, windowMs: number): number {
    const open = this.s.inbox
      .filter((r) => r.status === 'pending' && r.summaryAt !== undefined && r.summaryAt > now)
      .map((r) => r.summaryAt!);
    return open.length > 0 ? Math.min(...open) : now + windowMs;
  }

  /**
   * A full delivery: delivered to the active run or waking the thread. The record becomes `delivered` only then
   * (behaviour §4.3); a delivery the thread refuses (a limit) counts as a failed attempt and is retried with backoff.
   */
  private deliver(record: NotificationRecord, delivery: 'send' | 'queue'): void {
    const input = this.inbox.signalOf(record, delivery);
    try {
      this.inputs.validate(input);
    } catch (err) {
      this.failDelivery(record, (err as Error).message);
      return;
    }
    const result = this.inputs.route(input);
    if (result.action === 'persist' || result.action === 'discard') {
      // Not delivered, and never due again by itself: nothing to retry.
      delete record.deliverAt;
      delete record.fullWhenIdle;
      return;
    }
    const now = this.clock.now();
    record.status = 'delivered';
    record.deliveredAt = now;
    record.deliveredSignalId = input.id;
    record.updatedAt = now;
    unschedule(record);
  }

  /** The full signal stored without waking or joining a run; the record stays pending (never marked delivered). */
  private persist(record: NotificationRecord): void {
    const input = this.inbox.signalOf(record, 'send');
    this.inputs.route({ ...input, ifActive: { behavior: 'persist' }, ifIdle: { behavior: 'persist' } });
  }

  private failDelivery(record: NotificationRecord, error: string): void {
    const now = this.clock.now();
    record.deliveryAttempts += 1;
    record.lastDeliveryError = error;
    record.updatedAt = now;
    if (record.deliveryAttempts >= this.config.maxDeliveryAttempts) {
      record.status = 'failed';
      unschedule(record);
    } else {
      const backoff = this.config.notificationRetryMs * 2 ** (record.deliveryAttempts - 1);
      record.deliverAt = now + Math.min(backoff, MAX_RETRY_BACKOFF_MS);
    }
    this.inbox.announce(record, record.status === 'failed' ? 'failed' : 'delivery-failed');
  }

  /** One `<notification-summary>` for every record due; a low-only digest is stored without waking the thread. */
  private summarize(records: NotificationRecord[]): void {
    const { attributes, text } = summaryOf(records);
    const lowOnly = records.every((r) => r.priority === 'low');
    const input: ThreadInput = {
      id: `notification-summary:${this.s.eventSeq + 1}`,
      agentId: this.s.run?.agentId ?? records[0].agentId,
      delivery: 'send',
      type: 'notification',
      tagName: 'notification-summary',
      contents: text,
      attributes,
      ...(lowOnly ? { ifIdle: { behavior: 'persist' as const } } : {}),
    };
    const now = this.clock.now();
    try {
      this.inputs.validate(input);
    } catch {
      // A limit refused it: try the digest again a little later, records untouched.
      for (const r of records) r.summaryAt = now + this.config.notificationRetryMs;
      return;
    }
    this.inputs.route(input);
    for (const r of records) {
      delete r.summaryAt;
      r.summarySignalId = input.id;
      r.updatedAt = now;
      this.inbox.announce(r, 'summarized');
    }
  }
}
