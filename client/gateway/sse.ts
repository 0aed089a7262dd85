/**
 * A thread's events as Server-Sent Events: one message per event (its bus id as the `id:` line, so browsers resume
 * with `Last-Event-ID`), and a `: keep-alive` comment after a stretch of silence so proxies keep the stream open.
 */
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { ThreadEvent } from '../bus/types';
import type { ThreadlineClient } from '../connect';
import { ValidationError } from '../errors';
import type { ThreadTarget } from '../schemas';
import { threadKey } from '../../workflows/ids';
import type { SubscriberLimit } from './limits';

export interface StreamDeps {
  client: ThreadlineClient;
  subscribers: SubscriberLimit;
  keepAliveMs: number;
}

export interface StreamOptions {
  lastEventId?: string;
  hideSignals?: boolean;
}

/** Streams `target`'s events; 429 when the thread has its limit of subscribers here, 400 for a bad Last-Event-ID. */
export function streamThread(
  c: Context,
  deps: StreamDeps,
  target: ThreadTarget,
  { lastEventId, hideSignals }: StreamOptions,
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
      keepAlive = keepAliveEvery(sse, deps.keepAliveMs);
      for await (const event of subscription.stream) {
        keepAlive.touch();
        await writeEvent(sse, event);
        if (sse.aborted || sse.closed) break;
      }
    } finally {
      keepAlive?.stop();
      subscription.unsubscribe();
      // The place is this stream's until here, however it ended: client gone, gateway closing, or a write failed.
      release();
    }
  });
}

async function writeEvent(sse: SSEStreamingApi, event: ThreadEvent): Promise<void> {
  await sse.writeSSE({ id: event.id, data: JSON.stringify(event) });
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
