import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBus } from '../../bus/memory';
import { RedisBus } from '../../bus/redis';
import type { BusItem, BusRetention, ControlNotice, EventBus, SubscribeFrom } from '../../bus/types';
import { THREAD_FIRST_EVENT_KEY, workflowEventKey, type EventDraft, type ThreadEvent } from '../../protocol/events';
import { startRedis, type RedisServer } from '../support/redis';

let redis: RedisServer | undefined;

beforeAll(async () => {
  redis = await startRedis();
}, 30_000);

afterAll(async () => {
  await redis?.stop();
});

const implementations = [
  { name: 'memory', create: (retention: Partial<BusRetention>): EventBus => new MemoryBus(retention) },
  {
    name: 'redis',
    create: (retention: Partial<BusRetention>): EventBus =>
      new RedisBus(redis!.url, { ...retention, prefix: `test-${randomUUID()}` }),
  },
];

describe.each(implementations)('$name bus', { timeout: 30_000 }, ({ name, create }) => {
  const cleanups: (() => Promise<void> | void)[] = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function newBus(retention: Partial<BusRetention> = {}): EventBus {
    const bus = create(retention);
    cleanups.push(() => bus.close());
    return bus;
  }

  function subscribe(bus: EventBus, threadKey: string, from: SubscribeFrom) {
    const controller = new AbortController();
    cleanups.push(() => controller.abort());
    const iterator = bus.subscribe(threadKey, from, controller.signal)[Symbol.asyncIterator]();
    return { iterator, abort: () => controller.abort() };
  }

  it('archives notification records: newest first, paged, a record stored twice listed once, threads apart', async () => {
    const bus = newBus();
    const records = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => ({ id: `n${from + i}`, summary: `s${from + i}` }));
    await bus.archive('t:a', records(1, 3));
    await bus.archive('t:a', records(3, 5)); // n3 again: a retried activity
    await bus.archive('t:b', records(9, 9));
    const first = await bus.archived('t:a', { limit: 3 });
    expect(first.notifications.map((r) => r.id)).toEqual(['n5', 'n4', 'n3']);
    const second = await bus.archived('t:a', { limit: 3, cursor: first.nextCursor! });
    expect(second).toEqual({ notifications: [records(2, 2)[0], records(1, 1)[0]], nextCursor: null });
    expect((await bus.archived('t:b', { limit: 10 })).notifications).toEqual(records(9, 9));
    expect(await bus.archived('t:none', { limit: 10 })).toEqual({ notifications: [], nextCursor: null });
    await expect(bus.archived('t:a', { limit: 1, cursor: 'x' })).rejects.toThrow(/Invalid cursor/);
  });

  it('assigns strictly increasing ids and keeps publish order', async () => {
    const bus = newBus();
    const thread = newThread();
    // The thread's first event first, as every thread's stream begins: read from the start, no gap.
    const published: ThreadEvent[] = await bus.publish(thread, [draft(THREAD_FIRST_EVENT_KEY)]);
    for (let burst = 0; burst < 3; burst++) {
      published.push(...(await bus.publish(thread, drafts(`b${burst}-`, 5))));
    }

    expect(published.slice(1).map((event) => event.payload)).toEqual(
      ['b0-', 'b1-', 'b2-'].flatMap((prefix) => drafts(prefix, 5).map((draft) => draft.payload)),
    );
    expectIncreasing(published.map((event) => event.id));
    expect(published[1]).toEqual({
      id: published[1].id,
      threadKey: thread,
      runId: 'run-1',
      type: 'text-delta',
      payload: { key: 'b0-0' },
      at: 1_000,
    });

    const { iterator } = subscribe(bus, thread, { afterId: '0' });
    expect(events(await take(iterator, 16))).toEqual(published);
  });

  it('publishes a key once, also within a batch and across a retried batch', async () => {
    const bus = newBus();
    const thread = newThread();
    const a = THREAD_FIRST_EVENT_KEY;
    const [a1] = await bus.publish(thread, [draft(a)]);
    const [a2] = await bus.publish(thread, [draft(a)]);
    expect(a2).toEqual(a1);

    const first = await bus.publish(thread, [draft('b'), draft('c')]);
    const retried = await bus.publish(thread, [draft('c'), draft('d'), draft('d'), draft('e')]);
    expect(retried[0]).toEqual(first[1]);
    expect(retried[2]).toEqual(retried[1]);
    await bus.publish(thread, [draft('end')]);

    const { iterator } = subscribe(bus, thread, { afterId: '0' });
    const seen = events(await take(iterator, 6));
    expect(seen.map(keyOf)).toEqual([a, 'b', 'c', 'd', 'e', 'end']);
    expectIncreasing(seen.map((event) => event.id));
  });

  it('resumes after an id with every later event exactly once while publishing goes on', async () => {
    const bus = newBus();
    const thread = newThread();
    const all = drafts('k', 500);
    const published: ThreadEvent[] = [];
    for (let i = 0; i < 250; i += 25) published.push(...(await bus.publish(thread, all.slice(i, i + 25))));

    const { iterator } = subscribe(bus, thread, { afterId: published[124].id });
    const received = take(iterator, 375);
    for (let i = 250; i < 500; i += 10) {
      published.push(...(await bus.publish(thread, all.slice(i, i + 10))));
      await new Promise((resolve) => setImmediate(resolve));
    }

    const seen = events(await received);
    expect(seen.map(keyOf)).toEqual(all.slice(125).map((d) => d.key));
    expect(seen).toEqual(published.slice(125));
  });

  it('gives two subscribers the same sequence', async () => {
    const bus = newBus();
    const thread = newThread();
    const one = subscribe(bus, thread, { live: true });
    const two = subscribe(bus, thread, { live: true });
    const received = Promise.all([take(one.iterator, 60), take(two.iterator, 60)]);
    for (let i = 0; i < 60; i += 6) await bus.publish(thread, drafts(`x${i}-`, 6));

    const [first, second] = await received;
    expect(first).toEqual(second);
    expect(first).toHaveLength(60);
  });

  it('starts an activeRun subscription at the start of the unfinished run', async () => {
    const bus = newBus();
    const thread = newThread();
    await bus.publish(thread, [
      draft('r1-start', 'start', 'run-1'),
      draft('r1-delta', 'text-delta', 'run-1'),
      draft('r1-finish', 'finish', 'run-1'),
      draft('user', 'data-user-message', undefined),
      draft('r2-start', 'start', 'run-2'),
      draft('r2-delta', 'text-delta', 'run-2'),
    ]);

    const { iterator } = subscribe(bus, thread, { activeRun: true });
    await bus.publish(thread, [draft('r2-finish', 'finish', 'run-2')]);

    expect(events(await take(iterator, 3)).map(keyOf)).toEqual(['r2-start', 'r2-delta', 'r2-finish']);
  });

  it('starts an activeRun subscription at the live edge when the last run finished', async () => {
    const bus = newBus();
    const thread = newThread();
    await bus.publish(thread, [
      draft('r1-start', 'start', 'run-1'),
      draft('r1-abort', 'abort', 'run-1'),
      draft('r2-start', 'start', 'run-2'),
      draft('r2-delta', 'text-delta', 'run-2'),
      draft('r2-finish', 'finish', 'run-2'),
      draft('state', 'state-updated', undefined),
    ]);

    const { iterator } = subscribe(bus, thread, { activeRun: true });
    await bus.publish(thread, [draft('r3-start', 'start', 'run-3')]);

    expect(events(await take(iterator, 1)).map(keyOf)).toEqual(['r3-start']);
  });

  it('starts a live subscription after the past, also on a thread nobody published to', async () => {
    const bus = newBus();
    const thread = newThread();
    await bus.publish(thread, drafts('old', 3));
    const past = subscribe(bus, thread, { live: true });
    const empty = subscribe(bus, `${thread}-empty`, { live: true });
    await bus.publish(thread, drafts('new', 2));
    await bus.publish(`${thread}-empty`, drafts('first', 1));

    expect(events(await take(past.iterator, 2)).map(keyOf)).toEqual(['new0', 'new1']);
    expect(events(await take(empty.iterator, 1)).map(keyOf)).toEqual(['first0']);
  });

  it('marks a gap when events after the resume id were trimmed, and only then', async () => {
    // Redis trims `MAXLEN ~` by whole stream nodes (100 entries), so publish enough to trim either bus.
    const bus = newBus({ maxEvents: 10 });
    const thread = newThread();
    const published: ThreadEvent[] = [];
    const all = drafts('k', 300);
    for (let i = 0; i < 300; i += 50) published.push(...(await bus.publish(thread, all.slice(i, i + 50))));
    const last = published[published.length - 1].id;

    const behind = subscribe(bus, thread, { afterId: published[0].id });
    const [gap] = await take(behind.iterator, 1);
    expect(gap.kind).toBe('gap');
    const oldest = published.findIndex((event) => event.id === (gap as Extract<BusItem, { kind: 'gap' }>).oldestId);
    expect(oldest).toBeGreaterThan(1);
    expect(oldest).toBeLessThanOrEqual(300 - 10);
    expect(events(await take(behind.iterator, 300 - oldest))).toEqual(published.slice(oldest));

    // From the thread's start: one gap (its first entries were trimmed, and it does not begin with the thread's first
    // event either), then the retained events.
    const fromStart = subscribe(bus, thread, { afterId: '0' });
    const [startGap, ...retained] = await take(fromStart.iterator, 301 - oldest);
    expect(startGap).toEqual({ kind: 'gap', oldestId: published[oldest].id });
    expect(events(retained)).toEqual(published.slice(oldest));

    const atBoundary = subscribe(bus, thread, { afterId: published[oldest - 1].id });
    expect(events(await take(atBoundary.iterator, 300 - oldest))).toEqual(published.slice(oldest));

    const nearEnd = subscribe(bus, thread, { afterId: published[298].id });
    expect(await take(nearEnd.iterator, 1)).toEqual([{ kind: 'event', event: published[299] }]);
    expect(published[299].id).toBe(last);
  });

  it('marks a gap mid-stream when a slow subscriber falls behind the retained window', async () => {
    const bus = newBus({ maxEvents: 10 });
    const thread = newThread();
    const { iterator } = subscribe(bus, thread, { live: true });
    await bus.publish(thread, drafts('first', 1));
    await take(iterator, 1);
    const all = drafts('k', 300);
    const published: ThreadEvent[] = [];
    for (let i = 0; i < 300; i += 50) published.push(...(await bus.publish(thread, all.slice(i, i + 50))));

    const [gap] = await take(iterator, 1);
    expect(gap.kind).toBe('gap');
    const oldest = published.findIndex((event) => event.id === (gap as Extract<BusItem, { kind: 'gap' }>).oldestId);
    expect(oldest).toBeGreaterThan(0);
    expect(events(await take(iterator, 300 - oldest))).toEqual(published.slice(oldest));
  });

  it('reads a brand-new thread from its start with no gap, whether the events came before or after the subscription', async () => {
    const bus = newBus();
    const thread = newThread();
    const early = subscribe(bus, thread, { afterId: '0' });
    const opening = [draft(THREAD_FIRST_EVENT_KEY, 'start'), draft(workflowEventKey(2), 'data-user-message')];
    const published = await bus.publish(thread, [...opening, ...drafts('s:step-1:1:', 3)]);
    const late = subscribe(bus, thread, { afterId: '0' });
    expect(await take(early.iterator, 5)).toEqual(published.map((event) => ({ kind: 'event', event })));
    expect(await take(late.iterator, 5)).toEqual(published.map((event) => ({ kind: 'event', event })));
  });

  it("marks a gap for a reader from the start when the thread began anew on the bus (its first event is not the thread's)", async () => {
    // A fresh bus whose first event of the thread is the workflow's 32nd (what an in-process bus sees after a restart,
    // or an expired or lost stream): the 31 before it are not there, and a reader of the whole thread must be told.
    const bus = newBus();
    const thread = newThread();
    const early = subscribe(bus, thread, { afterId: '0' });
    const published = await bus.publish(thread, [draft(workflowEventKey(32), 'start'), draft('s:step-9:1:0')]);
    const late = subscribe(bus, thread, { afterId: '0' });
    for (const { iterator } of [early, late]) {
      const [gap, ...rest] = await take(iterator, 3);
      expect(gap).toEqual({ kind: 'gap', oldestId: published[0].id });
      expect(events(rest)).toEqual(published);
    }
    // A step's event first (the thread's earlier events lost in the middle of a step): the same.
    const midStep = newThread();
    const [delta] = await bus.publish(midStep, [draft('s:step-3:1:7')]);
    const [gap, ...rest] = await take(subscribe(bus, midStep, { afterId: '0' }).iterator, 2);
    expect(gap).toEqual({ kind: 'gap', oldestId: delta.id });
    expect(events(rest)).toEqual([delta]);
    // Readers that asked for no past (live, or the active run of a thread with no event) get no gap.
    const other = newThread();
    const live = subscribe(bus, other, { live: true });
    const activeRun = subscribe(bus, other, { activeRun: true });
    const [first] = await bus.publish(other, [draft(workflowEventKey(7), 'start', 'run-7')]);
    expect(await take(live.iterator, 1)).toEqual([{ kind: 'event', event: first }]);
    expect(await take(activeRun.iterator, 1)).toEqual([{ kind: 'event', event: first }]);
  });

  it('forgets an idle thread, keys included', async () => {
    const bus = newBus({ idleMs: 1 });
    const thread = newThread();
    const [first] = await bus.publish(thread, [{ ...draft('a'), at: 1 }]);
    expect(first.at).toBe(1);
    // The deadline itself is what we wait for: after it, nothing of the thread is retained.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [again] = await bus.publish(thread, [{ ...draft('a'), at: 2 }]);
    expect(again.at).toBe(2);
  });

  it('ends iteration when the signal aborts or the bus closes', async () => {
    const bus = newBus();
    const thread = newThread();
    const aborted = subscribe(bus, thread, { live: true });
    const pending = aborted.iterator.next();
    aborted.abort();
    expect(await within(pending)).toEqual({ done: true, value: undefined });

    const preAborted = new AbortController();
    preAborted.abort();
    const never = bus.subscribe(thread, { afterId: '0' }, preAborted.signal)[Symbol.asyncIterator]();
    expect(await within(never.next())).toEqual({ done: true, value: undefined });

    const open = subscribe(bus, thread, { live: true });
    await bus.publish(thread, drafts('k', 1));
    await take(open.iterator, 1);
    const waiting = open.iterator.next();
    await bus.close();
    expect(await within(waiting)).toEqual({ done: true, value: undefined });
  });

  it('sends control notices to every listener, this bus included, until each stops listening', async () => {
    const bus = newBus();
    const one = noticeLog();
    const two = noticeLog();
    const stopOne = await bus.onNotice(one.listener);
    const stopTwo = await bus.onNotice(two.listener);
    cleanups.push(stopTwo);
    const notice = stepCancel('1');
    await bus.sendNotice(notice);
    await one.heard(1);
    await two.heard(1);

    await stopOne();
    await bus.sendNotice(stepCancel('2'));
    await two.heard(2);
    // Both listeners hear a notice at once: once the second has it, the first would have it too.
    expect(one.seen).toEqual([notice]);
    expect(two.seen).toEqual([notice, stepCancel('2')]);
  });

  if (name === 'memory') {
    it('treats an id it never issued (an earlier process) as a gap, then replays what it retains', async () => {
      const bus = newBus();
      const thread = newThread();
      await bus.publish(thread, drafts('now', 2));
      const { iterator } = subscribe(bus, thread, { afterId: '500' });
      const [gap, ...rest] = await take(iterator, 3);
      expect(gap.kind).toBe('gap');
      expect(events(rest).map(keyOf)).toEqual(['now0', 'now1']);
    });
  }

  if (name === 'redis') {
    it('keeps the keys hash within about twice the retained window', async () => {
      const prefix = `test-${randomUUID()}`;
      const bus = new RedisBus(redis!.url, { maxEvents: 10, prefix });
      cleanups.push(() => bus.close());
      const thread = newThread();
      const all = drafts('k', 1_000);
      for (let i = 0; i < all.length; i += 50) await bus.publish(thread, all.slice(i, i + 50));
      const retained = await bus.publish(thread, [{ ...all[999], at: 2 }]);
      expect(retained[0].at).toBe(1_000);

      const client = new Redis(redis!.url);
      cleanups.push(() => void client.disconnect());
      expect(await client.hlen(`${prefix}:keys:${thread}`)).toBeLessThanOrEqual(2 * 10 + 200);
      expect(await client.pttl(`${prefix}:keys:${thread}`)).toBeGreaterThan(0);
    });

    it('sends a notice to every bus on the same Redis and prefix, no other', async () => {
      const prefix = `test-${randomUUID()}`;
      const [sender, same, other] = [prefix, prefix, `${prefix}-other`].map((p) => {
        const bus = new RedisBus(redis!.url, { prefix: p });
        cleanups.push(() => bus.close());
        return bus;
      });
      const sameLog = noticeLog();
      const otherLog = noticeLog();
      cleanups.push(await same.onNotice(sameLog.listener), await other.onNotice(otherLog.listener));
      await sender.sendNotice(stepCancel('1'));
      await sameLog.heard(1);
      // Redis delivers in order per connection: what the other prefix could hear of it, it heard before this.
      await other.sendNotice(stepCancel('mark'));
      await otherLog.heard(1);
      expect(otherLog.seen).toEqual([stepCancel('mark')]);
    });

    it('hears notices again after a redis-server restart', async () => {
      const bus = newBus();
      const log = noticeLog();
      cleanups.push(await bus.onNotice(log.listener));
      await bus.sendNotice(stepCancel('before'));
      await log.heard(1);

      await redis!.restart();
      // Sent while the bus reconnects, a notice is dropped: send until one arrives.
      for (let i = 0; log.seen.length < 2; i++) {
        if (i > 1_500) throw new Error('No notice heard within 15 s of the restart');
        await bus.sendNotice(stepCancel('after'));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(log.seen[1]).toEqual(stepCancel('after'));
    });

    // The shared redis-server runs without persistence: a restart loses every stream (docs/operations.md, Redis).
    it('keeps a subscription across a redis-server restart that lost the stream, with a gap before the new events', async () => {
      const bus = newBus();
      const thread = newThread();
      const { iterator } = subscribe(bus, thread, { live: true });
      await bus.publish(thread, drafts('before', 3));
      expect(events(await take(iterator, 3)).map(keyOf)).toEqual(['before0', 'before1', 'before2']);

      const waiting = take(iterator, 3);
      await redis!.restart();
      await bus.publish(thread, drafts('after', 2));
      // Events published after the subscriber's last read may have been lost with the stream: never a silent hole.
      const [gap, ...rest] = await waiting;
      expect(gap).toMatchObject({ kind: 'gap' });
      expect(events(rest).map(keyOf)).toEqual(['after0', 'after1']);
    });

    it('marks a gap for a resume from an id of a stream Redis lost, then yields the new stream once, in order', async () => {
      const bus = newBus();
      const thread = newThread();
      const before = await bus.publish(thread, drafts('before', 3));
      await redis!.restartEmpty();
      await bus.publish(thread, drafts('after', 2));
      // Resumed from the middle of the lost stream: `before2` is gone, so is everything after the resume id.
      const { iterator } = subscribe(bus, thread, { afterId: before[1].id });
      const [gap, ...rest] = await take(iterator, 3);
      expect(gap).toMatchObject({ kind: 'gap' });
      expect(events(rest).map(keyOf)).toEqual(['after0', 'after1']);
      // A subscriber of the new stream from one of its ids sees no gap (from its start, see below).
      const [first] = events(rest);
      const fromNew = subscribe(bus, thread, { afterId: first.id });
      expect(events(await take(fromNew.iterator, 1)).map(keyOf)).toEqual(['after1']);
    });

    it("marks a gap for a reader from the thread's start across a Redis that lost its data, then the new stream", async () => {
      // The chaos finding: a subscriber that never received an event resumes from `0-0` after Redis came back empty.
      const bus = newBus();
      const thread = newThread();
      const w = (seq: number) => draft(workflowEventKey(seq), 'data-signal', undefined);
      await bus.publish(thread, [w(1), w(2), w(3)]);
      await redis!.restartEmpty();
      const after = await bus.publish(thread, [w(4), draft('s:step-2:1:0'), w(5)]);
      const fromStart = subscribe(bus, thread, { afterId: '0-0' });
      const [gap, ...rest] = await take(fromStart.iterator, 4);
      expect(gap).toEqual({ kind: 'gap', oldestId: after[0].id });
      expect(events(rest)).toEqual(after);

      // A step's retried publish of the thread's first events (the killed attempt's work lost with Redis) begins the
      // new stream with the thread's first event: the whole thread is there, no gap.
      const again = newThread();
      await bus.publish(again, [w(1), draft('s:step-1:1:0')]);
      await redis!.restartEmpty();
      const republished = await bus.publish(again, [w(1), w(2), draft('s:step-1:2:0')]);
      const whole = subscribe(bus, again, { afterId: '0' });
      expect(await take(whole.iterator, 3)).toEqual(republished.map((event) => ({ kind: 'event', event })));
    });

    it('reads entries an earlier version wrote (no publish key stored) as before: no gap, no failure', async () => {
      const prefix = `test-${randomUUID()}`;
      const bus = new RedisBus(redis!.url, { prefix });
      cleanups.push(() => bus.close());
      const client = new Redis(redis!.url);
      cleanups.push(() => void client.disconnect());
      const thread = newThread();
      const stream = `${prefix}:events:${thread}`;
      // As the earlier script wrote them: `p` and `e`, no `k`, and the publish keys in the hash.
      const old = (seq: number) => JSON.stringify({ threadKey: thread, type: 'data-signal', payload: { seq }, at: 1 });
      const firstId = await client.xadd(stream, '*', 'p', '0-0', 'e', old(7));
      const secondId = await client.xadd(stream, '*', 'p', firstId!, 'e', old(8));
      await client.hset(`${prefix}:keys:${thread}`, workflowEventKey(7), firstId!, workflowEventKey(8), secondId!);
      const [newer] = await bus.publish(thread, [draft(workflowEventKey(9), 'data-signal', undefined)]);

      const fromStart = subscribe(bus, thread, { afterId: '0-0' });
      const items = await take(fromStart.iterator, 3);
      expect(items.map((item) => item.kind)).toEqual(['event', 'event', 'event']);
      expect(events(items).map((event) => event.id)).toEqual([firstId, secondId, newer.id]);
      // Published again, an old entry's key still returns it (publishing stays idempotent across the upgrade).
      const [retained] = await bus.publish(thread, [draft(workflowEventKey(7), 'data-signal', undefined)]);
      expect(retained.id).toBe(firstId);
      // Only the entry that begins a stream stores its key.
      const entries = await client.xrange(stream, '-', '+');
      expect(entries.at(-1)![1]).not.toContain('k');
    });
  }
});

