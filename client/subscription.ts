/**
 * A subscription to one thread's stream: resume by id, or from the start of the active run, with a snapshot
 * first when the requested id has left the bus's retention.
 */
import type { EventBus, SubscribeFrom } from '../bus/types';
import type { ThreadEvent } from '../protocol/events';
import type { SubscribeOptions } from '../protocol/api';

export interface ThreadSubscription {
  stream: AsyncIterable<ThreadEvent>;
  /** The run in progress as seen on this stream, or null. */
  activeRunId(): string | null;
  unsubscribe(): void;
}

export function subscribe(
  bus: EventBus,
  threadKey: string,
  options: SubscribeOptions,
  snapshot: () => Promise<unknown>,
): ThreadSubscription {
  const abort = new AbortController();
  let activeRun: string | null = null;
  const from: SubscribeFrom = options.lastEventId ? { afterId: options.lastEventId } : { activeRun: true };
  // Subscribe now, not on the first read: a caller that subscribes and then sends must see the reply.
  const items = bus.subscribe(threadKey, from, abort.signal);
  async function* events(): AsyncGenerator<ThreadEvent> {
    let lastId = options.lastEventId ?? '0';
    for await (const item of items) {
      if (item.kind === 'gap') {
        // The events after lastId are gone: the thread's current state stands in for them. The snapshot keeps the
        // caller's position as its id, so a reconnect after it resumes with the retained events that follow.
        yield {
          id: lastId,
          threadKey,
          type: 'snapshot',
          payload: await snapshot(),
          at: Date.now(),
        };
        continue;
      }
      const { event } = item;
      lastId = event.id;
      if (event.type === 'start') activeRun = event.runId ?? null;
      else if ((event.type === 'finish' || event.type === 'abort') && event.runId === activeRun) activeRun = null;
      if (options.hideSignals && event.type === 'data-signal') continue;
      yield event;
    }
  }
  return {
    stream: events(),
    activeRunId: () => activeRun,
    unsubscribe: () => abort.abort(),
  };
}
