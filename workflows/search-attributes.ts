/**
 * Keeps the execution's search attributes and current details in step with the thread. Called by the main loop only
 * (handlers record, the loop decides), once per iteration: the upserts of everything that changed meanwhile go out as
 * one command, and nothing at all when nothing changed, so a one-step turn writes two (run start, run end).
 */
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import {
  agentSearchAttribute,
  lastInputAtSearchAttribute,
  searchAttributeChanges,
  threadSearchValues,
} from '../protocol/search-attributes';
import { currentDetails } from '../protocol/summaries';
import type { ThreadState } from './state';

/**
 * `patched()` id: `ThreadlineLastInputAt` takes the main loop's time, not the input handler's. A handler's time is the
 * time of the activation it runs in, and sdk-core does not always group a task's jobs the same way live and on replay:
 * a signal whose workflow task issued no command (an input discarded while idle, say), followed by a task of updates
 * taken by a worker that rebuilds the thread from history, is handled live in that task's activation, with that
 * task's time, and on replay in an activation of its own, with its own time. The minute's resolution then wrote the
 * attribute in one and not the other, and the history did not replay (chaos, 2026-12-04, `Continue as new workflow
 * machine does not handle this event: UpsertWorkflowSearchAttributes`; test/workflow/updates-on-new-worker.test.ts).
 * The loop acts in the same activation either way, so a time it takes is the same. Asked once, as the workflow starts.
 */
export const LOOP_STAMPS_LAST_INPUT_PATCH = 'loop-stamps-last-input';

export class SearchAttributeSync {
  /** The thread's own last input time when the loop last looked. */
  private seenInputAt: number | null;
  /** The loop's time when it first saw that input: what the attribute says (once it moved by the resolution). */
  private stampedInputAt: number | null;

  constructor(
    private readonly thread: ThreadState,
    private readonly options: { loopStamps: boolean; lastInputResolutionMs: number; now: () => number },
  ) {
    this.seenInputAt = thread.lastInputAt;
    // Carried over by continue-as-new (the server copies the attributes), or none yet.
    const carried = workflowInfo().typedSearchAttributes.get(lastInputAtSearchAttribute);
    this.stampedInputAt = carried instanceof Date ? carried.getTime() : thread.lastInputAt;
  }

  /** Upserts what changed since the last call, in one command; the current details too (not in history). */
  sync(): void {
    const view = this.thread.view();
    // What the execution has: its start's attributes (set by the client, or carried over by continue-as-new) with the
    // upserts so far applied. Read from workflow info, so replay decides the same.
    const current = workflowInfo().typedSearchAttributes;
    const lastAgent = current.get(agentSearchAttribute) ?? null;
    const changes = searchAttributeChanges(
      current,
      threadSearchValues(view, { lastAgent, lastInputAt: this.lastInputAt() }),
      this.options.lastInputResolutionMs,
    );
    if (changes.length > 0) upsertSearchAttributes(changes);
    // Not in history: the UI reads it with the workflow metadata query.
    setCurrentDetails(currentDetails(view));
  }

  private lastInputAt(): number | null {
    // Executions from before the patch keep the handler's time, as their histories recorded it.
    if (!this.options.loopStamps) return this.thread.lastInputAt;
    if (this.thread.lastInputAt !== this.seenInputAt) {
      this.seenInputAt = this.thread.lastInputAt;
      this.stampedInputAt = this.options.now();
    }
    return this.stampedInputAt;
  }
}