function stepCancel(stepKey: string): ControlNotice {
  return { type: 'step-cancel', namespace: 'default', threadKey: 'r1:t1', stepKey };
}

/** Records the notices a listener hears; `heard(n)` resolves once it has `n` of them (fails after 15 s). */
function noticeLog() {
  const seen: ControlNotice[] = [];
  const waiters = new Set<() => void>();
  return {
    seen,
    listener: (notice: ControlNotice) => {
      seen.push(notice);
      for (const wake of waiters) wake();
    },
    heard: (count: number) =>
      within(
        new Promise<void>((resolve) => {
          const check = () => {
            if (seen.length < count) return;
            waiters.delete(check);
            resolve();
          };
          waiters.add(check);
          check();
        }),
        15_000,
        () => `heard ${seen.length} of ${count} notices`,
      ),
  };
}

function newThread(): string {
  return `thread-${randomUUID()}`;
}

function draft(key: string, type: EventDraft['type'] = 'text-delta', runId: string | undefined = 'run-1'): EventDraft {
  return { key, ...(runId !== undefined && { runId }), type, payload: { key }, at: 1_000 };
}

function drafts(prefix: string, count: number): EventDraft[] {
  return Array.from({ length: count }, (_, i) => draft(`${prefix}${i}`));
}

function keyOf(event: ThreadEvent): string {
  return (event.payload as { key: string }).key;
}

