/**
 * A fork's starting state: the source thread as it stood right before step N was planned, made a thread of its own.
 * Pure: the snapshot in, the fork's snapshot out (docs/operations.md, "Time travel", says what is kept and why).
 */
import type { ThreadTarget } from '../protocol/schemas';
import type { ThreadClock, ThreadSnapshot } from '../workflows/state';
import { Outbox } from '../workflows/state/outbox';

export interface ForkOptions {
  to: ThreadTarget;
  /** Re-run the step with this agent; default the run's own. */
  agentId?: string;
  clock: ThreadClock;
}

/**
 * Kept: the conversation, the run that was about to plan step N (its pending inputs, its step count, so the fork's
 * first step is step N again), state lanes, the notification inbox, the step and event counters. Changed: the ids (the
 * fork's resource and thread) and, with `agentId`, the run's agent. Dropped: what belongs to the source's callers and
 * subscribers: events it had not published yet, the runs queued behind the active one, the input ids remembered for
 * idempotency, records waiting for the archive. The fork's subscribers see the run start, then step N.
 */
export function forkSnapshot(source: ThreadSnapshot, options: ForkOptions): ThreadSnapshot {
  const snapshot: ThreadSnapshot = structuredClone(source);
  snapshot.resourceId = options.to.resourceId;
  snapshot.threadId = options.to.threadId;
  snapshot.outbox = [];
  snapshot.queue = [];
  snapshot.remembered = [];
  snapshot.rememberedBatches = [];
  snapshot.evicted = [];
  const run = snapshot.run;
  if (run) {
    if (options.agentId) run.agentId = options.agentId;
    run.interruptRequested = false;
    delete run.abortRequested;
    delete run.toolWait;
    new Outbox(snapshot, options.clock).emit('start', { runId: run.runId, agentId: run.agentId }, run.runId);
  }
  return snapshot;
}
