import { describe, expect, it } from 'vitest';
import type { NotificationBatch, NotificationInput } from '../../../protocol/schemas';
import type { ThreadConfigInput } from '../../../protocol/thread-config';
import type { NotificationSettings } from '../../../workflows/state';
import { announcements, input, newThread, refusal, stepResult, types } from './support';

let batches = 0;
const send = (...notifications: NotificationInput[]): NotificationBatch => ({
  id: `b${++batches}`,
  agentId: 'a',
  notifications: notifications.map((n) => ({ ...n })) as NotificationBatch['notifications'],
});
const note = (priority: NotificationInput['priority'], extra: Partial<NotificationInput> = {}): NotificationInput => ({
  source: 'github',
  kind: 'ci',
  summary: `${priority} news`,
  priority,
  ...extra,
});

/** A thread with an active run whose first step was planned (the outbox emptied). */
function active(config: ThreadConfigInput = {}) {
  const t = newThread({ digestWindowMs: 1_000, ...config });
  t.thread.accept(input('m1'));
  t.thread.planStep();
  return t;
}

const record = (thread: ReturnType<typeof newThread>['thread'], id: string) =>
  thread.listNotifications({ limit: 200 }).notifications.find((r) => r.id === id)!;

describe('accepting notifications (behaviour §4.1, §4.2)', () => {
  it('delivers an urgent notification at once: the thread wakes with the full <notification>', () => {
    const { thread } = newThread();
    const result = thread.acceptNotifications(send(note('urgent')));
    expect(result).toEqual({
      accepted: true,
      notifications: [
        {
          id: 'n1',
          status: 'delivered',
          action: 'deliver',
          coalesced: false,
          coalescedCount: 1,
          deliveryReason: 'urgent',
        },
      ],
    });
    expect(thread.run!.pending.map((p) => [p.input.id, p.input.type, p.input.attributes])).toEqual([
      [
        'notification:n1:0',
        'notification',
        expect.objectContaining({ id: 'n1', priority: 'urgent', status: 'delivered' }),
      ],
    ]);
    expect(record(thread, 'n1')).toMatchObject({ deliveredSignalId: 'notification:n1:0', deliveredAt: 1_000 });
    const events = thread.takeOutbox();
    expect(types(events)).toEqual(['start', 'notification-updated']);
    expect(announcements(events)).toEqual(['n1:created']);
  });

  it('coalesces a pending record with the same key: one record, one announcement', () => {
    const { thread } = active();
    thread.acceptNotifications(send(note('low', { dedupeKey: 'build-7', summary: 'running' })));
    const second = thread.acceptNotifications(send(note('low', { dedupeKey: 'build-7', summary: 'passed' })));
    expect(second.notifications).toEqual([expect.objectContaining({ id: 'n1', coalesced: true, coalescedCount: 2 })]);
    expect(
      thread.acceptNotifications(send(note('low', { kind: 'pr', dedupeKey: 'build-7' }))).notifications[0].id,
    ).toBe('n2');
    expect(record(thread, 'n1').summary).toBe('passed');
    expect(announcements(thread.takeOutbox())).toEqual(['n1:coalesced', 'n2:created']);
  });

  it('answers a repeated send with its first outcome, marked duplicate, and changes nothing', () => {
    const { thread } = active();
    const batch = send(note('low'));
    const first = thread.acceptNotifications(batch);
    thread.takeOutbox();
    expect(thread.acceptNotifications(batch)).toEqual({
      accepted: true,
      duplicate: true,
      notifications: [{ id: 'n1', status: 'pending', action: 'summarize', coalesced: false, coalescedCount: 1 }],
    });
    expect(first.notifications[0].action).toBe('summarize');
    expect(thread.takeOutbox()).toEqual([]);
    expect(thread.view().inbox.total).toBe(1);
  });

  it('refuses a send the inbox cannot hold open', () => {
    const { thread } = active({ maxInboxRecords: 2 });
    thread.acceptNotifications(send(note('low')));
    expect(refusal(() => thread.validateNotifications(send(note('low'), note('low'))))).toMatchObject({
      type: 'InputRejected',
      details: { limit: 'maxInboxRecords', value: 2 },
    });
    expect(() => thread.validateNotifications(send(note('low')))).not.toThrow();
  });

  it('refuses a send with a notification over maxInputBytes, naming it', () => {
    const { thread } = active({ maxInputBytes: 500 });
    const big = note('low', { summary: 'x'.repeat(600) });
    expect(refusal(() => thread.validateNotifications(send(note('low'), big)))).toMatchObject({
      type: 'InputTooLarge',
      details: { limit: 'maxInputBytes', value: 500 },
      message: expect.stringMatching(/^Notification 1 is \d+ bytes/),
    });
    expect(thread.view().inbox.total).toBe(0);
  });

  it('applies the agent’s policy: persist stores the signal without waking, discard closes the record', () => {
    const { thread } = newThread();
    const persist: NotificationSettings = { policy: { default: 'persist' } };
    expect(thread.acceptNotifications(send(note('high')), persist).notifications[0]).toMatchObject({
      status: 'pending',
      action: 'persist',
    });
    expect(thread.isActive()).toBe(false);
    expect(thread.messages.map((m) => m.id)).toEqual(['notification:n1:0']);
    const discard: NotificationSettings = { policy: { sources: { github: 'discard' } } };
    expect(thread.acceptNotifications(send(note('urgent')), discard).notifications[0].status).toBe('discarded');
    expect(thread.acceptNotifications(send(note('low')), { decided: ['deliver'] }).notifications[0].action).toBe(
      'deliver',
    );
  });

  it('queue puts the full notification behind the active run', () => {
    const { thread } = active();
    const result = thread.acceptNotifications(send(note('low')), { policy: { default: 'queue' } });
    expect(result.notifications[0]).toMatchObject({ status: 'delivered', action: 'queue' });
    expect(thread.view().queue).toEqual([{ runId: 'id-2', agentId: 'a', inputIds: ['notification:n1:0'] }]);
  });
});

