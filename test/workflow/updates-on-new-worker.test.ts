/**
 * Updates that reach a thread no worker has cached (issue #14, the second nondeterminism shape of the 15-minute chaos
 * run). A thread is idle after its first workflow task; its worker dies; two inputs arrive as updates in one workflow
 * task, which a new worker takes with the whole history. Before the `settle-before-acting` patch that first task had
 * no command, and sdk-core 1.24 then ran the updates with `initializeWorkflow` live (inside `setHandler`) but in an
 * activation of their own on replay, where the main loop woke between the two answers: live `accept, accept,
 * complete, complete, schedule`, replay `accept, accept, complete, schedule, complete`, and the thread was stuck
 * (test/replay/known-issues holds such a history). Now the first task records the patch's marker, and the main loop
 * lets every answer go out before it acts, so both groupings issue the same commands.
 *
 * The same grouping, later in a thread's life: a signal whose task issued no command, then an update that a new worker
 * takes with the whole history. The signal's handler runs with the update's task live and in an activation of its
 * own on replay, so anything it records with the workflow's clock differs; the `loop-stamps-last-input` patch keeps
 * that clock out of the commands (workflows/search-attributes.ts).
 */
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { temporal as proto } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { abortThreadUpdate, sendSignalSignal, submitInputUpdate } from '../../protocol/definitions';
import type { WorkflowHandle } from '@temporalio/client';
import { threadKey } from '../../protocol/ids';
import type { ThreadInput } from '../../protocol/schemas';
import { THREAD_WORKFLOW_TYPE } from '../../protocol/thread-config';
import { replaySinks } from '../../worker/replay-sinks';
import { startHarness, within, type Harness } from '../support/harness';
import type { ThreadlineWorker } from '../../worker/index';
import { untilUpdateAdmitted } from '../support/updates';

let h: Harness;
/** The worker that serves the task queue now: each test replaces it. */
let current: ThreadlineWorker;
beforeAll(async () => {
  h = await startHarness();
  current = h.worker!;
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

/** Sends `input` as a submitInput update (or an abort) and returns its id once the server admitted it (no worker needs to run). */
async function admit(workflowId: string, input: ThreadInput | 'abort'): Promise<string> {
  const updateId = randomUUID();
  const handle = h.temporal.workflow.getHandle(workflowId);
  // Its answer is read below with pollWorkflowExecutionUpdate.
  void (
    input === 'abort'
      ? handle.executeUpdate(abortThreadUpdate, { args: [{}], updateId })
      : handle.executeUpdate(submitInputUpdate, { args: [input], updateId })
  ).catch(() => undefined);
  await untilUpdateAdmitted(h.temporal, workflowId, updateId, { identity: 'updates-on-new-worker.test' });
  return updateId;
}

async function idle(handle: WorkflowHandle, events: number): Promise<void> {
  await within(
    (async () => {
      for (;;) {
        const { raw } = await handle.describe();
        const pending = raw.pendingWorkflowTask || (raw.pendingActivities?.length ?? 0) > 0;
        if (!pending && Number(raw.workflowExecutionInfo?.historyLength ?? 0) >= events) return;
        await sleep(100);
      }
    })(),
    `the thread idle at event ${events}`,
  );
}

/** Waits for the update's outcome; throws when the update failed. */
async function outcome(workflowId: string, updateId: string, runId?: string): Promise<void> {
  for (;;) {
    const polled = await h.temporal.workflowService.pollWorkflowExecutionUpdate({
      namespace: 'default',
      updateRef: { workflowExecution: { workflowId, runId }, updateId },
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
    await current.shutdown();
    const first = await admit(workflowId, message('m1', 'first'));
    const second = await admit(workflowId, message('m2', 'second'));
    // A new worker: no cached run, so it gets the thread's whole history with both updates.
    current = await h.startWorker();
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

  // A signal whose task issued no command is handled, on a worker that rebuilds the thread from history, in the next
  // task's activation live (with that task's time) but in its own on replay (with its own). `ThreadlineLastInputAt`
  // took the handler's time, and its resolution wrote it in one and not the other: a chaos run's thread failed replay
  // with `Continue as new workflow machine does not handle this event: UpsertWorkflowSearchAttributes` (2026-12-04:
  // a discarded signal, then an abort that was the execution's last update before continue-as-new). The attribute now
  // takes the main loop's time, the same in both.
  it('a discarded signal, then an update on a new worker, replays as it ran', async () => {
    const t = { resourceId: `res-${randomUUID()}`, threadId: `thr-${randomUUID()}` };
    const workflowId = threadKey(t.resourceId, t.threadId);
    const resolutionMs = 3_000;
    // Two updates per execution: the abort below is the second, and the loop acts on it (continue-as-new).
    const config = { lastInputResolutionMs: resolutionMs, maxUpdatesPerExecution: 2 };
    const started = await h.temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
      taskQueue: h.taskQueue,
      workflowId,
      args: [{ resourceId: t.resourceId, threadId: t.threadId, config }],
    });
    // This execution, not the one it continues as.
    const first = h.temporal.workflow.getHandle(workflowId, started.firstExecutionRunId);
    const input = (id: string, behavior: 'persist' | 'discard'): ThreadInput => ({
      ...message(id, id),
      ifIdle: { behavior },
      ifActive: { behavior },
    });
    // The first input is stored and echoed: the loop acts and writes the attribute (it had none).
    const firstAt = Date.now();
    await within(outcome(workflowId, await admit(workflowId, input('p1', 'persist'))), 'the first input answered');
    await idle(first, 10); // and its echo published
    const before = Number((await first.describe()).raw.workflowExecutionInfo?.historyLength ?? 0);
    // A discarded signal, well within the resolution: its task issues no command.
    await first.signal(sendSignalSignal, input('d2', 'discard'));
    await idle(first, before + 4);
    expect((await first.fetchHistory()).events!.slice(before).map((e) => EventType[e.eventType!])).toEqual([
      'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
      'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
      'EVENT_TYPE_WORKFLOW_TASK_STARTED',
      'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
    ]);
    // The abort comes after the resolution (the workflow's clock is the server's), to a worker without the thread.
    await sleep(Math.max(0, firstAt + resolutionMs + 500 - Date.now()));
    await current.shutdown();
    const abort = await admit(workflowId, 'abort');
    current = await h.startWorker();
    await within(outcome(workflowId, abort, started.firstExecutionRunId), 'the abort answered');

    // The loop wrote the newer last input as it continued as new, and the history replays.
    await within(
      (async () => {
        while ((await first.describe()).status.name !== 'CONTINUED_AS_NEW') await sleep(100);
      })(),
      'the execution to continue as new',
    );
    const history = await first.fetchHistory();
    const events = history.events ?? [];
    expect(EventType[events.at(-1)!.eventType!]).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    const upsert = events.at(-2)!.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    expect(Object.keys(upsert ?? {})).toEqual(['ThreadlineLastInputAt']);
    await h.temporal.workflow.getHandle(workflowId).terminate('the test is over');
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: replaySinks },
      history,
      workflowId,
    );
  }, 180_000);
});
