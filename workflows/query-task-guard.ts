/**
 * Guard against an sdk-core behaviour that splits a workflow task differently live and on replay (issue #14,
 * docs/operations.md "Known issue: updates grouped differently live and on replay", first shape).
 *
 * A query that reaches a thread with no workflow task pending goes straight to a worker as a *legacy query task*
 * (server `service/history/api/queryworkflow`, dispatched through matching). Its history is read when a worker polls
 * it, so it can end with events that came meanwhile: an activity's result and the `WorkflowTaskScheduled` for it.
 * sdk-core 1.24 applies those events to the run (`managed_run.rs` `_incoming_wft` -> `new_work_from_server`) and sends
 * the workflow an activation with them (`ResolveActivity`, not replaying) before the query. What the workflow does then
 * (commands) is kept and only sent with the next real workflow task (`prepare_complete_resp`: `is_query_playback`), and
 * an update that task carries runs in an activation of its own. Replay puts that update and the activity result in one
 * activation, update first, and fails with TMPRL1100 on the recorded commands.
 *
 * Such an activation is recognisable: its history grew (`historyLength`) but it contains no new `WorkflowTaskStarted`,
 * which no real workflow task's activation lacks: its workflow time (`timestamp`, moved by `WorkflowTaskStarted`,
 * `workflow_machines.rs` `task_started`) and its `historySizeBytes` (set only from that event) are both unchanged.
 * The size alone is not enough: a real task reported the same size as the one before it in a chaos run. Activations
 * with an update are left alone (a task that carries one may follow a speculative task whose events the server
 * dropped: same size, later id). The
 * guard fails it before any workflow code runs. sdk-core then evicts the run and answers the query with that failure
 * (`fail_workflow_task`: `ReportLegacyQueryFailure`), nothing is recorded in the history, and the next real workflow
 * task replays the run from its history: one activation, as replay has it. The cost is that one query fails; readers
 * ask again (protocol/query-task-guard.ts).
 *
 * The check reads only the activation, so replays of recorded histories (whose activations all carry their task's
 * `WorkflowTaskStarted`, or replay) are unaffected, and no `patched()` is needed: no command changes.
 */
import { workflowInfo, type ActivateInput } from '@temporalio/workflow';
// Internal, pinned with the SDK (1.24.0): the way to add an internals interceptor from workflow code, so every bundle of
// the thread workflow (worker, tests, chaos, replay) has the guard without an interceptor module to remember.
import { getActivator } from '@temporalio/workflow/lib/global-attributes';
import { QUERY_TASK_GUARD_MESSAGE } from '../protocol/query-task-guard';

/** Installs the guard for this workflow execution. Call once, at the start of the workflow function. */
export function installQueryTaskGuard(): void {
  // The activation running now (the first) is past the interceptors; it is the first one compared against.
  const { historyLength, historySize } = workflowInfo();
  // The workflow clock (new Date() in the sandbox) is the activation's workflow time.
  const seen: Seen = { historyLength, historySizeBytes: historySize, timeMs: new Date().getTime() };
  getActivator().interceptors.internals.push({
    activate(input, next) {
      if (input.batchIndex === 0) check(input.activation, seen);
      return next(input);
    },
  });
}

interface Seen {
  historyLength: number;
  historySizeBytes: number;
  /** The activation's workflow time in ms: it moves only with a `WorkflowTaskStarted` (or a local activity's). */
  timeMs: number;
}

function check(activation: ActivateInput['activation'], seen: Seen): void {
  const historyLength = Number(activation.historyLength ?? 0);
  const historySizeBytes = Number(activation.historySizeBytes ?? 0);
  const timeMs = activation.timestamp
    ? Number(activation.timestamp.seconds ?? 0) * 1000 + Math.floor((activation.timestamp.nanos ?? 0) / 1e6)
    : undefined;
  const jobs = activation.jobs ?? [];
  const onlyQueries = jobs.every((job) => job.queryWorkflow);
  // An update comes only with a real workflow task, never with a query task. Its task may be speculative: when every
  // update in it is rejected, the server drops the task's events, so the next one can report the same history size
  // at a later event id (seen in the raw fuzzer: a false positive at event 1081 without this).
  const hasUpdate = jobs.some((job) => job.doUpdate);
  const grewWithoutTask =
    !activation.isReplaying &&
    !onlyQueries &&
    !hasUpdate &&
    seen.historyLength > 0 &&
    seen.historySizeBytes > 0 &&
    historyLength > seen.historyLength &&
    historySizeBytes === seen.historySizeBytes &&
    timeMs === seen.timeMs;
  if (grewWithoutTask) {
    throw new Error(
      `${QUERY_TASK_GUARD_MESSAGE} an activation with history to event ${historyLength} and no new workflow task ` +
        `(history size still ${historySizeBytes} bytes, as at event ${seen.historyLength}): a query task carried ` +
        'new events. Failing it evicts the run, so the next workflow task replays it (docs/operations.md).',
    );
  }
  seen.historyLength = historyLength;
  seen.historySizeBytes = historySizeBytes;
  if (timeMs !== undefined) seen.timeMs = timeMs;
}
