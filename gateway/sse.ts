/**
 * A thread's events as Server-Sent Events, one message per event (its JSON from `toWireEvent`), and a `: keep-alive`
 * comment after a stretch of silence so proxies keep the stream open. Two framings:
 *
 * - `event-source` (`GET …/events`): `data: {…}` then `id: <event id>`, so a browser's EventSource resumes with
 *   `Last-Event-ID`.
 * - `data-only` (`POST …/threads/subscribe`): Mastra's framing, which `@mastra/client-js` parses by taking everything
 *   after `data: ` up to the blank line as one JSON document (an `id:` line there would break its parse): `: connected`
 *   first, exactly `data: {…}` per event, and `data: [DONE]` when the gateway ends the stream itself. The event id is
 *   inside the JSON, where Threadline's SDK reads it for `Last-Event-ID`.
 *
 * Slow subscribers. Every stream has a queue of its own (`Outbox`) that a writer drains into the socket as fast as
 * the client reads; nothing another stream or request does waits for it. Live events are queued as the bus
 * publishes them: a client that stops reading fills its queue to `maxSubscriberBufferBytes` and is dropped (its
 * connection closed, a log line written), as is one that takes nothing for `subscriberStallMs` while events wait.
 * Events published before the stream began (a resume with Last-Event-ID, the active run's start) are the client's
 * backlog, and the bus keeps them: they are queued at the client's pace, so catching up is never a reason to drop
 * it. A dropped client resumes with Last-Event-ID like any reconnecting client.
 */
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { ThreadEvent } from '../protocol/events';
import type { ThreadlineClient } from '../client/connect';
import type { Logger } from '../observability';
import { ValidationError } from '../protocol/errors';
import type { ThreadTarget } from '../protocol/schemas';
import { threadKey } from '../protocol/ids';
import type { SubscriberLimit } from './limits';
import { toWireEvent } from './wire-event';

export interface StreamDeps {
  client: ThreadlineClient;
  /** Where a dropped subscriber is reported. */
  log: Logger;
  subscribers: SubscriberLimit;
  /** Silence after which a `: keep-alive` comment goes out. */
  keepAliveMs: number;
  /** Bytes of live events one subscriber may have waiting in the gateway; a subscriber past it is dropped. */
  maxSubscriberBufferBytes: number;
  /** A subscriber that takes nothing for this long while events wait for it is dropped. */
  subscriberStallMs: number;
}

/** How events are framed: with `id:` lines for EventSource, or Mastra's `data:`-only blocks. */
export type StreamFraming = 'event-source' | 'data-only';

export interface StreamOptions {
  lastEventId?: string;
  hideSignals?: boolean;
  framing: StreamFraming;
}

/** Largest single write: frames waiting are written together, up to this many bytes at a time. */
const MAX_WRITE_BYTES = 64 * 1024;

