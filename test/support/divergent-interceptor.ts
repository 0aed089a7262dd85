/**
 * A workflow interceptor that makes the thread workflow record what the real code does not: before its second model
 * step it upserts a memo (a `WorkflowPropertiesModified` event). A thread served by a worker with it no longer
 * replays on the real code, like a thread that recorded a split or ran an ungated change
 * (test/worker/history-repair.test.ts). State lives in the factory's closure: one per workflow execution.
 */
import { upsertMemo, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => {
  let steps = 0;
  return {
    outbound: [
      {
        scheduleActivity(input, next) {
          if (input.activityType === 'runStep' && ++steps === 2) upsertMemo({ diverged: true });
          return next(input);
        },
      },
    ],
  };
};
