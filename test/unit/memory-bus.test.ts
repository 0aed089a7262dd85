/**
 * The in-process bus stays bounded by what was published, not by what was asked for: subscribing to threads nobody
 * published to (any caller can name any thread) leaves nothing behind once the subscriptions end.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBus } from '../../bus/memory';

const draft = (key: string) => ({ key, type: 'start' as const, payload: {}, at: 0 });

async function firstItem(bus: MemoryBus, threadKey: string, controller: AbortController) {
  const iterator = bus.subscribe(threadKey, { live: true }, controller.signal)[Symbol.asyncIterator]();
  const next = iterator.next();
  return { next, iterator };
}

describe('MemoryBus memory', () => {
  it('keeps no log for unknown threads once their subscribers leave', async () => {
    const bus = new MemoryBus();
    for (let i = 0; i < 1_000; i++) {
      const controller = new AbortController();
      const { next } = await firstItem(bus, `thread:nobody:${i}`, controller);
      controller.abort();
      expect((await next).done).toBe(true);
    }
    expect(bus.retainedThreads).toBe(0);
    await bus.close();
  });

  it('still delivers to a subscriber of an unknown thread what is published after it subscribed', async () => {
    const bus = new MemoryBus();
    const controller = new AbortController();
    const { next } = await firstItem(bus, 'thread:a:b', controller);
    await bus.publish('thread:a:b', [draft('k1')]);
    const item = await next;
    expect(item.value).toMatchObject({ kind: 'event', event: { id: '1', type: 'start' } });
    controller.abort();
    // A thread with events keeps its log for resumes after its readers leave.
    expect(bus.retainedThreads).toBe(1);
    await bus.close();
  });

  it('a subscription that has not started reading yet still sees events published after subscribe()', async () => {
    const bus = new MemoryBus();
    const controller = new AbortController();
    const iterator = bus.subscribe('thread:c:d', { live: true }, controller.signal)[Symbol.asyncIterator]();
    await bus.publish('thread:c:d', [draft('k1'), draft('k2')]);
    expect((await iterator.next()).value).toMatchObject({ kind: 'event', event: { id: '1' } });
    expect((await iterator.next()).value).toMatchObject({ kind: 'event', event: { id: '2' } });
    controller.abort();
    await bus.close();
  });
});
