/**
 * The worker's side of `StepWindow` (protocol/step.ts): the window each thread's latest step was sent, kept so the
 * next step's input needs only what changed. Bounded by threads and by bytes (least recently used leave first); a
 * miss (a cold or restarted worker, another worker ran the previous step, an evicted entry) asks the workflow for the
 * window of the step in flight with `stepWindowQuery`, which costs a query and no history.
 */
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { StoredMessage } from '../protocol/messages';
import { stepWindowQuery } from '../protocol/definitions';
import { retryGuardedQuery } from '../protocol/query-task-guard';
import type { StepInput } from '../protocol/step';

export interface StepWindowCacheLimits {
  /** Threads whose latest window is kept. Default 1,000. */
  maxThreads: number;
  /** Their windows' size in all, as JSON. Default 64 MiB. */
  maxBytes: number;
}

export const defaultStepWindowCacheLimits: StepWindowCacheLimits = { maxThreads: 1_000, maxBytes: 64 * 1024 * 1024 };

interface Entry {
  stepKey: string;
  messages: StoredMessage[];
  sizes: number[];
  bytes: number;
}

/** Asks the thread's workflow for the window of one of its steps (the activity's client, in production). */
export type WindowQuery = (threadKey: string, stepKey: string) => Promise<StoredMessage[]>;

export interface WindowStats {
  hits: number;
  misses: number;
}

export class StepWindowCache {
  /** Insertion order is recency: a use moves an entry to the end. */
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  readonly stats: WindowStats = { hits: 0, misses: 0 };

  constructor(private readonly limits: StepWindowCacheLimits = defaultStepWindowCacheLimits) {}

  get size(): { threads: number; bytes: number } {
    return { threads: this.entries.size, bytes: this.bytes };
  }

  /** The step's whole window: from its input, this cache, or (on a miss) the workflow. */
  async resolve(input: StepInput, query: WindowQuery): Promise<StoredMessage[]> {
    // Steps scheduled before windows travelled as changes carry the whole window.
    if (input.messages) return input.messages;
    const window = input.window;
    if (!window) throw ApplicationFailure.nonRetryable('The step input carries no context window.', 'InvalidStep');
    const key = input.threadKey;
    if ('full' in window) return this.remember(key, input.stepKey, window.full);
    const entry = this.entries.get(key);
    if (entry?.stepKey === input.stepKey) {
      // A retried attempt on this worker.
      this.stats.hits += 1;
      this.touch(key, entry);
      return entry.messages;
    }
    if (entry?.stepKey === window.base && entry.messages.length >= window.keep) {
      // The previous window slid forward: only the new messages are measured, so a step costs what changed.
      this.stats.hits += 1;
      const from = entry.messages.length - window.keep;
      const messages = [...entry.messages.slice(from), ...window.tail];
      return this.remember(key, input.stepKey, messages, [...entry.sizes.slice(from), ...window.tail.map(sizeOf)]);
    }
    this.stats.misses += 1;
    return this.remember(key, input.stepKey, await query(key, input.stepKey));
  }

  /** Keeps `messages` as the thread's latest window (`sizes`: each one's size, when known) and returns them. */
  private remember(
    key: string,
    stepKey: string,
    messages: StoredMessage[],
    sizes: number[] = messages.map(sizeOf),
  ): StoredMessage[] {
    this.forget(key);
    const bytes = sizes.reduce((a, b) => a + b, 0);
    // A window larger than the whole budget is not kept: the next step asks the workflow.
    if (bytes > this.limits.maxBytes) return messages;
    this.entries.set(key, { stepKey, messages, sizes, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.limits.maxThreads && this.bytes <= this.limits.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
    return messages;
  }

  /** Marks an entry as just used (insertion order is recency). */
  private touch(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

/** A message's size in the cache's budget: its JSON's length. */
const sizeOf = (message: StoredMessage): number => JSON.stringify(message).length;

/** The production `WindowQuery`: the thread's workflow (its id is the thread key) answers `stepWindowQuery`. */
export function queryWorkflowWindow(client: () => Client): WindowQuery {
  return async (threadKey, stepKey) => {
    try {
      return await retryGuardedQuery(() => client().workflow.getHandle(threadKey).query(stepWindowQuery, stepKey));
    } catch (err) {
      // The step is no longer in flight (the workflow moved on) or the query failed: retry, the workflow decides.
      throw ApplicationFailure.retryable(
        `Could not get the context window of step ${stepKey}: ${(err as Error).message}`,
        'StepWindowUnavailable',
      );
    }
  };
}
