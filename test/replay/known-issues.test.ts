/**
 * Histories that do not replay, for a cause outside Threadline's workflow code (docs/operations.md, "Known issue:
 * updates grouped differently live and on replay"). Each must keep failing the same way: the day one replays, the SDK
 * changed, and the history moves to `histories/`, where every history must replay.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { replaySinks } from '../../worker/replay-sinks';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'known-issues');

const knownIssues = [
  {
    // Chaos run seed 1414, thread t49: live, the worker answered the workflow task of events 93-94 with [upsert,
    // schedule publishEvents, accept update, complete update]; replay delivers the update and runStep's result in one
    // activation (update first), so the thread accepts the input before it sees the step's result and schedules
    // another step. Mitigated by the query-task guard (workflows/query-task-guard.ts).
    name: 'chaos-1414 t49: the update accepted after the step result replays in the same activation',
    file: 'update-split-chaos-1414-t49.json',
    failure:
      /TMPRL1100.*Update machine does not handle this event: HistoryEvent\(id: 96, UpsertWorkflowSearchAttributes\)/,
  },
  {
    // Chaos run seed 874385081 (production server), thread t1: its first workflow task completed with no command; a
    // new worker took the next task (two submitInput updates) with the whole history. Live, sdk-core ran the updates
    // with initializeWorkflow and the thread answered both before scheduling publishEvents; replay hands them over in
    // an activation of their own, where the main loop woke between the two answers. Executions recorded since the
    // `settle-before-acting` patch replay (test/workflow/updates-on-new-worker.test.ts).
    name: 'chaos-874385081 t1: two updates ran with initializeWorkflow live, in an activation of their own on replay',
    file: 'updates-with-first-task-chaos-874385081-t1.json',
    failure:
      /TMPRL1100.*Activity machine does not handle this event: HistoryEvent\(id: 13, WorkflowExecutionUpdateCompleted\)/,
  },
  {
    // CI's chaos run seed 1049782768 (production server, a worker killed every 15 s), thread t160: the step's activity
    // timed out (event 45), the task after it timed out in a killed worker's hands (46-48), and a new worker's task on
    // the normal queue (49-51) answered [upsert, schedule publishEvents, accept update, complete update]: the step's
    // result handled before the update, as t49 above; the query-task guard did not catch it (docs/operations.md, "What
    // the guard cannot see"). Fails the same way at 85a5d42, before the run's code changes.
    name: 'chaos-1049782768 t160: a timed-out step handled before an update, replayed in one activation',
    file: 'update-split-chaos-1049782768-t160.json',
    failure:
      /TMPRL1100.*Update machine does not handle this event: HistoryEvent\(id: 52, UpsertWorkflowSearchAttributes\)/,
  },
  {
    // CI's chaos run seed 1073800542 (production server), thread t25: a discarded signal's workflow task (24-26)
    // issued no command; its worker died, and a new worker took the next task (an abort, the execution's last update
    // before continue-as-new) with the whole history. Live, sdk-core handled the signal in that task's activation, with
    // its time, so `ThreadlineLastInputAt` had moved by the minute's resolution and was written before continuing as
    // new; replay hands the signal over in an activation of its own, with its own time, and writes nothing. Executions
    // recorded since the `loop-stamps-last-input` patch replay (test/workflow/updates-on-new-worker.test.ts).
    name: 'chaos-1073800542 t25: a discarded signal handled with the next task live, in its own activation on replay',
    file: 'signal-merged-chaos-1073800542-t25.json',
    failure:
      /TMPRL1100.*Continue as new workflow machine does not handle this event: HistoryEvent\(id: 32, UpsertWorkflowSearchAttributes\)/,
  },
];

describe('replay of histories with a known SDK-level divergence', () => {
  it.each(knownIssues)('$name', async ({ file, failure }) => {
    const history = historyFromJSON(JSON.parse(await readFile(join(dir, file), 'utf8')));
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: replaySinks },
        history,
        file,
      ),
    ).rejects.toThrow(failure);
  });
});
