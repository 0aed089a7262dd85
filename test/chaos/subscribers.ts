/**
 * SSE subscribers that behave like browsers on a flaky network: each connection lives 5–30 s, then drops,
 * and the subscriber resumes with Last-Event-ID, on either gateway and either SSE route. A gateway killed under
 * it ends the connection the same way. Everything received is recorded for the ordering check.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseSse } from '../../http-client/sse';
import type { ThreadEvent } from '../../protocol/events';
import type { Gateways } from './http';
import type { SubscriberSegment } from './invariants';
import type { Rng } from './random';

/** The Last-Event-ID before the first event of any stream. */
export const FROM_THE_START = '0-0';

export interface SubscriberTarget {
  agentId: string;
  resourceId: string;
  threadId: string;
}

export class Subscriber {
  readonly segments: SubscriberSegment[] = [];
  /** Connections ended on purpose (resumed after). */
  drops = 0;
  /** Connections that failed or ended under the subscriber (refused, reset, a gateway gone). */
  failures = 0;
  /** `0-0`: the first connection asks for the thread's whole stream, so every event it ever had is checked. */
  private lastId: string | undefined = FROM_THE_START;
  private stopped = false;
  private dropping = true;
  private current: AbortController | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly target: SubscriberTarget,
    private readonly gateways: Gateways,
    private readonly rng: Rng,
    private readonly onEvent: (event: ThreadEvent) => void,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  /** The id of the last event received. */
  lastEventId(): string | undefined {
    return this.lastId;
  }

  /** Keeps the current connection open from now on (the drain: let it catch up). */
  stopDropping(): void {
    this.dropping = false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    let gateway = this.gateways.next();
    while (!this.stopped) {
      const abort = new AbortController();
      this.current = abort;
      const segment: SubscriberSegment = { ...(this.lastId !== undefined && { resumeFrom: this.lastId }), items: [] };
      this.segments.push(segment);
      const lifetime = this.rng.between(5_000, 30_000);
      const dropTimer = setTimeout(() => {
        if (this.dropping) abort.abort();
      }, lifetime);
      let failed = false;
      try {
        const response = await this.open(gateway, abort.signal);
        if (!response.ok || !response.body) {
          failed = true;
          await response.body?.cancel().catch(() => undefined);
        } else {
          for await (const item of parseSse(response.body)) {
            if (item.kind !== 'message' || item.message.data === '[DONE]') continue;
            const event = JSON.parse(item.message.data) as ThreadEvent;
            segment.items.push({ id: event.id, type: event.type });
            this.lastId = event.id;
            this.onEvent(event);
          }
          // The gateway ended the stream: it is shutting down.
          failed = true;
        }
      } catch {
        failed = !abort.signal.aborted;
      } finally {
        clearTimeout(dropTimer);
      }
      if (this.stopped) break;
      if (failed) {
        this.failures++;
        await sleep(this.rng.between(200, 1_500));
      } else {
        this.drops++;
      }
      gateway = this.rng.chance(0.5) ? gateway : (gateway + 1) % this.gateways.urls.length;
    }
  }

  private open(gateway: number, signal: AbortSignal): Promise<Response> {
    const base = this.gateways.urls[gateway];
    const { agentId, resourceId, threadId } = this.target;
    const resume = this.lastId !== undefined ? { 'last-event-id': this.lastId } : undefined;
    if (this.rng.chance(0.5)) {
      // What an EventSource does: GET with Last-Event-ID.
      const path = `/api/threads/${encodeURIComponent(resourceId)}/${encodeURIComponent(threadId)}/events`;
      return fetch(`${base}${path}`, { headers: { accept: 'text/event-stream', ...resume }, signal });
    }
    // What the SDKs do: POST …/threads/subscribe.
    return fetch(`${base}/api/agents/${encodeURIComponent(agentId)}/threads/subscribe`, {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', ...resume },
      body: JSON.stringify({ resourceId, threadId }),
      signal,
    });
  }
}
