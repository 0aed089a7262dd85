import type { AgentSummary } from '../protocol/api';
import { setMaxListeners } from 'node:events';
import { Redis, type Result } from 'ioredis';
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

/*
 * Each entry stores `p` (the id of the entry before it, `0-0` for the first of a stream) and `e` (the event JSON
 * without its id). A subscriber that has seen up to `lastId` and reads an entry whose `p` is newer than `lastId`
 * knows entries in between were trimmed: that is the gap test, exact even with approximate trimming. An entry whose
 * `p` is `0-0` read after a `lastId` began the stream anew: Redis lost it (restarted without persistence, or the
 * stream expired), so the events after `lastId` may be gone too: also a gap.
 *
 * The entry that begins a stream also stores `k`, its publish key. A subscriber that reads the thread from its start
 * (`afterId` `0-0`) cannot tell by `p` a brand-new thread's first entry from that of a stream that began anew after
 * Redis lost the thread's earlier events: `k` tells, as every thread's stream begins with its first event
 * (`THREAD_FIRST_EVENT_KEY`, `w:1`). A stream that begins with any other key (a later workflow event `w:N`, a step's
 * or a tool's event) is read from its start after a gap. A first entry without `k` (written by a version before it)
 * is taken as it was before: no gap.
 *
 * The keys hash maps event key -> stream id. A key whose entry was trimmed no longer counts as published (the
 * entry lookup comes back empty). Once the hash holds more than twice `maxEvents` (+200) fields, the script drops
 * those older than the stream's first entry, so it stays within about twice the window and the pruning is amortized.
 */
const publishScript = `
local stream, keys = KEYS[1], KEYS[2]
local maxEvents, idleMs = tonumber(ARGV[1]), ARGV[2]

local function older(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  ams, aseq, bms, bseq = tonumber(ams), tonumber(aseq), tonumber(bms), tonumber(bseq)
  return ams < bms or (ams == bms and aseq < bseq)
end

local function field(entry, name)
  for i = 1, #entry, 2 do
    if entry[i] == name then return entry[i + 1] end
  end
end

local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
local prev = '0-0'
if #last > 0 then prev = last[1][1] end

local out = {}
for i = 3, #ARGV, 2 do
  local key, json = ARGV[i], ARGV[i + 1]
  local id = redis.call('HGET', keys, key)
  local retained = id and redis.call('XRANGE', stream, id, id)
  if retained and #retained > 0 then
    out[#out + 1] = { id, field(retained[1][2], 'e') }
  else
    if prev == '0-0' then
      id = redis.call('XADD', stream, 'MAXLEN', '~', maxEvents, '*', 'p', prev, 'e', json, 'k', key)
    else
      id = redis.call('XADD', stream, 'MAXLEN', '~', maxEvents, '*', 'p', prev, 'e', json)
    end
    redis.call('HSET', keys, key, id)
    prev = id
    out[#out + 1] = { id, json }
  end
end
redis.call('PEXPIRE', stream, idleMs)
redis.call('PEXPIRE', keys, idleMs)

if redis.call('HLEN', keys) > 2 * maxEvents + 200 then
  local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1][1]
  local all = redis.call('HGETALL', keys)
  local stale = {}
  for i = 1, #all, 2 do
    if older(all[i + 1], first) then stale[#stale + 1] = all[i] end
  end
  for i = 1, #stale, 1000 do
    redis.call('HDEL', keys, unpack(stale, i, math.min(i + 999, #stale)))
  end
end
return out
`;

type Entry = [id: string, fields: string[]];
type StreamId = readonly [ms: bigint, seq: bigint];

const readBatch = 100;
const blockMs = 5_000;
const scanPage = 200;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    threadlinePublish(stream: string, keys: string, ...args: (string | number)[]): Result<[string, string][], Context>;
  }
}

