/**
 * `threadlineInspectStep`: runs one time-travel inspection (a step's prompt, or the state to fork from) on a worker of
 * the thread's task queue, where the agents and the workflow code are. Its own short workflow with its own id: the
 * thread's history is read, never written. Gateways and the CLI start it (client/time-travel.ts).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { InspectionOutcome, InspectionRequest } from '../protocol/time-travel';

/** The activity a worker registers for it (worker/inspect.ts). */
export interface InspectionActivities {
  inspectThreadStep(request: InspectionRequest): Promise<InspectionOutcome>;
}

const { inspectThreadStep } = proxyActivities<InspectionActivities>({
  // The first inspection on a worker bundles the workflow code for its replays (seconds); later ones reuse it.
  startToCloseTimeout: '5 minutes',
  // Reading the history may meet a passing error; a missing step or agent is an answer (`refused`), not an error.
  retry: { maximumAttempts: 3, initialInterval: '1 second' },
});

export async function threadlineInspectStep(request: InspectionRequest): Promise<InspectionOutcome> {
  return inspectThreadStep(request);
}
