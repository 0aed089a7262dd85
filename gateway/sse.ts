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
 */
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { ThreadEvent } from '../protocol/events';
import type { ThreadlineClient } from '../client/connect';
import { ValidationError } from '../protocol/errors';
import type { ThreadTarget } from '../protocol/schemas';
import { threadKey } from '../protocol/ids';
import type { SubscriberLimit } from './limits';
import { toWireEvent } from './wire-event';

export interface StreamDeps {
  client: ThreadlineClient;
  subscribers: SubscriberLimit;
  keepAliveMs: number;
}

/** How events are framed: with `id:` lines for EventSource, or Mastra's `data:`-only blocks. */
export type StreamFraming = 'event-source' | 'data-only';

export interface StreamOptions {
  lastEventId?: string;
  hideSignals?: boolean;
  framing: StreamFraming;
}

/** Streams `target`'s events; 429 when the thread has its limit of subscribers here, 400 for a bad Last-Event-ID. */
export function streamThread(
  c: Context,
  deps: StreamDeps,
  target: ThreadTarget,
  { lastEventId, hideSignals, framing }: StreamOptions,
): Response {
  const release = deps.subscribers.acquire(
    threadKey(target.resourceId, target.threadId),
    `${target.resourceId}/${target.threadId}`,
  );
  let subscription: ReturnType<ThreadlineClient['subscribeToThread']>;
  try {
    subscription = deps.client.subscribeToThread(target, { lastEventId, hideSignals });
  } catch (err) {
    release();
    // The bus rejects an id it could not have issued; that is the caller's bad input, not a gateway fault.
    if (lastEventId === undefined) throw err;
    throw new ValidationError(`Invalid Last-Event-ID: ${(err as Error).message}`, { cause: err });
  }
  return streamSSE(c, async (sse) => {
    let keepAlive: ReturnType<typeof keepAliveEvery> | undefined;
    try {
      sse.onAbort(() => subscription.unsubscribe());
      // As Mastra's server does: the client sees the stream start before any event is published.
      if (framing === 'data-only') await sse.write(': connected\n\n');
      keepAlive = keepAliveEvery(sse, deps.keepAliveMs);
      for await (const event of subscription.stream) {
        keepAlive.touch();
        await writeEvent(sse, event, framing);
        if (sse.aborted || sse.closed) break;
      }
      // The gateway ended the stream (its bus closed), not the client: say so, as Mastra's server does.
      if (framing === 'data-only' && !sse.aborted && !sse.closed) await sse.write('data: [DONE]\n\n');
    } finally {
      keepAlive?.stop();
      subscription.unsubscribe();
      // The place is this stream's until here, however it ended: client gone, gateway closing, or a write failed.
      release();
    }
  });
}

async function writeEvent(sse: SSEStreamingApi, event: ThreadEvent, framing: StreamFraming): Promise<void> {
  // JSON.stringify escapes line breaks, so the data is always one line.
  const data = JSON.stringify(toWireEvent(event));
  if (framing === 'event-source') await sse.writeSSE({ id: event.id, data });
  else await sse.write(`data: ${data}\n\n`);
}

function keepAliveEvery(sse: SSEStreamingApi, ms: number): { touch(): void; stop(): void } {
  let last = Date.now();
  const timer = setInterval(
    () => {
      if (Date.now() - last >= ms) {
        last = Date.now();
        sse.write(': keep-alive\n\n').catch(() => undefined);
      }
    },
    Math.max(10, Math.min(ms, 1_000)),
  );
  return {
    touch: () => {
      last = Date.now();
    },
    stop: () => clearInterval(timer),
  };
}
