import type { AgentSummary } from '../protocol/api';
import {
  archivePage,
  defaultRetention,
  MAX_ARCHIVED_PER_THREAD,
  type ArchivePage,
  type BusItem,
  type BusRetention,
  type ControlNotice,
  type EventBus,
  type SubscribeFrom,
} from './types';
import { THREAD_FIRST_EVENT_KEY, type EventDraft, type ThreadEvent } from '../protocol/events';

/** One thread's retained window. Ids are `1, 2, 3, …` and the window always holds a contiguous range of them. */
class ThreadLog {
  private items: ThreadEvent[] = [];
  private head = 0;
  private readonly byKey = new Map<string, ThreadEvent>();
  private readonly keyOf = new WeakMap<ThreadEvent, string>();
  lastId = 0;
  /**
   * Whether the log began with the thread's first event (`THREAD_FIRST_EVENT_KEY`). A log that began with another one
   * began anew: the bus dropped the thread's earlier log (idle), or an earlier process had it.
   */
  beganWithThread = true;
  lastPublishAt = Date.now();
  readonly listeners = new Set<() => void>();

  get size(): number {
    return this.items.length - this.head;
  }

  get firstId(): number {
    return this.size === 0 ? this.lastId + 1 : Number(this.items[this.head].id);
  }

  at(index: number): ThreadEvent {
    return this.items[this.head + index];
  }

  append(threadKey: string, draft: EventDraft, maxEvents: number): ThreadEvent {
    const retained = this.byKey.get(draft.key);
    if (retained) return retained;
    if (this.lastId === 0) this.beganWithThread = draft.key === THREAD_FIRST_EVENT_KEY;
    const event: ThreadEvent = {
      id: String(++this.lastId),
      threadKey,
      ...(draft.runId !== undefined && { runId: draft.runId }),
      type: draft.type,
      payload: draft.payload,
      at: draft.at,
    };
    this.items.push(event);
    this.byKey.set(draft.key, event);
    this.keyOf.set(event, draft.key);
    while (this.size > maxEvents) this.byKey.delete(this.keyOf.get(this.items[this.head++])!);
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return event;
  }

  /** The next item for a subscriber that has seen everything up to `cursor`, or `undefined` when it is caught up. */
  next(cursor: number): BusItem | undefined {
    const firstId = this.firstId;
    if (cursor < firstId - 1) return { kind: 'gap', oldestId: this.size === 0 ? null : String(firstId) };
    const index = cursor - firstId + 1;
    return index < this.size ? { kind: 'event', event: this.at(index) } : undefined;
  }

  /** The cursor just before the `start` of the run in progress, or the live edge when no run is in progress. */
  activeRunCursor(): number {
    const ended = new Set<string | undefined>();
    for (let i = this.size - 1; i >= 0; i--) {
      const event = this.at(i);
      if (event.type === 'finish' || event.type === 'abort') ended.add(event.runId);
      if (event.type === 'start') return ended.has(event.runId) ? this.lastId : Number(event.id) - 1;
    }
    return this.lastId;
  }

  wake(): void {
    for (const listener of this.listeners) listener();
  }
}

/**
 * The in-process bus: the embedded default.
 *
 * Subscribers read the thread's retained window directly, so nothing is buffered per subscriber: a consumer that falls
 * more than `maxEvents` behind receives a `gap` item and continues from the oldest retained event. Payloads are kept
 * by reference (publish JSON-serializable values and don't mutate them afterwards, as the Redis bus would not see it).
 *
 * @example
 * const bus = new MemoryBus({ maxEvents: 1_000 });
 * for await (const item of bus.subscribe('r1:t1', { activeRun: true }, signal)) send(item);
 */
export class MemoryBus implements EventBus {
  private readonly retention: BusRetention;
  private readonly threads = new Map<string, ThreadLog>();
  /** Archived notification records per thread, oldest first (kept for the process's life, bounded). */
  private readonly archives = new Map<string, Record<string, unknown>[]>();
  private readonly onClose = new Set<() => void>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  private readonly announced = new Map<string, AgentSummary>();
  private readonly noticeListeners = new Set<(notice: ControlNotice) => void>();

  constructor(retention: Partial<BusRetention> = {}) {
    this.retention = { ...defaultRetention, ...retention };
    if (!(this.retention.maxEvents >= 1)) {
      throw new Error(`Invalid maxEvents: ${this.retention.maxEvents}. Retain at least 1 event per thread.`);
    }
    const every = Math.max(1_000, Math.min(this.retention.idleMs, 60_000));
    this.sweeper = setInterval(() => this.sweep(), every).unref();
  }

  async publish(threadKey: string, events: EventDraft[]): Promise<ThreadEvent[]> {
    if (this.closed) throw new Error('MemoryBus is closed: create a new bus to publish.');
    const thread = this.thread(threadKey);
    const published = events.map((draft) => thread.append(threadKey, draft, this.retention.maxEvents));
    thread.lastPublishAt = Date.now();
    thread.wake();
    return published;
  }

