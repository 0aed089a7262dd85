import { describe, expect, it } from 'vitest';
import type { ParsedNotification } from '../../protocol/schemas';
import { coalesce, findCoalescable, newRecord, notificationAttributes, pageOf, summaryOf } from '../../workflows/inbox';
import { type NotificationRecord } from '../../protocol/views';
import { renderXml } from '../../protocol/render';

const ids = (id: string) => ({ id, threadId: 't', resourceId: 'r', agentId: 'a' });
const input = (extra: Partial<ParsedNotification> = {}): ParsedNotification => ({
  source: 'github',
  kind: 'ci-status',
  summary: 'CI failed on main: 3 tests failed.',
  ...extra,
});

describe('records and coalescing (behaviour §4.1)', () => {
  it('coalesces into a pending record of the same source and kind with an equal dedupeKey or coalesceKey', () => {
    const a = newRecord(input({ dedupeKey: 'k', priority: 'high', attributes: { a: 1 } }), ids('n1'), 1);
    const records = [a];
    expect(findCoalescable(records, input({ dedupeKey: 'k' }))).toBe(a);
    expect(findCoalescable(records, input({ dedupeKey: 'other' }))).toBeUndefined();
    expect(findCoalescable(records, input({ dedupeKey: 'k', kind: 'review' }))).toBeUndefined();
    expect(findCoalescable(records, input({ dedupeKey: 'k', source: 'gitlab' }))).toBeUndefined();
    expect(findCoalescable(records, input())).toBeUndefined();
    a.status = 'delivered';
    expect(findCoalescable(records, input({ dedupeKey: 'k' }))).toBeUndefined();
    a.status = 'pending';

    coalesce(a, input({ dedupeKey: 'k', summary: 'CI failed again.', attributes: { b: 2 }, metadata: { m: 1 } }), 5);
    expect(a).toMatchObject({
      id: 'n1',
      summary: 'CI failed again.',
      priority: 'high', // not given: kept
      attributes: { a: 1, b: 2 },
      metadata: { m: 1 },
      coalescedCount: 2,
      updatedAt: 5,
      createdAt: 1,
    });
    coalesce(a, input({ coalesceKey: 'c', priority: 'low', payload: { n: 3 } }), 6);
    expect(a).toMatchObject({ priority: 'low', payload: { n: 3 }, coalescedCount: 3 });
  });

  it('renders the record attributes first and coalescedCount only when > 1', () => {
    const r = newRecord(input({ priority: 'high', attributes: { repo: 'acme/app', source: 'spoofed' } }), ids('n1'), 1);
    expect(renderXml('notification', notificationAttributes(r), r.summary)).toBe(
      '<notification id="n1" source="github" type="ci-status" kind="ci-status" priority="high" status="delivered" repo="acme/app">CI failed on main: 3 tests failed.</notification>',
    );
    r.coalescedCount = 3;
    expect(notificationAttributes(r)).toMatchObject({ coalescedCount: 3 });
  });

  it('summarizes with sources sorted by name and the highest priority', () => {
    const records: NotificationRecord[] = [
      ...['slack', 'github', 'email', 'github', 'email'].map((source, i) =>
        newRecord(input({ source, priority: i === 1 ? 'high' : 'low' }), ids(`n${i}`), i),
      ),
    ];
    const { attributes, text } = summaryOf(records);
    expect(renderXml('notification-summary', attributes, text)).toBe(
      '<notification-summary pending="5" priority="high">email: 2, github: 2, slack: 1</notification-summary>',
    );
  });

  it('pages newest first with a cursor that survives new records', () => {
    const records = Array.from({ length: 5 }, (_, i) => newRecord(input({ summary: `s${i}` }), ids(`n${i}`), i));
    const first = pageOf(records, {}, 2);
    expect(first.notifications.map((r) => r.id)).toEqual(['n4', 'n3']);
    records.push(newRecord(input({ summary: 'late' }), ids('n9'), 9));
    const second = pageOf(records, {}, 2, first.nextCursor!);
    expect(second.notifications.map((r) => r.id)).toEqual(['n2', 'n1']);
    const last = pageOf(records, {}, 2, second.nextCursor!);
    expect(last).toMatchObject({ hasMore: false, nextCursor: null });
    expect(pageOf(records, { q: 'LATE' }, 10).notifications.map((r) => r.id)).toEqual(['n9']);
    expect(() => pageOf(records, {}, 2, 'garbage')).toThrow(/Invalid cursor/);
  });
});
