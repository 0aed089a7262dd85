/**
 * The subscriber stream of a thread. Workers publish, gateways and clients subscribe.
 * Two implementations share this contract: in-process (`memory.ts`, the embedded default) and Redis Streams
 * (`redis.ts`, for several processes or machines).
 */
import type { AgentSummary } from '../protocol/api';
import type { EventDraft, ThreadEvent } from '../protocol/events';
import type { StepCancelNotice } from '../workflows/sinks';

/**
 * Where a subscription starts.
 * - `afterId`: every event after that id, exactly once (resume).
 * - `activeRun`: from the `start` of the run in progress, if any, else the live edge.
 * - `live`: only events published from now on.
 */
export type SubscribeFrom = { afterId: string } | { activeRun: true } | { live: true };

/**
 * What a subscription yields: events, or a `gap` marker when events after the caller's position are not retained
 * (the caller then sends a snapshot of the thread before the events that follow): first when `afterId` is older than
 * what the bus retains, or is `0` and the bus's stream of the thread does not begin with the thread's first event
 * (`THREAD_FIRST_EVENT_KEY`: the bus lost the ones before); mid-stream when the subscriber falls behind or the bus
 * lost the stream under it.
 */
export type BusItem = { kind: 'event'; event: ThreadEvent } | { kind: 'gap'; oldestId: string | null };

/** Archived notification records, newest first; `nextCursor` pages on (null at the end). */
export interface ArchivePage {
  notifications: Record<string, unknown>[];
  nextCursor: string | null;
}

/**
 * A control notice between processes, beside the threads' streams: `step-cancel` says a workflow cancelled a step
 * (`namespace`: its Temporal namespace), so the worker running it can stop the model call before Temporal's own
 * cancellation reaches the activity.
 */
export type ControlNotice = { type: 'step-cancel'; namespace: string } & StepCancelNotice;

/** Records kept per thread in the archive (the oldest are dropped beyond it). */
export const MAX_ARCHIVED_PER_THREAD = 10_000;

export interface EventBus {
  /** Appends events in order; returns them with their ids (already-published keys return the retained event). */
  publish(threadKey: string, events: EventDraft[]): Promise<ThreadEvent[]>;
  /** Yields items until `signal` aborts or the bus closes. */
  subscribe(threadKey: string, from: SubscribeFrom, signal?: AbortSignal): AsyncIterable<BusItem>;
  close(): Promise<void>;
  /**
   * Keeps notification records that left a thread's inbox (beyond its bound), so they stay retrievable. A record
   * stored twice (a retried activity) is listed once.
   */
  archive(threadKey: string, records: Record<string, unknown>[]): Promise<void>;
  /** Archived records, newest first. */
  archived(threadKey: string, page: { limit: number; cursor?: string }): Promise<ArchivePage>;
  /**
   * The agents workers host, as they announce them at start (by id; a later announcement replaces an earlier one),
   * so that gateways list and check agents without loading agent code.
   */
  announceAgents(agents: readonly AgentSummary[]): Promise<void>;
  agents(): Promise<AgentSummary[]>;
  /**
   * Sends a control notice to every process listening on this bus, this one included. Best effort and live only: a
   * process hears the notices sent while it listens, nothing is retained, and a lost notice may only cost time (what
   * it announces arrives through Temporal anyway).
   */
  sendNotice(notice: ControlNotice): Promise<void>;
  /**
   * Calls `listener` for every notice sent from now on by any process on this bus. Resolves once listening, with a
   * function that stops it.
   */
  onNotice(listener: (notice: ControlNotice) => void): Promise<() => Promise<void>>;
  /**
   * Resolves when the server the bus depends on answers, rejects with why not (readiness checks). Buses without a
   * server (in-process) leave it out.
   */
  ping?(): Promise<void>;
}

export interface BusRetention {
  /** Events kept per thread (older ones are trimmed). Default 10,000. */
  maxEvents: number;
  /** A thread whose stream saw no event for this long is dropped from the bus. Default one hour. */
  idleMs: number;
}

export const defaultRetention: BusRetention = { maxEvents: 10_000, idleMs: 60 * 60 * 1000 };

/** One page of archived records (newest first); the cursor is the offset of the next page, duplicates listed once. */
export function archivePage(
  newestFirst: Record<string, unknown>[],
  page: { limit: number; cursor?: string },
): ArchivePage {
  const seen = new Set<unknown>();
  const unique = newestFirst.filter((r) => (seen.has(r.id) ? false : (seen.add(r.id), true)));
  const start = page.cursor === undefined ? 0 : Number(page.cursor);
  if (!Number.isInteger(start) || start < 0) {
    throw new Error(`Invalid cursor "${page.cursor}": pass a nextCursor as given.`);
  }
  const notifications = unique.slice(start, start + page.limit);
  const next = start + notifications.length;
  return { notifications, nextCursor: next < unique.length ? String(next) : null };
}