describe('dispatching what is due (behaviour §4.3)', () => {
  it('delivers a deferred notification once its time comes, with one timer for it', () => {
    const { thread, clock } = newThread({ digestWindowMs: 1_000 });
    thread.acceptNotifications(send(note('medium')), { policy: { default: 'defer' } });
    expect(record(thread, 'n1')).toMatchObject({ status: 'pending', deliverAt: 2_000 });
    expect(thread.nextNotificationDeadline()).toBe(2_000);
    expect(thread.hasDueNotifications()).toBe(false);
    clock.advance(1_000);
    expect(thread.hasDueNotifications()).toBe(true);
    thread.takeOutbox();
    thread.dispatchNotifications();
    expect(record(thread, 'n1')).toMatchObject({ status: 'delivered', deliveredAt: 2_000 });
    expect(record(thread, 'n1').deliverAt).toBeUndefined();
    expect(types(thread.takeOutbox())).toEqual(['start', 'notification-updated']);
    expect(thread.nextNotificationDeadline()).toBeUndefined();
  });

  it('high while active: summarized at once, then delivered in full once the thread is idle', () => {
    const { thread } = active();
    expect(thread.acceptNotifications(send(note('high'))).notifications[0].action).toBe('summarize');
    expect(thread.hasDueNotifications()).toBe(true);
    thread.dispatchNotifications();
    const pending = thread.run!.pending.map((p) => p.input);
    expect(pending).toEqual([
      expect.objectContaining({
        id: expect.stringMatching(/^notification-summary:/),
        tagName: 'notification-summary',
        contents: 'github: 1',
        attributes: { pending: 1, priority: 'high' },
      }),
    ]);
    expect(record(thread, 'n1')).toMatchObject({
      status: 'pending',
      summarySignalId: pending[0].id,
      fullWhenIdle: true,
    });
    expect(thread.hasDueNotifications()).toBe(false);
    thread.completeStep(thread.planStep(), stepResult());
    thread.finishRun('stop');
    expect(thread.hasDueNotifications()).toBe(true);
    thread.dispatchNotifications();
    expect(record(thread, 'n1').status).toBe('delivered');
    expect(thread.run!.pending.map((p) => p.input.id)).toEqual(['notification:n1:0']);
  });

  it('batches summaries per digest window: one <notification-summary> for every record due', () => {
    const { thread, clock } = active();
    thread.acceptNotifications(send(note('medium', { source: 'mail' })));
    clock.advance(400);
    thread.acceptNotifications(send(note('low'), note('low', { source: 'slack' })));
    expect(thread.nextNotificationDeadline()).toBe(2_000);
    clock.advance(599);
    thread.dispatchNotifications();
    expect(thread.run!.pending).toEqual([]);
    clock.advance(1);
    thread.takeOutbox();
    thread.dispatchNotifications();
    expect(thread.run!.pending.map((p) => [p.input.contents, p.input.attributes])).toEqual([
      ['github: 1, mail: 1, slack: 1', { pending: 3, priority: 'medium' }],
    ]);
    expect(announcements(thread.takeOutbox())).toEqual(['n1:summarized', 'n2:summarized', 'n3:summarized']);
    // The next send opens a new window.
    thread.acceptNotifications(send(note('low')));
    expect(thread.nextNotificationDeadline()).toBe(3_000);
  });

  it('stores a low-only digest without waking the idle thread', () => {
    const { thread, clock } = newThread({ digestWindowMs: 1_000 });
    thread.acceptNotifications(send(note('low')));
    clock.advance(1_000);
    thread.takeOutbox();
    thread.dispatchNotifications();
    expect(thread.isActive()).toBe(false);
    expect(thread.messages).toEqual([
      expect.objectContaining({ tagName: 'notification-summary', contents: 'github: 1' }),
    ]);
    const events = thread.takeOutbox();
    expect(events[0]).toMatchObject({ type: 'data-signal', payload: { persisted: true } });
    expect(record(thread, 'n1').status).toBe('pending');
  });

  it('retries a delivery the thread refuses with backoff, then marks it failed', () => {
    const { thread, clock } = active({ maxPendingInputs: 0, maxDeliveryAttempts: 3, notificationRetryMs: 100 });
    expect(thread.acceptNotifications(send(note('urgent'))).notifications[0].status).toBe('pending');
    expect(record(thread, 'n1')).toMatchObject({
      deliveryAttempts: 1,
      deliverAt: 1_100,
      lastDeliveryError: expect.stringMatching(/inputs waiting/),
    });
    clock.advance(100);
    thread.dispatchNotifications();
    expect(record(thread, 'n1')).toMatchObject({ status: 'pending', deliveryAttempts: 2, deliverAt: 1_300 });
    clock.advance(200);
    thread.takeOutbox();
    thread.dispatchNotifications();
    expect(record(thread, 'n1')).toMatchObject({ status: 'failed', deliveryAttempts: 3 });
    expect(record(thread, 'n1').deliverAt).toBeUndefined();
    expect(thread.nextNotificationDeadline()).toBeUndefined();
    const [event] = thread.takeOutbox();
    expect(event.payload).toMatchObject({ notification: { id: 'n1', status: 'failed' } });
    expect(thread.run!.pending).toEqual([]);
  });
});

