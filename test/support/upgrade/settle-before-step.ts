/**
 * The workflow change the upgrade drill deploys (test/e2e/upgrade-drill.test.ts, docs/operations.md "Upgrade
 * drill"): a short durable pause before every model step, so inputs that arrive together join one step. It adds a
 * command (a timer) ahead of each `runStep` activity, which is exactly the kind of change that breaks running threads:
 * replaying a history written without the timer, the new code would start a timer where the history scheduled the
 * step.
 *
 * It is a workflow outbound interceptor rather than an edit of workflows/thread.ts, so the production workflow is not
 * forked: the bundle of workflows/ plus this module issues the same commands as a `thread.ts` whose `step()` began
 * with the same `if (patched(…)) await sleep(…)`. Workflow sandbox code: no Node, no imports but the workflow SDK.
 */
import {
  patched,
  sleep,
  type ActivityInput,
  type Next,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The `patched()` id of the change: the marker a thread records the first time it runs the new code. */
export const SETTLE_PATCH_ID = 'settle-before-step';
/** A second gate that turns the change off again without stranding the threads that ran it (docs/operations.md). */
export const SETTLE_OFF_PATCH_ID = 'settle-before-step-off';
/** The timer's summary (in its TimerStarted event's user metadata), by which tests tell it from other timers. */
export const SETTLE_TIMER_SUMMARY = 'settle before step';
export const SETTLE_MS = 20;

/**
 * `patched`: behind `patched(SETTLE_PATCH_ID)` (the right way). `none`: unconditional (the mistake). `switched-off`: a
 * later release that turns the change off: threads that ran it keep replaying it, new steps go without it.
 */
export type SettleGate = 'patched' | 'none' | 'switched-off';

export class SettleBeforeStep implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly gate: SettleGate) {}

  async scheduleActivity(
    input: ActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>,
  ): Promise<unknown> {
    // Replaying a step that an old worker scheduled, patched() is false: no timer, as the history says. Live, it is
    // true and records the marker (once per execution), so later replays of this history take the new path too.
    if (input.activityType === 'runStep' && this.applies()) await sleep(SETTLE_MS, { summary: SETTLE_TIMER_SUMMARY });
    return next(input);
  }

  private applies(): boolean {
    if (this.gate === 'none') return true;
    if (this.gate === 'patched') return patched(SETTLE_PATCH_ID);
    return patched(SETTLE_PATCH_ID) && !patched(SETTLE_OFF_PATCH_ID);
  }
}
