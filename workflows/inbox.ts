/**
 * The notification inbox (behaviour §4.1, §4.4) as plain data and pure functions: records, coalescing, filters and
 * paging, the summary line. Routing the signals they become is the thread's job (`state/notifications.ts`).
 */
import type { Attributes, NotificationPriority, NotificationStatus, ParsedNotification } from '../protocol/schemas';
import { priorityRank } from './delivery-policy';
import type { NotificationRecord, RecordPage } from '../protocol/views';
import { parseInboxCursor } from '../protocol/failures';

/** Statuses a record can leave the inbox from when the inbox is over its bound (oldest first). */
const closedStatuses: ReadonlySet<NotificationStatus> = new Set([
  'seen',
  'dismissed',
  'archived',
  'discarded',
  'failed',
]);

export function isClosed(record: NotificationRecord): boolean {
  return closedStatuses.has(record.status);
}

/** A pending record of the same source and kind with an equal dedupeKey or coalesceKey (behaviour §4.1). */
export function findCoalescable(
  records: readonly NotificationRecord[],
  input: ParsedNotification,
): NotificationRecord | undefined {
  if (!input.dedupeKey && !input.coalesceKey) return undefined;
  return records.find(
    (r) =>
      r.status === 'pending' &&
      r.source === input.source &&
      r.kind === input.kind &&
      ((input.dedupeKey !== undefined && r.dedupeKey === input.dedupeKey) ||
        (input.coalesceKey !== undefined && r.coalesceKey === input.coalesceKey)),
  );
}

export function newRecord(
  input: ParsedNotification,
  ids: { id: string; threadId: string; resourceId: string; agentId: string },
  now: number,
): NotificationRecord {
  const record: NotificationRecord = {
    ...ids,
    source: input.source,
    kind: input.kind,
    priority: input.priority ?? 'medium',
    status: 'pending',
    summary: input.summary,
    coalescedCount: 1,
    createdAt: now,
    updatedAt: now,
    deliveryAttempts: 0,
  };
  if (input.payload !== undefined) record.payload = input.payload;
  if (input.sourceId !== undefined) record.sourceId = input.sourceId;
  if (input.dedupeKey !== undefined) record.dedupeKey = input.dedupeKey;
  if (input.coalesceKey !== undefined) record.coalesceKey = input.coalesceKey;
  if (input.attributes !== undefined) record.attributes = input.attributes;
  if (input.metadata !== undefined) record.metadata = input.metadata;
  return record;
}

/**
 * Folds a new input into a pending record in place: summary replaced, payload and priority replaced when given,
 * attributes and metadata shallow-merged, one more in `coalescedCount`. The caller runs the policy again.
 */
export function coalesce(record: NotificationRecord, input: ParsedNotification, now: number): void {
  record.summary = input.summary;
  if (input.payload !== undefined) record.payload = input.payload;
  if (input.priority !== undefined) record.priority = input.priority;
  if (input.sourceId !== undefined) record.sourceId = input.sourceId;
  if (input.attributes) record.attributes = { ...record.attributes, ...input.attributes };
  if (input.metadata) record.metadata = { ...record.metadata, ...input.metadata };
  record.coalescedCount += 1;
  record.updatedAt = now;
  // `summaryAt` stays: a digest already scheduled keeps its time (a key that repeats must not postpone it forever).
  delete record.deliverAt;
  delete record.fullWhenIdle;
}

/** Nothing more is due for the record: no deferred delivery, no digest, no full delivery waiting for idle. */
export function unschedule(record: NotificationRecord): void {
  delete record.deliverAt;
  delete record.summaryAt;
  delete record.fullWhenIdle;
}

/** The `<notification ...>` attributes: the record's own first, then the sender's (never overriding them). */
export function notificationAttributes(record: NotificationRecord): Attributes {
  const own: Attributes = {
    id: record.id,
    source: record.source,
    type: record.kind,
    kind: record.kind,
    priority: record.priority,
    status: 'delivered',
  };
  if (record.coalescedCount > 1) own.coalescedCount = record.coalescedCount;
  const extra = Object.fromEntries(Object.entries(record.attributes ?? {}).filter(([name]) => !(name in own)));
  return { ...own, ...extra };
}

/** `<notification-summary pending="10" priority="high">email: 5, github: 3, slack: 2</notification-summary>` parts. */
export function summaryOf(records: readonly NotificationRecord[]): { attributes: Attributes; text: string } {
  const bySource = new Map<string, number>();
  for (const r of records) bySource.set(r.source, (bySource.get(r.source) ?? 0) + 1);
  const text = [...bySource.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([source, n]) => `${source}: ${n}`)
    .join(', ');
  const top = [...records].sort(byPriority)[0];
  return { attributes: { pending: records.length, priority: top.priority }, text };
}

/** Urgent first, then high, medium, low; oldest first within a priority. */
export function byPriority(a: NotificationRecord, b: NotificationRecord): number {
  return priorityRank[a.priority] - priorityRank[b.priority] || a.createdAt - b.createdAt || cmp(a.id, b.id);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface RecordFilter {
  status?: readonly NotificationStatus[];
  priority?: readonly NotificationPriority[];
  source?: readonly string[];
  q?: string;
}

export function matches(record: NotificationRecord, filter: RecordFilter): boolean {
  if (filter.status && !filter.status.includes(record.status)) return false;
  if (filter.priority && !filter.priority.includes(record.priority)) return false;
  if (filter.source && !filter.source.includes(record.source)) return false;
  if (filter.q) {
    const q = filter.q.toLowerCase();
    const haystack = [record.summary, record.kind, record.source, JSON.stringify(record.payload ?? '')]
      .join('\n')
      .toLowerCase();
    if (!haystack.includes(q)) return false;
  }
  return true;
}

/** Newest first; the cursor is the position after the last record returned (stable while records are added). */
export function pageOf(
  records: readonly NotificationRecord[],
  filter: RecordFilter,
  limit: number,
  cursor?: string,
): RecordPage {
  const sorted = records.filter((r) => matches(r, filter)).sort((a, b) => b.createdAt - a.createdAt || cmp(b.id, a.id));
  let start = 0;
  if (cursor) {
    const [at, id] = parseInboxCursor(cursor);
    start = sorted.findIndex((r) => r.createdAt < at || (r.createdAt === at && cmp(r.id, id) < 0));
    if (start < 0) start = sorted.length;
  }
  const page = sorted.slice(start, start + limit);
  const hasMore = start + limit < sorted.length;
  const last = page.at(-1);
  return { notifications: page, hasMore, nextCursor: hasMore && last ? `${last.createdAt}:${last.id}` : null };
}

/** A record as lists show it: without payload and metadata (behaviour §4.4). */
export function withoutBody(record: NotificationRecord): Omit<NotificationRecord, 'payload' | 'metadata'> {
  const { payload: _payload, metadata: _metadata, ...rest } = record;
  return rest;
}

/** Counts by status, for the thread view. */
export function inboxCounts(records: readonly NotificationRecord[]): Record<NotificationStatus | 'total', number> {
  const counts = { total: records.length } as Record<NotificationStatus | 'total', number>;
  for (const status of ['pending', 'delivered', 'seen', 'dismissed', 'archived', 'discarded', 'failed'] as const)
    counts[status] = 0;
  for (const r of records) counts[r.status] += 1;
  return counts;
}