  subscribe(threadKey: string, from: SubscribeFrom, signal?: AbortSignal): AsyncIterable<BusItem> {
    if (this.closed) return this.stream(new ThreadLog(), threadKey, 0, signal);
    // Fix the starting point now, not on the first `next()`: `live` means published after this call. A thread nobody
    // published to gets a log only while someone reads it (the stream attaches it): subscribing to any number of
    // unknown threads must not grow the bus.
    const thread = this.retained(threadKey) ?? new ThreadLog();
    let cursor =
      'afterId' in from ? parseMemoryId(from.afterId) : 'activeRun' in from ? thread.activeRunCursor() : thread.lastId;
    // An id this bus never issued comes from an earlier process (ids restart at 1): everything retained is news to
    // the caller, after a gap marker.
    if (cursor > thread.lastId) cursor = -1;
    return this.stream(thread, threadKey, cursor, signal, 'afterId' in from && cursor === 0);
  }

  async archive(threadKey: string, records: Record<string, unknown>[]): Promise<void> {
    const kept = this.archives.get(threadKey) ?? [];
    kept.push(...records);
    if (kept.length > MAX_ARCHIVED_PER_THREAD) kept.splice(0, kept.length - MAX_ARCHIVED_PER_THREAD);
    this.archives.set(threadKey, kept);
  }

  async archived(threadKey: string, page: { limit: number; cursor?: string }): Promise<ArchivePage> {
    return archivePage([...(this.archives.get(threadKey) ?? [])].reverse(), page);
  }

  async announceAgents(agents: readonly AgentSummary[]): Promise<void> {
    for (const agent of agents) this.announced.set(agent.id, agent);
  }

  async agents(): Promise<AgentSummary[]> {
    return [...this.announced.values()];
  }

  async sendNotice(notice: ControlNotice): Promise<void> {
    if (this.closed) return;
    // Heard on a later turn of the event loop, as over a network: the sender (a workflow's sink call, made before the
    // worker completes its workflow task) never runs a listener's code.
    const listeners = [...this.noticeListeners];
    setImmediate(() => {
      for (const listener of listeners) if (this.noticeListeners.has(listener)) listener(notice);
    });
  }

  async onNotice(listener: (notice: ControlNotice) => void): Promise<() => Promise<void>> {
    this.noticeListeners.add(listener);
    return async () => void this.noticeListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.noticeListeners.clear();
    clearInterval(this.sweeper);
    for (const listener of this.onClose) listener();
    this.threads.clear();
  }

  private async *stream(
    captured: ThreadLog,
    threadKey: string,
    cursor: number,
    signal?: AbortSignal,
    /** The caller reads the thread from its start: a log that began anew starts with a gap. */
    fromThreadStart = false,
  ): AsyncGenerator<BusItem> {
    if (this.closed || signal?.aborted) return;
    let thread = this.threads.get(threadKey);
    if (thread !== captured) {
      // Swept as idle between `subscribe()` and the first `next()`: nothing was published since, so reattach it.
      // If the thread was recreated and published to meanwhile, all of that is newer than the subscribe call.
      if (thread) cursor = 0;
      else this.threads.set(threadKey, (thread = captured));
    }
    let wake: (() => void) | undefined;
    const notify = () => wake?.();
    const stopped = () => this.closed || signal?.aborted === true;
    const detach = () => {
      thread.listeners.delete(notify);
      this.onClose.delete(notify);
      signal?.removeEventListener('abort', onAbort);
      // The last reader of a thread that never had an event leaves: nothing to keep.
      if (thread.listeners.size === 0 && thread.lastId === 0 && this.threads.get(threadKey) === thread) {
        this.threads.delete(threadKey);
      }
    };
    const onAbort = () => {
      detach();
      notify();
    };
    thread.listeners.add(notify);
    this.onClose.add(notify);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      while (!stopped()) {
        const item = thread.next(cursor);
        if (!item) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        cursor = item.kind === 'event' ? Number(item.event.id) : thread.firstId - 1;
        if (fromThreadStart && item.kind === 'event' && item.event.id === '1' && !thread.beganWithThread) {
          yield { kind: 'gap', oldestId: '1' };
        }
        fromThreadStart = false;
        yield item;
      }
    } finally {
      detach();
    }
  }

  private thread(threadKey: string): ThreadLog {
    let thread = this.retained(threadKey);
    if (!thread) this.threads.set(threadKey, (thread = new ThreadLog()));
    return thread;
  }

  /** The thread's log, unless it has none or it went idle (then it is dropped). */
  private retained(threadKey: string): ThreadLog | undefined {
    const thread = this.threads.get(threadKey);
    if (thread && this.isIdle(thread, Date.now())) {
      this.threads.delete(threadKey);
      return undefined;
    }
    return thread;
  }

  /** Threads the bus keeps a log for (a measure of its memory). */
  get retainedThreads(): number {
    return this.threads.size;
  }

  private isIdle(thread: ThreadLog, now: number): boolean {
    // A thread someone is subscribed to stays: dropping it would restart its ids under the subscriber's cursor.
    return thread.listeners.size === 0 && now - thread.lastPublishAt >= this.retention.idleMs;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [threadKey, thread] of this.threads) if (this.isIdle(thread, now)) this.threads.delete(threadKey);
  }
}

function parseMemoryId(id: string): number {
  if (!/^\d+$/.test(id)) {
    throw new Error(`Invalid event id for the memory bus: "${id}". Pass an id this bus returned, like "42".`);
  }
  return Number(id);
}
