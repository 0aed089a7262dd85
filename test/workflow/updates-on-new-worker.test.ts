/**
 * Updates that reach a thread no worker has cached (issue #14, the second nondeterminism shape of the 15-minute chaos
 * run). A thread is idle after its first workflow task; its worker dies; two inputs arrive as updates in one workflow
 * task, which a new worker takes with the whole history. Before the `settle-before-acting` patch that first task had
 * no command, and sdk-core 1.24 then ran the updates with `initializeWorkflow` live (inside `setHandler`) but in an
 * activation of their own on replay, where the main loop woke between the two answers: live `accept, accept,
 * complete, complete, schedule`, replay `accept, accept, complete, schedule, complete`, and the thread was stuck
 * (test/replay/known-issues holds such a history). Now the first task records the patch's marker, and the main loop
 * lets every answer go out before it acts, so both groupings issue the same commands.
 */
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { temporal as proto } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { submitInputUpdate } from '../../protocol/definitions';
import type { WorkflowHandle } from '@temporalio/client';
import { threadKey } from '../../protocol/ids';
import type { ThreadInput } from '../../protocol/schemas';
import { THREAD_WORKFLOW_TYPE } from '../../protocol/thread-config';
import { replaySinks } from '../../worker/replay-sinks';
import { startHarness, within, type Harness } from '../support/harness';
import { untilUpdateAdmitted } from '../support/updates';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const Stage = proto.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
const EventType = proto.api.enums.v1.EventType;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const message = (id: string, contents: string): ThreadInput => ({
  id,
  agentId: 'tester',
  delivery: 'send',
  type: 'user',
  contents,
});

/** Sends `input` as a submitInput update and returns its id once the server admitted it (no worker needs to run). */
async function admit(workflowId: string, input: ThreadInput): Promise<string> {
  const updateId = randomUUID();
  // Its answer is read below with pollWorkflowExecutionUpdate.
  void h.temporal.workflow
    .getHandle(workflowId)
    .executeUpdate(submitInputUpdate, { args: [input], updateId })
    .catch(() => undefined);
  await untilUpdateAdmitted(h.temporal, workflowId, updateId, { identity: 'updates-on-new-worker.test' });
  return updateId;
}

async function idle(handle: WorkflowHandle, events: number): Promise<void> {
  await within(
    (async () => {
      for (;;) {
        const { raw } = await handle.describe();
        if (!raw.pendingWorkflowTask && Number(raw.workflowExecutionInfo?.historyLength ?? 0) >= events) return;
        await sleep(100);
      }
    })(),
    `the thread idle at event ${events}`,
  );
}

/** Waits for the update's outcome; throws when the update failed. */
async function outcome(workflowId: string, updateId: string): Promise<void> {
  for (;;) {
    const polled = await h.temporal.workflowService.pollWorkflowExecutionUpdate({
      namespace: 'default',
      updateRef: { workflowExecution: { workflowId }, updateId },
      identity: 'updates-on-new-worker.test',
      waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED },
    });
    if (polled.outcome?.failure) throw new Error(`update ${updateId} failed: ${polled.outcome.failure.message}`);
    if (polled.outcome?.success) return;
  }
}

describe('updates that a new worker receives with the whole history', () => {
  it('two inputs in the first task after a worker died replay as they ran', async () => {
    const t = { resourceId: `res-${randomUUID()}`, threadId: `thr-${randomUUID()}` };
    const workflowId = threadKey(t.resourceId, t.threadId);
    const handle = await h.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
      taskQueue: h.taskQueue,
      workflowId,
      args: [{ resourceId: t.resourceId, threadId: t.threadId }],
    });
    // The thread is idle once its first workflow task completed.
    await idle(handle, 4);
    // Its worker goes (a graceful shutdown hands its sticky queue back: the next workflow task goes to any worker).
    await h.worker!.shutdown();
    const first = await admit(workflowId, message('m1', 'first'));
    const second = await admit(workflowId, message('m2', 'second'));
    // A new worker: no cached run, so it gets the thread's whole history with both updates.
    await h.startWorker();
    await within(Promise.all([outcome(workflowId, first), outcome(workflowId, second)]), 'both updates answered');

    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    // Both updates were accepted in one workflow task (else this test did not make the race it is about).
    const accepted = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED);
    expect(accepted).toHaveLength(2);
    const taskOf = (id: number) =>
      events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && Number(e.eventId) < id)
        .length;
    expect(taskOf(Number(accepted[0]!.eventId))).toBe(taskOf(Number(accepted[1]!.eventId)));
    // Both answered before the thread acted on them: the task's commands start with accept, accept, complete,
    // complete (the loop's `settle()`), whichever way sdk-core grouped the updates.
    const from = events.indexOf(accepted[0]!);
    expect(events.slice(from, from + 5).map((e) => EventType[e.eventType!])).toEqual([
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED',
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED',
      expect.not.stringMatching(/UPDATE/),
    ]);

    await handle.terminate('the test is over');
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: replaySinks },
      await handle.fetchHistory(),
      workflowId,
    );
  }, 180_000);
});