/**
 * The Redis Streams bus: one stream per thread, for workers and gateways in several processes or machines.
 *
 * Retention: `MAXLEN ~ maxEvents` (Redis trims whole nodes, so a stream may hold up to ~100 events more than
 * `maxEvents`); both keys of a thread expire `idleMs` after its last publish. Every subscription holds its own
 * connection (blocking reads) and buffers at most one read batch (100 events); a consumer that falls behind the
 * retained window receives a `gap` item and continues from the oldest retained event.
 *
 * @example
 * const bus = new RedisBus('redis://127.0.0.1:6379', { prefix: 'threadline' });
 * await bus.publish('r1:t1', [{ key: 'run-1:start', runId: 'run-1', type: 'start', payload: {}, at: Date.now() }]);
 */
export class RedisBus implements EventBus {
  private readonly retention: BusRetention;
  private readonly prefix: string;
  private readonly client: Redis;
  private readonly closing = new AbortController();
  private readonly noticeListeners = new Set<(notice: ControlNotice) => void>();
  /** The connection in subscriber mode that hears notices, while anyone listens. */
  private noticeConnection: { connection: Redis; subscribed: Promise<unknown> } | null = null;

  constructor(url: string, opts: Partial<BusRetention> & { prefix?: string } = {}) {
    const { prefix = 'threadline', ...retention } = opts;
    this.retention = { ...defaultRetention, ...retention };
    if (!(this.retention.maxEvents >= 1)) {
      throw new Error(`Invalid maxEvents: ${this.retention.maxEvents}. Retain at least 1 event per thread.`);
    }
    this.prefix = prefix;
    // Every open subscription listens for the bus closing and stops listening when it ends: a gateway with thousands
    // of subscribers has thousands of listeners, which is no leak (Node warns past 10).
    setMaxListeners(0, this.closing.signal);
    this.client = new Redis(url);
    // Connection errors reach callers as rejected commands; without a listener ioredis also logs each retry.
    this.client.on('error', () => {});
    this.client.defineCommand('threadlinePublish', { numberOfKeys: 2, lua: publishScript });
  }

  async publish(threadKey: string, events: EventDraft[]): Promise<ThreadEvent[]> {
    if (this.closing.signal.aborted) throw new Error('RedisBus is closed: create a new bus to publish.');
    if (events.length === 0) return [];
    const args: string[] = [];
    for (const draft of events) {
      const { key: _key, ...rest } = draft;
      args.push(draft.key, JSON.stringify({ threadKey, ...rest }));
    }
    const rows = await this.client.threadlinePublish(
      this.streamKey(threadKey),
      this.keysKey(threadKey),
      this.retention.maxEvents,
      this.retention.idleMs,
      ...args,
    );
    return rows.map(([id, json]) => toEvent(id, json));
  }

  subscribe(threadKey: string, from: SubscribeFrom, signal?: AbortSignal): AsyncIterable<BusItem> {
    const stream = this.streamKey(threadKey);
    if ('afterId' in from) return this.read(stream, { afterId: formatId(parseStreamId(from.afterId)) }, signal);
    // Take the newest entry now, on the publishing connection, so that `live` and `activeRun` include every event
    // published after this call (commands on one connection run in order).
    const activeRun = 'activeRun' in from;
    const newest = this.client.xrevrange(stream, '+', '-', 'COUNT', activeRun ? scanPage : 1);
    newest.catch(() => {});
    return this.read(stream, { newest, activeRun }, signal);
  }

  async archive(threadKey: string, records: Record<string, unknown>[]): Promise<void> {
    if (records.length === 0) return;
    const key = `${this.prefix}:archive:${threadKey}`;
    await this.client
      .multi()
      .rpush(key, ...records.map((r) => JSON.stringify(r)))
      .ltrim(key, -MAX_ARCHIVED_PER_THREAD, -1)
      .exec();
  }

  async archived(threadKey: string, page: { limit: number; cursor?: string }): Promise<ArchivePage> {
    const all = await this.client.lrange(`${this.prefix}:archive:${threadKey}`, 0, -1);
    return archivePage(
      all.reverse().map((json) => JSON.parse(json) as Record<string, unknown>),
      page,
    );
  }

