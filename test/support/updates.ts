/**
 * Waiting on the server's side of an update, for tests that admit updates while no worker runs (the update then sits
 * in the pending workflow task until one polls).
 */
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';

const Stage = proto.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
/** gRPC NOT_FOUND: the update has not reached the server yet. */
const NOT_FOUND = 5;

/** Resolves once the server has admitted update `updateId` of `workflowId` (polled every `everyMs` until then). */
export async function untilUpdateAdmitted(
  temporal: Client,
  workflowId: string,
  updateId: string,
  { identity = 'threadline-test', everyMs = 100 }: { identity?: string; everyMs?: number } = {},
): Promise<void> {
  for (;;) {
    const admitted = await temporal.workflowService
      .pollWorkflowExecutionUpdate({
        namespace: temporal.options.namespace,
        updateRef: { workflowExecution: { workflowId }, updateId },
        identity,
        waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED },
      })
      .then(
        () => true,
        (err: { code?: number }) => {
          if (err.code !== NOT_FOUND) throw err;
          return false;
        },
      );
    if (admitted) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