function events(items: BusItem[]): ThreadEvent[] {
  return items.map((item) => {
    if (item.kind !== 'event') throw new Error(`Expected an event, got ${JSON.stringify(item)}`);
    return item.event;
  });
}

/** Works for both id formats: `42` (memory) and `1718000000000-3` (Redis). */
function expectIncreasing(ids: string[]): void {
  const parse = (id: string) => id.split('-').map(BigInt);
  for (let i = 1; i < ids.length; i++) {
    const [ams, aseq = 0n] = parse(ids[i - 1]);
    const [bms, bseq = 0n] = parse(ids[i]);
    expect(ams < bms || (ams === bms && aseq < bseq), `${ids[i - 1]} < ${ids[i]}`).toBe(true);
  }
}

async function take(iterator: AsyncIterator<BusItem>, count: number, timeoutMs = 15_000): Promise<BusItem[]> {
  const items: BusItem[] = [];
  while (items.length < count) {
    const result = await within(iterator.next(), timeoutMs, () => `${items.length} of ${count} items`);
    if (result.done) throw new Error(`Subscription ended after ${items.length} of ${count} items`);
    items.push(result.value);
  }
  return items;
}

async function within<T>(promise: Promise<T>, timeoutMs = 15_000, progress = () => ''): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${timeoutMs} ms ${progress()}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