describe('eviction', () => {
  it('moves the oldest closed records beyond maxInboxRecords out for the archive; pending ones stay', () => {
    const { thread, clock } = active({ maxInboxRecords: 2 });
    thread.acceptNotifications(send(note('low')));
    clock.advance(1);
    thread.acceptNotifications(send(note('low', { kind: 'pr' })));
    clock.advance(1);
    thread.changeNotificationStatus({ ids: ['n2'], change: 'dismiss' });
    thread.takeOutbox();
    clock.advance(1);
    // n1 is the oldest record, but pending: the closed n2 leaves instead.
    thread.acceptNotifications(send(note('low', { kind: 'issue' })));
    expect(thread.listNotifications().notifications.map((r) => r.id)).toEqual(['n3', 'n1']);
    expect(announcements(thread.takeOutbox())).toEqual(['n3:created', 'n2:evicted']);
    expect(thread.evictedCount).toBe(1);
    const evicted = thread.takeEvicted();
    expect(evicted.map((r) => [r.id, r.status])).toEqual([['n2', 'dismissed']]);
    expect(thread.evictedCount).toBe(0);
    thread.restoreEvicted(evicted);
    expect(thread.takeEvicted(1).map((r) => r.id)).toEqual(['n2']);
  });

  it('gives the main loop work to archive evicted records while idle', () => {
    const { thread } = newThread({ maxInboxRecords: 1 });
    thread.acceptNotifications(send(note('low')), { policy: { default: 'discard' } });
    thread.acceptNotifications(send(note('low')), { policy: { default: 'discard' } });
    thread.takeOutbox();
    expect(thread.evictedCount).toBe(1);
    expect(thread.hasWork()).toBe(true);
    thread.takeEvicted();
    expect(thread.hasWork()).toBe(false);
  });
});
