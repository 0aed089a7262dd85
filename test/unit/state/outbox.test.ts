import { describe, expect, it } from 'vitest';
import { emptySnapshot, ThreadState } from '../../../workflows/state';
import { Outbox } from '../../../workflows/state/outbox';
import { fakeClock, input, newThread } from './support';

function newOutbox() {
  const clock = fakeClock();
  return { outbox: new Outbox(emptySnapshot('r', 't'), clock), clock };
}

const keys = (events: { key: string }[]) => events.map((e) => e.key);

describe('Outbox', () => {
  it('numbers events in order with the time they were decided, and a runId only when given', () => {
    const { outbox, clock } = newOutbox();
    outbox.emit('queue-updated', { queue: [] });
    clock.advance(5);
    outbox.emit('start', { runId: 'r1' }, 'r1');
    expect(outbox.take()).toEqual([
      { key: 'w:1', type: 'queue-updated', payload: { queue: [] }, at: 1_000 },
      { key: 'w:2', type: 'start', payload: { runId: 'r1' }, at: 1_005, runId: 'r1' },
    ]);
    expect(outbox.size).toBe(0);
  });

  it('takes the oldest events within a byte budget, and always at least one', () => {
    const { outbox } = newOutbox();
    for (let i = 0; i < 3; i++) outbox.emit('run-retry', { text: 'x'.repeat(100) });
    const all = outbox.take();
    outbox.restore(all);
    const size = JSON.stringify(all[0]).length;
    expect(keys(outbox.take(2 * size + 1))).toEqual(['w:1', 'w:2']);
    expect(keys(outbox.take(1))).toEqual(['w:3']);
    expect(outbox.take(1)).toEqual([]);
  });

  it('puts events it could not publish back at the front, in order, and keeps numbering after them', () => {
    const { outbox } = newOutbox();
    outbox.emit('run-retry', 1);
    outbox.emit('run-retry', 2);
    const taken = outbox.take();
    outbox.emit('run-retry', 3);
    outbox.restore(taken);
    expect(keys(outbox.take())).toEqual(['w:1', 'w:2', 'w:3']);
  });

  it('tells whether it holds more than a budget', () => {
    const { outbox } = newOutbox();
    expect(outbox.exceeds(0)).toBe(false);
    outbox.emit('run-retry', { text: 'x'.repeat(100) });
    expect(outbox.exceeds(1_000)).toBe(false);
    expect(outbox.exceeds(50)).toBe(true);
  });

  it("collapses a record's unpublished announcements into one event, updated in place", () => {
    const { outbox, clock } = newOutbox();
    outbox.announce('n1', { change: 'created' });
    outbox.emit('run-retry', {});
    clock.advance(10);
    outbox.announce('n1', { change: 'coalesced' });
    outbox.announce('n2', { change: 'created' });
    expect(outbox.take()).toEqual([
      { key: 'w:1', type: 'notification-updated', payload: { change: 'coalesced' }, at: 1_010 },
      { key: 'w:2', type: 'run-retry', payload: {}, at: 1_000 },
      { key: 'w:3', type: 'notification-updated', payload: { change: 'created' }, at: 1_010 },
    ]);
  });

  it('announces anew once the earlier announcement was taken for publishing (even if it comes back)', () => {
    const { outbox } = newOutbox();
    outbox.announce('n1', { change: 'created' });
    const taken = outbox.take();
    outbox.restore(taken);
    outbox.announce('n1', { change: 'seen' });
    expect(outbox.take().map((e) => e.payload)).toEqual([{ change: 'created' }, { change: 'seen' }]);
  });
});

describe('the thread outbox', () => {
  it('carries unpublished events across continue-as-new, numbering on after them', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    const copy = new ThreadState(JSON.parse(JSON.stringify(thread.snapshot())), thread.config, fakeClock());
    copy.emit('run-retry', {});
    expect(copy.takeOutbox().map((e) => `${e.key} ${e.type}`)).toEqual(['w:1 start', 'w:2 run-retry']);
  });
});
