/**
 * What the thread workflow tells its worker process through Temporal sinks. A sink call runs in the worker after the
 * activation, outside the sandbox; it is never made while the worker replays history, and it adds nothing to history,
 * so it may carry hints only: nothing a sink does can change what the workflow decides.
 */
import type { Sinks } from '@temporalio/workflow';

/** The step the workflow just cancelled: `stepKey` is unique within the thread. */
export interface StepCancelNotice {
  threadKey: string;
  stepKey: string;
}

export interface ThreadlineSinks extends Sinks {
  threadlineSteps: {
    /**
     * The workflow cancelled this step's activity. Temporal delivers that cancellation only in the response to one of
     * the activity's heartbeats, throttled to one a second; the worker passes this notice to the worker running the
     * step (over the bus), which stops the model call at once and then waits for Temporal's cancellation.
     */
    cancelRequested(notice: StepCancelNotice): void;
  };
}
