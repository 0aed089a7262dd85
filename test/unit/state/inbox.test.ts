import { describe, expect, it } from 'vitest';
import type { NotificationBatch } from '../../../protocol/schemas';
import { announcements, input, newThread, refusal } from './support';

/** An active thread with three pending records n1 (low, github), n2 (medium, mail), n3 (low, github), a ms apart. */
function inbox() {
  const t = newThread();
  t.thread.accept(input('m1'));
  t.thread.planStep();
  const sends: NotificationBatch['notifications'][number][] = [
    { source: 'github', kind: 'ci', summary: 'build red', priority: 'low', payload: { build: 7 } },
    { source: 'mail', kind: 'msg', summary: 'lunch?', priority: 'medium' },
    { source: 'github', kind: 'pr', summary: 'review wanted', priority: 'low' },
  ];
  sends.forEach((n, i) => {
    t.thread.acceptNotifications({ id: `b${i}`, agentId: 'a', notifications: [n] });
    t.clock.advance(1);
  });
  t.thread.takeOutbox();
  return t;
}

const statuses = (thread: ReturnType<typeof newThread>['thread']) =>
  Object.fromEntries(thread.listNotifications().notifications.map((r) => [r.id, r.status]));

describe('status changes by applications (behaviour §4.4)', () => {
  it('marks seen, dismisses, archives: timestamps set, nothing left scheduled, each announced', () => {
    const { thread, clock } = inbox();
    clock.advance(10);
    const changed = thread.changeNotificationStatus({ ids: ['n1', 'n2'], change: 'dismiss' });
    expect(changed.map((r) => [r.id, r.status, r.dismissedAt, r.summaryAt])).toEqual([
      ['n1', 'dismissed', 1_013, undefined],
      ['n2', 'dismissed', 1_013, undefined],
    ]);
    thread.changeNotificationStatus({ ids: ['n3'], change: 'seen' });
    expect(statuses(thread)).toEqual({ n1: 'dismissed', n2: 'dismissed', n3: 'seen' });
    expect(thread.nextNotificationDeadline()).toBeUndefined();
    expect(announcements(thread.takeOutbox())).toEqual(['n1:dismissed', 'n2:dismissed', 'n3:seen']);
    expect(thread.view().inbox).toMatchObject({ total: 3, dismissed: 2, seen: 1, pending: 0 });
  });

  it('refuses the whole request when one id is unknown, changing nothing', () => {
    const { thread } = inbox();
    expect(refusal(() => thread.changeNotificationStatus({ ids: ['n1', 'n9'], change: 'archive' }))).toMatchObject({
      type: 'NotificationNotFound',
      details: { notificationId: 'n9' },
    });
    expect(statuses(thread)).toEqual({ n1: 'pending', n2: 'pending', n3: 'pending' });
    expect(thread.takeOutbox()).toEqual([]);
  });

  it('lists newest first, filtered, a page at a time', () => {
    const { thread } = inbox();
    const first = thread.listNotifications({ limit: 2 });
    expect(first.notifications.map((r) => r.id)).toEqual(['n3', 'n2']);
    expect(first.hasMore).toBe(true);
    const rest = thread.listNotifications({ limit: 2, cursor: first.nextCursor! });
    expect(rest).toMatchObject({ hasMore: false, nextCursor: null });
    expect(rest.notifications.map((r) => r.id)).toEqual(['n1']);
    expect(thread.listNotifications({ source: ['mail'] }).notifications.map((r) => r.id)).toEqual(['n2']);
  });
});

describe('the notification-inbox tool', () => {
  it('list shows open records without their body and marks them seen', () => {
    const { thread } = inbox();
    const out = thread.inboxTool({ action: 'list', priority: 'low', limit: 20 }) as {
      notifications: Record<string, unknown>[];
    };
    expect(out.notifications.map((r) => [r.id, r.status, 'payload' in r])).toEqual([
      ['n3', 'seen', false],
      ['n1', 'seen', false],
    ]);
    expect(statuses(thread)).toEqual({ n1: 'seen', n2: 'pending', n3: 'seen' });
  });

  it('search finds text in summaries and payloads', () => {
    const { thread } = inbox();
    const out = thread.inboxTool({ action: 'search', query: 'LUNCH', limit: 20 }) as {
      notifications: { id: string }[];
    };
    expect(out.notifications.map((r) => r.id)).toEqual(['n2']);
  });

  it('read delivers the full notification as a signal, once', () => {
    const { thread } = inbox();
    expect(thread.inboxTool({ action: 'read', id: 'n1', limit: 20 })).toEqual({
      notifications: [{ id: 'n1', status: 'seen', injected: true }],
      note: 'Full notifications arrive as <notification> signals.',
    });
    expect(thread.run!.pending.map((p) => p.input.id)).toEqual(['notification:n1:0']);
    thread.changeNotificationStatus({ ids: ['n1'], change: 'seen' });
    expect(thread.inboxTool({ action: 'read', id: 'n1', limit: 20 })).toMatchObject({
      notifications: [{ id: 'n1', injected: false }],
    });
    expect(thread.run!.pending).toHaveLength(1);
  });

  it('read without an id takes the newest pending records up to the limit', () => {
    const { thread } = inbox();
    thread.inboxTool({ action: 'read', limit: 2 });
    expect(statuses(thread)).toEqual({ n1: 'pending', n2: 'seen', n3: 'seen' });
  });

  it('markSeen, dismiss and archive one record; an unknown id is refused', () => {
    const { thread } = inbox();
    expect(thread.inboxTool({ action: 'archive', id: 'n2', limit: 20 })).toEqual({
      notification: expect.objectContaining({ id: 'n2', status: 'archived', archivedAt: 1_003 }),
    });
    thread.inboxTool({ action: 'markSeen', id: 'n1', limit: 20 });
    thread.inboxTool({ action: 'dismiss', id: 'n3', limit: 20 });
    expect(statuses(thread)).toEqual({ n1: 'seen', n2: 'archived', n3: 'dismissed' });
    expect(refusal(() => thread.inboxTool({ action: 'dismiss', id: 'n9', limit: 20 })).type).toBe(
      'NotificationNotFound',
    );
  });
});
