/**
 * The thread's outbox: events the workflow decided, numbered in order (`w:<eventSeq>`), waiting for the publish
 * activity. The sequence lives in the snapshot, so the keys stay stable across replay and continue-as-new.
 */
import { workflowEventKey, type ThreadEventType } from '../../protocol/events';
import type { OutboxEvent, ThreadClock, ThreadSnapshot } from './snapshot';

export class Outbox {
  /** Outbox events announcing a record, by record id, while they wait to be published (not part of the snapshot). */
  private readonly unpublishedRecordEvents = new Map<string, OutboxEvent>();

  constructor(
    private readonly s: ThreadSnapshot,
    private readonly clock: ThreadClock,
  ) {}

  get size(): number {
    return this.s.outbox.length;
  }

  emit(type: ThreadEventType, payload: unknown, runId?: string): void {
    this.s.eventSeq += 1;
    const draft: OutboxEvent = { key: workflowEventKey(this.s.eventSeq), type, payload, at: this.clock.now() };
    if (runId !== undefined) draft.runId = runId;
    this.s.outbox.push(draft);
  }

  /**
   * Announces a notification record's change (`notification-updated`). A record's announcement not yet published is
   * replaced in place by the newer one: a burst of coalescing sends costs one event per record, not one per send,
   * and the outbox stays bounded.
   */
  announce(recordId: string, payload: unknown): void {
    const queued = this.unpublishedRecordEvents.get(recordId);
    // The map holds only events still in the outbox: `take` is the one way out, and it clears the map.
    if (queued) {
      queued.payload = payload;
      queued.at = this.clock.now();
      return;
    }
    this.emit('notification-updated', payload);
    this.unpublishedRecordEvents.set(recordId, this.s.outbox[this.s.outbox.length - 1]);
  }

  /** The oldest events, at most `maxBytes` of JSON (always at least one): activity payloads stay well under 2 MB. */
  take(maxBytes = Infinity): OutboxEvent[] {
    this.unpublishedRecordEvents.clear();
    if (maxBytes === Infinity) return this.s.outbox.splice(0);
    let bytes = 0;
    let n = 0;
    while (n < this.s.outbox.length) {
      bytes += JSON.stringify(this.s.outbox[n]).length;
      if (n > 0 && bytes > maxBytes) break;
      n += 1;
    }
    return this.s.outbox.splice(0, n);
  }

  /** Whether the outbox holds more than `maxBytes` of JSON (stops counting once it does). */
  exceeds(maxBytes: number): boolean {
    let bytes = 0;
    for (const event of this.s.outbox) {
      bytes += JSON.stringify(event).length;
      if (bytes > maxBytes) return true;
    }
    return false;
  }

  /** Events taken for publishing that could not be published go back to the front, order kept. */
  restore(events: OutboxEvent[]): void {
    this.s.outbox.unshift(...events);
  }
}
