/**
 * Publishes a step's events in order without waiting for each one: at most one publish is in flight, and
 * everything that arrives meanwhile goes out as the next batch. The first token is sent at once; a fast stream
 * is batched by the bus's own round-trip time.
 */
import type { EventBus } from '../bus/types';
import type { EventDraft, ThreadEventType } from '../protocol/events';
import { observePublishLag } from '../observability';

export class OrderedPublisher {
  private buffer: EventDraft[] = [];
  private inFlight: Promise<void> | null = null;
  private failure: unknown = null;
  private seq = 0;

  constructor(
    private readonly bus: EventBus,
    private readonly threadKey: string,
    /** Unique per step attempt: a retried attempt publishes under new keys after `run-retry`. */
    private readonly keyPrefix: string,
    private readonly runId: string,
  ) {}

  push(type: ThreadEventType, payload: unknown): void {
    this.pushDraft({ key: `${this.keyPrefix}:${this.seq++}`, runId: this.runId, type, payload, at: Date.now() });
  }

  pushDraft(draft: EventDraft): void {
    if (this.failure) throw this.failure;
    this.buffer.push(draft);
    if (!this.inFlight) this.inFlight = this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.buffer.length > 0) {
        const batch = this.buffer;
        this.buffer = [];
        await this.bus.publish(this.threadKey, batch);
        observePublishLag('step', batch);
      }
    } catch (err) {
      this.failure = err;
    } finally {
      this.inFlight = null;
    }
  }

  /** Resolves once everything pushed so far is published; rethrows a publish failure. */
  async flush(): Promise<void> {
    while (this.inFlight) await this.inFlight;
    if (this.failure) throw this.failure;
  }
}