  async announceAgents(agents: readonly AgentSummary[]): Promise<void> {
    if (agents.length === 0) return;
    await this.client.hset(`${this.prefix}:agents`, ...agents.flatMap((a) => [a.id, JSON.stringify(a)]));
  }

  async agents(): Promise<AgentSummary[]> {
    const all = await this.client.hgetall(`${this.prefix}:agents`);
    return Object.values(all).map((json) => JSON.parse(json) as AgentSummary);
  }

  async sendNotice(notice: ControlNotice): Promise<void> {
    if (this.closing.signal.aborted) return;
    // While Redis is away a notice is dropped, not queued: what it announces arrives through Temporal anyway, and a
    // notice delivered late could only stop work that is no longer in question.
    if (['reconnecting', 'close', 'end'].includes(this.client.status)) return;
    await this.client.publish(this.noticeChannel, JSON.stringify(notice));
  }

  async onNotice(listener: (notice: ControlNotice) => void): Promise<() => Promise<void>> {
    if (this.closing.signal.aborted) throw new Error('RedisBus is closed: create a new bus to listen.');
    // One subscriber connection for every listener of this bus (pub/sub: each notice reaches every process). ioredis
    // subscribes again by itself after a reconnect; the first SUBSCRIBE waits for Redis however long it is away.
    if (!this.noticeConnection) {
      const connection = this.client.duplicate({ maxRetriesPerRequest: null });
      connection.on('error', () => {});
      connection.on('message', (channel: string, message: string) => {
        const notice = channel === this.noticeChannel ? parseNotice(message) : null;
        if (notice) for (const each of [...this.noticeListeners]) each(notice);
      });
      const subscribed = connection.subscribe(this.noticeChannel);
      subscribed.catch(() => {});
      this.noticeConnection = { connection, subscribed };
    }
    this.noticeListeners.add(listener);
    await this.noticeConnection.subscribed;
    return async () => {
      this.noticeListeners.delete(listener);
      if (this.noticeListeners.size === 0) this.stopNotices();
    };
  }

  private stopNotices(): void {
    this.noticeConnection?.connection.disconnect();
    this.noticeConnection = null;
  }

  async ping(): Promise<void> {
    // Commands wait in ioredis's offline queue while it reconnects: answer at once that the server is not reachable.
    if (this.client.status !== 'ready') throw new Error(`not connected (connection ${this.client.status})`);
    await this.client.ping();
  }

  async close(): Promise<void> {
    this.closing.abort();
    this.noticeListeners.clear();
    this.stopNotices();
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }

  private async *read(
    stream: string,
    start: { afterId: string } | { newest: Promise<Entry[]>; activeRun: boolean },
    signal?: AbortSignal,
  ): AsyncGenerator<BusItem> {
    const stopped = () => this.closing.signal.aborted || signal?.aborted === true;
    if (stopped()) return;
    // Never give up on a command: while Redis is away ioredis reconnects and resends the pending XREAD as it was,
    // i.e. after the last id this subscription yielded.
    const connection = this.client.duplicate({ maxRetriesPerRequest: null });
    connection.on('error', () => {});
    const disconnect = () => connection.disconnect();
    this.closing.signal.addEventListener('abort', disconnect, { once: true });
    signal?.addEventListener('abort', disconnect, { once: true });
    try {
      let lastId: string;
      // Only a reader of the thread from its start is owed the events before the stream's first entry: `live` and
      // `activeRun` on an empty stream begin at its first entry whatever it is.
      let fromThreadStart = false;
      if ('afterId' in start) {
        lastId = start.afterId;
        fromThreadStart = lastId === '0-0';
      } else {
        const page = await start.newest;
        lastId = page[0]?.[0] ?? '0-0';
        const runStart = start.activeRun ? await this.findActiveRunStart(connection, stream, page) : undefined;
        if (runStart && !stopped()) {
          yield { kind: 'event', event: toEvent(runStart[0], field(runStart[1], 'e')) };
          lastId = runStart[0];
        }
      }
      while (!stopped()) {
        const reply = await connection.xread('COUNT', readBatch, 'BLOCK', blockMs, 'STREAMS', stream, lastId);
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          if (stopped()) return;
          if (startsAfterGap(fields, lastId, fromThreadStart)) yield { kind: 'gap', oldestId: id };
          yield { kind: 'event', event: toEvent(id, field(fields, 'e')) };
          lastId = id;
          fromThreadStart = false;
        }
      }
    } catch (error) {
      if (!stopped()) throw error;
    } finally {
      this.closing.signal.removeEventListener('abort', disconnect);
      signal?.removeEventListener('abort', disconnect);
      connection.disconnect();
    }
  }

  /** Walks back from the newest entry to the latest `start`; returns it if no `finish`/`abort` of its run follows. */
  private async findActiveRunStart(connection: Redis, stream: string, page: Entry[]): Promise<Entry | undefined> {
    const ended = new Set<string | undefined>();
    for (;;) {
      for (const entry of page) {
        const { type, runId } = JSON.parse(field(entry[1], 'e')) as Pick<ThreadEvent, 'type' | 'runId'>;
        if (type === 'finish' || type === 'abort') ended.add(runId);
        if (type === 'start') return ended.has(runId) ? undefined : entry;
      }
      if (page.length < scanPage) return undefined;
      page = await connection.xrevrange(stream, `(${page[page.length - 1][0]}`, '-', 'COUNT', scanPage);
    }
  }

  private streamKey(threadKey: string): string {
    return `${this.prefix}:events:${threadKey}`;
  }

  private keysKey(threadKey: string): string {
    return `${this.prefix}:keys:${threadKey}`;
  }

  private get noticeChannel(): string {
    return `${this.prefix}:notices`;
  }
}