/** Streams `target`'s events; 429 when the thread has its limit of subscribers here, 400 for a bad Last-Event-ID. */
export function streamThread(
  c: Context,
  deps: StreamDeps,
  target: ThreadTarget,
  { lastEventId, hideSignals, framing }: StreamOptions,
): Response {
  const describe = `${target.resourceId}/${target.threadId}`;
  const key = threadKey(target.resourceId, target.threadId);
  const release = deps.subscribers.acquire(key, describe);
  let subscription: ReturnType<ThreadlineClient['subscribeToThread']>;
  try {
    subscription = deps.client.subscribeToThread(target, { lastEventId, hideSignals });
  } catch (err) {
    release();
    // The bus rejects an id it could not have issued; that is the caller's bad input, not a gateway fault.
    if (lastEventId === undefined) throw err;
    throw new ValidationError(`Invalid Last-Event-ID: ${(err as Error).message}`, { cause: err });
  }
  // HEAD: the stream's headers, no stream. Hono answers HEAD with the GET handler's response and drops its body
  // unread, so a stream opened here would hold a subscriber's place, writing to nobody, until it counted as stalled.
  if (c.req.method === 'HEAD') {
    subscription.unsubscribe();
    release();
    return c.body(null, 200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  }
  const subscribedAt = Date.now();
  return streamSSE(c, async (sse) => {
    const outbox = new Outbox(sse, deps.maxSubscriberBufferBytes);
    let lastSent = lastEventId;
    const drop = (reason: 'buffer-full' | 'stalled', why: string) => {
      if (outbox.dropped) return;
      outbox.dropped = true;
      deps.log.warn(
        { threadKey: key, reason, waitingBytes: outbox.bytes, resumeFrom: lastSent ?? null },
        `dropped an SSE subscriber of thread ${describe}: ${why}; it can resume with Last-Event-ID`,
      );
      subscription.unsubscribe();
      closeConnection(c, sse);
    };
    const ended = () => sse.aborted || sse.closed || outbox.dropped;
    const keepAlive = watch(outbox, deps, () =>
      drop(
        'stalled',
        `it took nothing for ${deps.subscriberStallMs} ms (subscriberStallMs) while ${outbox.bytes} bytes waited`,
      ),
    );
    try {
      sse.onAbort(() => subscription.unsubscribe());
      // As Mastra's server does: the client sees the stream start before any event is published.
      if (framing === 'data-only') outbox.push(': connected\n\n');
      for await (const event of subscription.stream) {
        const turn = fairShare.take();
        if (turn) await turn;
        // Backlog (published before this stream began) is queued at the client's pace; the bus keeps it meanwhile.
        if (event.at < subscribedAt) await outbox.roomForBacklog();
        if (ended()) break;
        keepAlive.touch();
        if (!outbox.push(frame(event, framing))) {
          drop(
            'buffer-full',
            `it stopped reading and ${outbox.bytes} bytes of events waited for it ` +
              `(limit ${deps.maxSubscriberBufferBytes}, maxSubscriberBufferBytes)`,
          );
          break;
        }
        lastSent = event.id;
      }
      if (!ended()) {
        // The gateway ended the stream (its bus closed), not the client: say so, as Mastra's server does.
        if (framing === 'data-only') outbox.push('data: [DONE]\n\n');
        await outbox.drained();
      }
    } finally {
      keepAlive.stop();
      subscription.unsubscribe();
      // The place is this stream's until here, however it ended: client gone, dropped, gateway closing, write failed.
      release();
    }
  });
}

/**
 * One subscriber's frames waiting for its socket, and the writer that drains them. `push` never waits: it answers
 * false (and queues nothing) when the frames waiting, with the write in flight, would pass `maxBytes` with this one.
 */
class Outbox {
  private waiting: { text: string; bytes: number }[] = [];
  private writing: Promise<void> | null = null;
  private roomWaiters: (() => void)[] = [];
  /** Bytes waiting or being written. */
  bytes = 0;
  /** When the client last took a write (or, with nothing waiting, when something started waiting). */
  lastProgressAt = Date.now();
  dropped = false;

  constructor(
    private readonly sse: SSEStreamingApi,
    private readonly maxBytes: number,
  ) {}

  get idle(): boolean {
    return this.bytes === 0;
  }

  push(text: string): boolean {
    const bytes = Buffer.byteLength(text);
    // One frame always fits an empty queue: an event larger than the bound (a big snapshot) is not a slow client.
    if (!this.idle && this.bytes + bytes > this.maxBytes) {
      this.bytes += bytes;
      return false;
    }
    if (this.idle) this.lastProgressAt = Date.now();
    this.waiting.push({ text, bytes });
    this.bytes += bytes;
    this.writing ??= this.drain();
    return true;
  }

  /** Resolves once the queue is at most half full (or the stream ended): where backlog may be added. */
  roomForBacklog(): Promise<void> | undefined {
    if (this.bytes <= this.maxBytes / 2 || this.stopped) return undefined;
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** Resolves once everything pushed is written, or the stream ended. */
  async drained(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private get stopped(): boolean {
    return this.dropped || this.sse.aborted || this.sse.closed;
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0 && !this.stopped) {
        let n = 0;
        let bytes = 0;
        while (n < this.waiting.length && (n === 0 || bytes + this.waiting[n].bytes <= MAX_WRITE_BYTES)) {
          bytes += this.waiting[n++].bytes;
        }
        const chunk = this.waiting.splice(0, n).map((frame) => frame.text);
        // Resolves once the HTTP stack took the chunk: at once while the socket has room, later if the client lags.
        await this.sse.write(chunk.join(''));
        this.bytes -= bytes;
        this.lastProgressAt = Date.now();
        this.wakeRoomWaiters();
      }
    } finally {
      this.writing = null;
      // A stream that ended (client gone, dropped) frees whoever waits for room.
      this.wakeRoomWaiters(this.stopped);
    }
  }

  private wakeRoomWaiters(all = false): void {
    if (!all && this.bytes > this.maxBytes / 2) return;
    for (const resolve of this.roomWaiters.splice(0)) resolve();
  }
}

/**
 * Reading the bus, framing and writing to a socket that has room all complete as microtasks: left alone, one publish
 * fanned out to hundreds of subscribers would hold the process (health checks, other tenants' requests, the worker's
 * heartbeats) until every stream had caught up. So streams deliver for at most `MS_PER_TURN` of each turn of the
 * event loop; a stream that finds the time spent waits for a later turn, and waiting streams go first come, first
 * served. One budget per process, because the event loop is one per process.
 */
const MS_PER_TURN = 10;

class TurnBudget {
  private turnStart = 0;
  private readonly waiting: (() => void)[] = [];
  private turnScheduled = false;

  /** Undefined when a stream may deliver its next event now; else a promise that admits it later, in order. */
  take(): Promise<void> | undefined {
    if (!this.turnScheduled) this.startTurn();
    const timeLeft = performance.now() - this.turnStart < MS_PER_TURN;
    if (timeLeft && this.waiting.length === 0) return undefined;
    const admitted = new Promise<void>((resolve) => this.waiting.push(resolve));
    // Time is left but others were waiting: the first of them goes now, this stream after them.
    if (timeLeft) this.waiting.shift()!();
    return admitted;
  }

  /** The clock restarts in the next turn's check phase, where the first waiting stream goes. */
  private startTurn(): void {
    this.turnStart = performance.now();
    this.turnScheduled = true;
    setImmediate(() => {
      this.turnScheduled = false;
      if (this.waiting.length === 0) return;
      this.startTurn();
      this.waiting.shift()!();
    });
  }
}

const fairShare = new TurnBudget();

/** The wire JSON of an event, made once however many subscribers receive the same event object (the memory bus). */
const wireJson = new WeakMap<ThreadEvent, string>();

function frame(event: ThreadEvent, framing: StreamFraming): string {
  let data = wireJson.get(event);
  if (data === undefined) {
    // JSON.stringify escapes line breaks, so the data is always one line.
    data = JSON.stringify(toWireEvent(event));
    wireJson.set(event, data);
  }
  if (framing === 'data-only') return `data: ${data}\n\n`;
  // Ids come from the bus (digits, or digits-digits), or are the client's own Last-Event-ID, which the bus parsed.
  if (/[\r\n]/.test(event.id)) throw new Error(`Event id ${JSON.stringify(event.id)} contains a line break.`);
  return `data: ${data}\nid: ${event.id}\n\n`;
}

/**
 * Ends a dropped subscriber's connection now. Closing the stream politely would wait for the client to read what is
 * already queued, which it does not; destroying the socket frees it, and the server's close handling aborts the
 * stream. Off Node's server, aborting the stream is all there is.
 */
function closeConnection(c: Context, sse: SSEStreamingApi): void {
  const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
  if (outgoing) outgoing.destroy();
  else sse.abort();
}

/**
 * Sends `: keep-alive` after `keepAliveMs` of silence (never while a write waits: that is not silence), and calls
 * `stalled` once writes have waited `subscriberStallMs` without the client taking anything.
 */
function watch(
  outbox: Outbox,
  { keepAliveMs, subscriberStallMs }: Pick<StreamDeps, 'keepAliveMs' | 'subscriberStallMs'>,
  stalled: () => void,
): { touch(): void; stop(): void } {
  let last = Date.now();
  const timer = setInterval(
    () => {
      const now = Date.now();
      if (!outbox.idle) {
        if (now - outbox.lastProgressAt >= subscriberStallMs) stalled();
        return;
      }
      if (now - last < keepAliveMs) return;
      last = now;
      outbox.push(': keep-alive\n\n');
    },
    Math.max(10, Math.min(keepAliveMs, subscriberStallMs, 1_000)),
  );
  return {
    touch: () => {
      last = Date.now();
    },
    stop: () => clearInterval(timer),
  };
}
