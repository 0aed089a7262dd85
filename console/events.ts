/**
 * A thread's live events for the console: `GET /api/threads/:resourceId/:threadId/events` read with `fetch` (an
 * EventSource cannot send the API key), reconnecting after a dropped connection or a gateway restart with
 * `Last-Event-ID`, so every event arrives once, and telling the page which state it is in so it can show it.
 */
import { errorFromResponse, isAbortError } from '../http-client/errors';
import { parseSse } from '../http-client';
import type { ThreadEvent } from '../protocol/events';
import type { ThreadTarget } from '../protocol/schemas';
import { threadPath } from './api';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'refused' | 'closed';

export interface ThreadStreamOptions {
  baseUrl: string;
  headers: Record<string, string>;
  target: ThreadTarget;
  onEvent(event: ThreadEvent): void;
  onState(state: StreamState, detail?: string): void;
  /** First reconnect delay; doubles up to `maxDelayMs`. */
  delayMs?: number;
  maxDelayMs?: number;
  /** No bytes (not even a keep-alive comment) for this long: the connection is presumed dead and replaced. */
  silenceMs?: number;
}

export interface ThreadStream {
  lastEventId(): string | undefined;
  close(): void;
}

/**
 * Orders bus ids (`123` or `1700000000000-4`): true when `a` comes after `b`. Ids strictly increase per thread, so an
 * event at or before the last one seen is a repeat and is dropped.
 */
export function isAfter(a: string, b: string): boolean {
  const pa = a.split('-').map((p) => BigInt(p));
  const pb = b.split('-').map((p) => BigInt(p));
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? 0n;
    const y = pb[i] ?? 0n;
    if (x !== y) return x > y;
  }
  return false;
}

function isBusId(id: string): boolean {
  return /^\d+(-\d+)?$/.test(id);
}

export function openThreadStream(options: ThreadStreamOptions): ThreadStream {
  const { baseUrl, headers, target, onEvent, onState } = options;
  const delayMs = options.delayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const silenceMs = options.silenceMs ?? 75_000;
  const closed = new AbortController();
  let lastId: string | undefined;
  let current: AbortController | null = null;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      closed.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });

  async function connectOnce(): Promise<'ended' | 'refused'> {
    const connection = new AbortController();
    current = connection;
    const abort = () => connection.abort();
    closed.signal.addEventListener('abort', abort, { once: true });
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(abort, silenceMs);
    };
    try {
      const response = await fetch(`${baseUrl}/api${threadPath(target)}/events`, {
        headers: {
          accept: 'text/event-stream',
          ...headers,
          ...(lastId !== undefined ? { 'last-event-id': lastId } : {}),
        },
        signal: connection.signal,
        cache: 'no-store',
      });
      if (!response.ok) {
        const error = await errorFromResponse(response);
        // 401/403/404/400: asking again gives the same answer. 429 and 5xx pass.
        if (error.status < 500 && error.status !== 429 && error.status !== 408) {
          onState('refused', error.message);
          return 'refused';
        }
        return 'ended';
      }
      onState('live');
      arm();
      if (!response.body) return 'ended';
      for await (const item of parseSse(response.body)) {
        arm();
        if (item.kind !== 'message') continue;
        let event: ThreadEvent;
        try {
          event = JSON.parse(item.message.data) as ThreadEvent;
        } catch {
          continue;
        }
        if (typeof event?.type !== 'string') continue;
        const id = typeof event.id === 'string' ? event.id : item.message.id;
        // A snapshot stands in for events no longer retained and carries the position it resumes from.
        if (event.type !== 'snapshot' && id !== undefined && lastId !== undefined && isBusId(id) && isBusId(lastId)) {
          if (!isAfter(id, lastId)) continue;
        }
        if (id !== undefined) lastId = id;
        onEvent(event);
      }
      return 'ended';
    } catch (err) {
      if (closed.signal.aborted || isAbortError(err)) return 'ended';
      return 'ended';
    } finally {
      clearTimeout(watchdog);
      closed.signal.removeEventListener('abort', abort);
      current = null;
    }
  }

  void (async () => {
    onState('connecting');
    let failures = 0;
    while (!closed.signal.aborted) {
      const connectedBefore = lastId;
      const outcome = await connectOnce();
      if (closed.signal.aborted) break;
      if (outcome === 'refused') return;
      // A connection that delivered something resets the backoff.
      failures = lastId !== connectedBefore ? 1 : failures + 1;
      onState('reconnecting');
      const capped = Math.min(maxDelayMs, delayMs * 2 ** (failures - 1));
      await sleep(capped / 2 + Math.random() * (capped / 2));
    }
    onState('closed');
  })();

  return {
    lastEventId: () => lastId,
    close: () => {
      closed.abort();
      current?.abort();
    },
  };
}
