/**
 * The thread's notification inbox as records change (behaviour §4.4): status changes by applications and by the
 * `notification-inbox` tool, paging, eviction of closed records beyond the bound, and the announcement of every
 * change to subscribers. Accepting and delivering notifications is `notifications.ts`.
 */
import { ThreadRefusal } from '../../protocol/failures';
import type { InboxToolInput, NotificationQuery, NotificationStatusRequest, ThreadInput } from '../../protocol/schemas';
import type { ThreadConfig } from '../../protocol/thread-config';
import type { NotificationRecord, RecordPage } from '../../protocol/views';
import { isClosed, notificationAttributes, pageOf, unschedule, withoutBody } from '../inbox';
import type { Outbox } from './outbox';
import type { InputRouter, ThreadClock, ThreadSnapshot } from './snapshot';

export class Inbox {
  constructor(
    private readonly s: ThreadSnapshot,
    private readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
    private readonly outbox: Pick<Outbox, 'emit' | 'announce'>,
    private readonly inputs: Pick<InputRouter, 'route'>,
  ) {}

  /** Announces a record's change (a newer announcement replaces one not yet published). */
  announce(record: NotificationRecord, change: string): void {
    this.outbox.announce(record.id, { change, notification: withoutBody({ ...record }) });
  }

  /** The full `<notification>` signal of a record. */
  signalOf(record: NotificationRecord, delivery: 'send' | 'queue'): ThreadInput {
    return {
      id: `notification:${record.id}:${record.deliveryAttempts}`,
      agentId: this.s.run?.agentId ?? record.agentId,
      delivery,
      type: 'notification',
      contents: record.summary,
      attributes: notificationAttributes(record),
    };
  }

  /** Applications' `markSeen` / `dismiss` / `archive` (behaviour §4.4). Unknown ids change nothing. */
  validateStatusChange(request: NotificationStatusRequest): void {
    const ids = new Set(this.s.inbox.map((r) => r.id));
    const unknown = request.ids.find((id) => !ids.has(id));
    if (unknown !== undefined) throw notificationNotFound(unknown);
  }

  changeStatus(request: NotificationStatusRequest): NotificationRecord[] {
    this.validateStatusChange(request);
    const wanted = new Set(request.ids);
    const changed = this.s.inbox.filter((r) => wanted.has(r.id));
    for (const record of changed) this.setStatus(record, request.change);
    this.evictClosed();
    return changed.map((r) => ({ ...r }));
  }

  list(query: NotificationQuery = {}): RecordPage {
    return pageOf(this.s.inbox, query, query.limit ?? 20, query.cursor);
  }

  /**
   * The `notification-inbox` tool (behaviour §4.4), run by the workflow itself: it reads and changes the inbox, and
   * `read` delivers the full notification as a signal (it joins the run at the next step), not as tool output.
   */
  tool(input: InboxToolInput): unknown {
    const inbox = this.s.inbox;
    const find = (id: string) => {
      const record = inbox.find((r) => r.id === id);
      if (!record) throw notificationNotFound(id);
      return record;
    };
    const filter = {
      ...(input.priority ? { priority: [input.priority] } : {}),
      ...(input.source ? { source: [input.source] } : {}),
    };
    switch (input.action) {
      case 'list':
      case 'search': {
        const status = input.status
          ? [input.status]
          : input.action === 'list'
            ? (['pending', 'delivered'] as const)
            : undefined;
        const page = pageOf(inbox, { ...filter, status, q: input.query }, input.limit);
        for (const r of page.notifications)
          if (r.status === 'pending' || r.status === 'delivered') this.setStatus(r, 'seen');
        return { notifications: page.notifications.map((r) => withoutBody({ ...r })), hasMore: page.hasMore };
      }
      case 'read': {
        const records = input.id
          ? [find(input.id)]
          : pageOf(inbox, { ...filter, status: [input.status ?? 'pending'] }, input.limit).notifications;
        const read = records.map((record) => {
          const injected = record.deliveredSignalId === undefined;
          if (injected) {
            const signal = this.signalOf(record, 'send');
            this.inputs.route(signal);
            record.deliveredSignalId = signal.id;
          }
          this.setStatus(record, 'seen');
          return { id: record.id, status: record.status, injected };
        });
        return { notifications: read, note: 'Full notifications arrive as <notification> signals.' };
      }
      case 'markSeen':
      case 'dismiss':
      case 'archive': {
        const record = find(input.id!);
        this.setStatus(record, input.action === 'markSeen' ? 'seen' : input.action);
        return { notification: withoutBody({ ...record }) };
      }
    }
  }

  /** Records waiting to be archived (at most `max`), taken off the thread; `restoreEvicted` puts them back. */
  takeEvicted(max = 200): NotificationRecord[] {
    return this.s.evicted.splice(0, max);
  }

  restoreEvicted(records: NotificationRecord[]): void {
    this.s.evicted.unshift(...records);
  }

  get evictedCount(): number {
    return this.s.evicted.length;
  }

  /**
   * Over the bound, the oldest closed records leave the inbox for the archive (the bus keeps them retrievable:
   * `listArchivedNotifications`); subscribers get each one in full as it leaves.
   */
  evictClosed(): void {
    const inbox = this.s.inbox;
    if (inbox.length <= this.config.maxInboxRecords) return;
    let excess = inbox.length - this.config.maxInboxRecords;
    const leaving = new Set<string>();
    for (const r of [...inbox].sort((a, b) => a.updatedAt - b.updatedAt)) {
      if (excess === 0) break;
      if (!isClosed(r)) continue;
      leaving.add(r.id);
      excess -= 1;
      this.outbox.emit('notification-updated', { change: 'evicted', notification: withoutBody({ ...r }) });
      this.s.evicted.push(r);
    }
    this.s.inbox = inbox.filter((r) => !leaving.has(r.id));
  }

  private setStatus(record: NotificationRecord, change: 'seen' | 'dismiss' | 'archive'): void {
    const now = this.clock.now();
    if (change === 'seen') {
      record.status = 'seen';
      record.seenAt = now;
    } else if (change === 'dismiss') {
      record.status = 'dismissed';
      record.dismissedAt = now;
    } else {
      record.status = 'archived';
      record.archivedAt = now;
    }
    record.updatedAt = now;
    unschedule(record);
    this.announce(record, record.status);
  }
}

function notificationNotFound(id: string): ThreadRefusal<'NotificationNotFound'> {
  return new ThreadRefusal('NotificationNotFound', `Unknown notification: ${id} is not in this thread's inbox.`, {
    notificationId: id,
  });
}
