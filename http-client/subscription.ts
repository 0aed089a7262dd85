/**
 * A thread subscription over HTTP (behaviour §5, §6): one SSE connection at a time, resumed from the last event id after a
 * drop, with capped exponential backoff and jitter.
 */
import type { ThreadEvent } from '../protocol/events';
import { isAbortError, isRetryable, retryDelay } from './errors';
import { parseSse } from './sse';

export interface ReconnectOptions {
  /** Reconnect attempts in a row without receiving an event before giving up. Default: unlimited. */
  maxRetries?: number;
  /** Delay before the first attempt; it doubles on each failure. Default 1000 ms. */
  delayMs?: number;
  /** Cap of the delay. Default 30 000 ms. */
  maxDelayMs?: number;
}

export interface ProcessDataStreamOptions {
  /** Called with every event, in order; the next event waits for a returned promise. A throw ends the subscription. */
  onChunk: (chunk: ThreadEvent) => void | Promise<void>;
  /** Resume after a dropped or ended connection. `true` = `{}` (defaults above). Default: no reconnect. */
  reconnect?: boolean | ReconnectOptions;
}

export interface HttpThreadSubscription {
  /**
   * Reads the stream and calls `onChunk` with each event. Resolves when the stream ends (without `reconnect`), or
   * after `unsubscribe()`. Rejects with the error `onChunk` threw (no reconnect), with a 4xx answer to a reconnect
   * (no retry), or with the last error once `maxRetries` reconnects in a row failed.
   */
  processDataStream(options: ProcessDataStreamOptions): Promise<void>;
  /** The events, as an async iterable (reconnecting as set by `subscribeToThread`'s `reconnect` option). */
  stream: AsyncIterable<ThreadEvent>;
  /** The id of the last event received (or the `lastEventId` the subscription started from). */
  lastEventId(): string | undefined;
  /** The run in progress as seen on this stream, or null. */
  activeRunId(): string | null;
  /** Closes the connection; `processDataStream` resolves and `stream` ends. */
  unsubscribe(): void;
}

/** Opens one SSE connection resuming after `lastEventId`; rejects with `ThreadlineHttpError` on a non-2xx answer. */
export type OpenStream = (lastEventId: string | undefined, signal: AbortSignal) => Promise<Response>;

interface Policy {
  maxRetries: number;
  delayMs: number;
  maxDelayMs: number;
}

function policyOf(reconnect: boolean | ReconnectOptions | undefined): Policy | null {
  if (!reconnect) return null;
  const options = reconnect === true ? {} : reconnect;
  return {
    maxRetries: options.maxRetries ?? Infinity,
    delayMs: options.delayMs ?? 1_000,
    maxDelayMs: options.maxDelayMs ?? 30_000,
  };
}

/** Equal jitter: half the capped exponential delay, plus up to the other half at random (so clients spread out). */
function backoff(policy: Policy, attempt: number): number {
  const capped = Math.min(policy.maxDelayMs, policy.delayMs * 2 ** (attempt - 1));
  return capped / 2 + Math.random() * (capped / 2);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function parseEvent(data: string): ThreadEvent | null {
  try {
    const value: unknown = JSON.parse(data);
    if (typeof value === 'object' && value !== null && typeof (value as ThreadEvent).type === 'string') {
      return value as ThreadEvent;
    }
  } catch {
    // Not an event (a future message kind): skip it, as Mastra's client does.
  }
  return null;
}

/**
 * Opens the first connection and returns once the gateway answered: from then on the gateway is subscribed, so an
 * input sent next is seen. A 4xx answer rejects here.
 */
export async function openSubscription(
  open: OpenStream,
  options: { lastEventId?: string; reconnect?: boolean | ReconnectOptions } = {},
): Promise<HttpThreadSubscription> {
  const abort = new AbortController();
  const first = await open(options.lastEventId, abort.signal);
  return new Subscription(open, abort, first, options.lastEventId, options.reconnect);
}

class Subscription implements HttpThreadSubscription {
  private lastId: string | undefined;
  private activeRun: string | null = null;
  private pending: Response | null;
  private consumed = false;

  constructor(
    private readonly open: OpenStream,
    private readonly abort: AbortController,
    first: Response,
    lastEventId: string | undefined,
    private readonly defaultReconnect: boolean | ReconnectOptions | undefined,
  ) {
    this.pending = first;
    this.lastId = lastEventId;
  }

  readonly stream: AsyncIterable<ThreadEvent> = {
    [Symbol.asyncIterator]: () => this.take(this.defaultReconnect)[Symbol.asyncIterator](),
  };

  async processDataStream({ onChunk, reconnect }: ProcessDataStreamOptions): Promise<void> {
    // Leaving this loop early (onChunk threw) returns the generator, whose `finally` closes the connection.
    for await (const event of this.take(reconnect ?? this.defaultReconnect)) await onChunk(event);
  }

  lastEventId(): string | undefined {
    return this.lastId;
  }

  activeRunId(): string | null {
    return this.activeRun;
  }

  unsubscribe(): void {
    this.abort.abort();
  }

  private get closed(): boolean {
    return this.abort.signal.aborted;
  }

  private take(reconnect: boolean | ReconnectOptions | undefined): AsyncGenerator<ThreadEvent> {
    if (this.consumed) {
      throw new Error('This subscription is already being read. Use either processDataStream() or stream, once.');
    }
    this.consumed = true;
    return this.events(policyOf(reconnect));
  }

  private async *events(policy: Policy | null): AsyncGenerator<ThreadEvent> {
    let response = this.pending;
    this.pending = null;
    // Reconnect attempts since an event last arrived: a reconnect only counts as a success once it delivers.
    let failures = 0;
    let lastError: unknown;
    try {
      for (;;) {
        if (response) {
          lastError = undefined;
          try {
            if (response.body) {
              for await (const item of parseSse(response.body)) {
                if (item.kind === 'comment') continue;
                // Mastra's end-of-stream marker: this connection is over.
                if (item.message.data === '[DONE]') break;
                const event = parseEvent(item.message.data);
                if (!event) continue;
                // The id inside the event is authoritative; the SSE `id:` line is the fallback.
                const id = typeof event.id === 'string' ? event.id : item.message.id;
                if (id !== undefined) this.lastId = id;
                this.track(event);
                failures = 0;
                yield event;
              }
            }
          } catch (err) {
            if (this.closed) return;
            lastError = err;
          }
          response = null;
        }
        if (this.closed) return;
        if (!policy) {
          if (lastError !== undefined) throw lastError;
          return;
        }
        while (!response) {
          if (failures >= policy.maxRetries) {
            if (lastError !== undefined) throw lastError;
            return;
          }
          failures += 1;
          await sleep(retryDelay(lastError, backoff(policy, failures), policy.maxDelayMs), this.abort.signal);
          if (this.closed) return;
          try {
            response = await this.open(this.lastId, this.abort.signal);
          } catch (err) {
            if (this.closed || isAbortError(err)) return;
            if (!isRetryable(err)) throw err;
            lastError = err;
          }
        }
      }
    } finally {
      this.unsubscribe();
    }
  }

  private track(event: ThreadEvent): void {
    if (event.type === 'start') this.activeRun = event.runId ?? null;
    else if ((event.type === 'finish' || event.type === 'abort') && event.runId === this.activeRun)
      this.activeRun = null;
  }
}
