/**
 * A small Server-Sent Events reader over `fetch`, for tests that drive the gateway over real HTTP.
 * It parses the wire format with the HTTP SDK's WHATWG parser (no EventSource), so tests see exactly what the server
 * wrote: every message's `id:` and `data:` lines, and every `: comment` line (recorded, never treated as a message).
 *
 * @example
 * const sse = await openSse(`${gateway.url}/api/threads/r1/t1/events`);
 * const events = await sse.untilEvent((e) => e.type === 'finish');
 * sse.close();
 */
import type { ThreadEvent } from '../../protocol/events';
import { parseSse, type SseMessage } from '../../http-client';

export { parseSse, type SseItem, type SseMessage } from '../../http-client';

/** An open SSE response, read eagerly in the background so that comments arrive even while nobody waits. */
export interface SseStream {
  response: Response;
  /** Every message received so far, in order. */
  messages: SseMessage[];
  /** Every comment received so far (e.g. `keep-alive`), in order. */
  comments: string[];
  /** True once the server ended the stream, the reader failed, or `close()` was called. */
  readonly ended: boolean;
  /** Reads messages from where the last `until*` call stopped, until `done` says so; fails after `timeoutMs`. */
  until(done: (message: SseMessage, all: SseMessage[]) => boolean, timeoutMs?: number): Promise<SseMessage[]>;
  /** `until` over the messages' JSON data, as thread events. */
  untilEvent(done: (event: ThreadEvent, all: ThreadEvent[]) => boolean, timeoutMs?: number): Promise<ThreadEvent[]>;
  /** Resolves once `condition()` holds (checked whenever something arrives); fails after `timeoutMs`. */
  waitFor(condition: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  /** Aborts the request: the client side of a disconnect. */
  close(): void;
}

/**
 * Sends `init` to `url` and, when the response is an event stream, starts reading it. A response of any other
 * type is returned unread (`messages` stays empty), so a test can check an error status and body.
 */
export async function openSse(url: string, init: RequestInit = {}): Promise<SseStream> {
  const abort = new AbortController();
  const response = await fetch(url, { ...init, signal: abort.signal });
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  let ended = false;
  let failure: unknown;
  let cursor = 0;
  const notify = () => {
    for (const waiter of waiters) waiter();
  };

  const isEventStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (isEventStream && response.body) {
    const body = response.body;
    void (async () => {
      try {
        for await (const item of parseSse(body)) {
          if (item.kind === 'message') messages.push(item.message);
          else comments.push(item.text);
          notify();
        }
      } catch (err) {
        if (!abort.signal.aborted) failure = err;
      } finally {
        ended = true;
        notify();
      }
    })();
  } else {
    ended = true;
  }

  const waitFor = (condition: () => boolean, timeoutMs = 30_000, what = 'the condition'): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        let met: boolean;
        try {
          met = condition();
        } catch (err) {
          return finish(() => reject(err));
        }
        if (met) return finish(resolve);
        if (ended) {
          const reason = failure ? `: ${(failure as Error).message}` : '';
          finish(() => reject(new Error(`The stream ended before ${what}${reason}; ${describe()}`)));
        }
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; ${describe()}`))),
        timeoutMs,
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      waiters.add(check);
      check();
    });

  const describe = () =>
    `saw ${messages.length} messages (${messages.map(typeOf).join(', ')}) and ${comments.length} comments`;

  const until = async (
    done: (message: SseMessage, all: SseMessage[]) => boolean,
    timeoutMs = 30_000,
  ): Promise<SseMessage[]> => {
    const start = cursor;
    let stop = -1;
    await waitFor(
      () => {
        for (; stop < 0 && cursor < messages.length; cursor++) {
          if (done(messages[cursor], messages.slice(start, cursor + 1))) stop = cursor + 1;
        }
        return stop >= 0;
      },
      timeoutMs,
      'the expected message',
    );
    return messages.slice(start, stop);
  };

  return {
    response,
    messages,
    comments,
    get ended() {
      return ended;
    },
    until,
    async untilEvent(done, timeoutMs) {
      const events: ThreadEvent[] = [];
      await until((message) => {
        events.push(JSON.parse(message.data) as ThreadEvent);
        return done(events.at(-1)!, events);
      }, timeoutMs);
      return events;
    },
    waitFor,
    close: () => abort.abort(),
  };
}

function typeOf(message: SseMessage): string {
  try {
    return String((JSON.parse(message.data) as { type?: unknown }).type ?? '?');
  } catch {
    return '?';
  }
}

/** The thread events carried by SSE messages (each message's data is one JSON event). */
export function sseEvents(messages: SseMessage[]): ThreadEvent[] {
  return messages.map((m) => JSON.parse(m.data) as ThreadEvent);
}