function toEvent(id: string, json: string): ThreadEvent {
  const { threadKey, runId, type, payload, at } = JSON.parse(json) as Omit<ThreadEvent, 'id'>;
  return { id, threadKey, ...(runId !== undefined && { runId }), type, payload, at };
}

/** A notice as another process sent it, or null when it is not one this version knows (ignored). */
function parseNotice(message: string): ControlNotice | null {
  try {
    const notice = JSON.parse(message) as Partial<ControlNotice>;
    const known =
      notice.type === 'step-cancel' &&
      typeof notice.namespace === 'string' &&
      typeof notice.threadKey === 'string' &&
      typeof notice.stepKey === 'string';
    return known ? (notice as ControlNotice) : null;
  } catch {
    return null;
  }
}

function field(fields: string[], name: string): string {
  const value = optionalField(fields, name);
  if (value === undefined) {
    throw new Error(`Stream entry without field "${name}": not written by RedisBus. Use a prefix of its own.`);
  }
  return value;
}

function optionalField(fields: string[], name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

function parseStreamId(id: string): StreamId {
  const match = /^(\d+)(?:-(\d+))?$/.exec(id);
  if (!match) {
    throw new Error(
      `Invalid event id for the Redis bus: "${id}". Pass an id this bus returned, like "1718000000000-0".`,
    );
  }
  return [BigInt(match[1]), BigInt(match[2] ?? 0)];
}

function formatId([ms, seq]: StreamId): string {
  return `${ms}-${seq}`;
}

/**
 * Whether the entry read after `lastId` leaves out events: its predecessor `p` is newer than `lastId` (entries between
 * were trimmed); or it began the stream (`p` is `0-0`) and either the subscriber had a position (the stream was lost:
 * Redis restarted without its data, or the stream expired, and events after `lastId` may have gone with it) or the
 * subscriber reads the thread from its start and the entry is not the thread's first event (its key `k`; an entry
 * without one, from an earlier version, is taken as whole).
 */
function startsAfterGap(fields: string[], lastId: string, fromThreadStart: boolean): boolean {
  const previous = field(fields, 'p');
  if (previous !== '0-0') return compareIds(parseStreamId(previous), parseStreamId(lastId)) > 0;
  if (lastId !== '0-0') return true;
  const key = optionalField(fields, 'k');
  return fromThreadStart && key !== undefined && key !== THREAD_FIRST_EVENT_KEY;
}

function compareIds(a: StreamId, b: StreamId): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  return a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1;
}
