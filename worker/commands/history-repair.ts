/**
 * `threadline history repair` gets a thread going again when its running execution no longer replays against the
 * workflow code (a recorded split, docs/operations.md "Known issue: updates grouped differently live and on replay";
 * an ungated change): every worker fails its workflow tasks, so the thread takes no input. The command replays the
 * execution, finds the first diverging event, and resets the execution (Temporal's `ResetWorkflowExecution`) to the
 * last workflow task completed before it: the new run keeps the history up to that task, the current code redoes
 * the task, and Temporal reapplies the signals and updates accepted after it. Without `--yes` it prints the plan and
 * changes nothing.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { readExecutionHistory } from '../../client/history-chain';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import { EXIT, UsageError, type Command } from './command';
import { locateDivergence, eventTypeName, type Divergence, type JsonEvent, type ReplayEvents } from './divergence';
import { json } from './format';
import { bundleOption, makeReplayer } from './replayer';
import { withSession } from './session';
import { formatThreadName, noMore, threadArgument, threadOptionHelp, threadOptions } from './thread-name';

const TASK_COMPLETED = 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED';

/** What the reset redoes: the events after the reset point, by what they mean for the thread. */
export interface RedoneWork {
  /** Updates accepted after the reset point: Temporal reapplies them to the new run, which handles them again. */
  updates: number;
  /** Signals received after it: reapplied likewise. */
  signals: number;
  /** Model steps scheduled after it: they run again (the provider is called again). */
  steps: number;
  /** Other activities scheduled after it (tools, publishing, agent calls): they run again. */
  otherActivities: number;
}

export interface RepairPlan {
  workflowId: string;
  runId: string;
  divergence: Divergence | null;
  /** The `WorkflowTaskCompleted` event to reset to: the new run keeps the events before it and redoes its task. */
  resetEventId: number;
  redone: RedoneWork;
}

/** The last `WorkflowTaskCompleted` before `eventId`, or undefined when the run's first task is the one that diverges. */
export function lastTaskCompletedBefore(events: readonly JsonEvent[], eventId: number): number | undefined {
  let found: number | undefined;
  for (const event of events) {
    const id = Number(event.eventId);
    if (id >= eventId) break;
    if (event.eventType === TASK_COMPLETED) found = id;
  }
  return found;
}

/** The events a reset to `resetEventId` keeps: those before it (the redone task's `WorkflowTaskStarted` last). */
export function keptEvents(events: readonly JsonEvent[], resetEventId: number): JsonEvent[] {
  return events.filter((event) => Number(event.eventId) < resetEventId);
}

/** What happened after `resetEventId`, which the new run does again. */
export function redoneWork(events: readonly JsonEvent[], resetEventId: number): RedoneWork {
  const work: RedoneWork = { updates: 0, signals: 0, steps: 0, otherActivities: 0 };
  for (const event of events) {
    if (Number(event.eventId) <= resetEventId) continue;
    switch (event.eventType) {
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED':
        work.updates += 1;
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED':
        work.signals += 1;
        break;
      case 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED': {
        const type = (event.activityTaskScheduledEventAttributes as { activityType?: { name?: string } } | undefined)
          ?.activityType?.name;
        if (type === 'runStep') work.steps += 1;
        else work.otherActivities += 1;
        break;
      }
    }
  }
  return work;
}

/** The same reset asked twice is one reset: Temporal dedupes a reset by its request id. */
export function resetRequestId(runId: string, resetEventId: number): string {
  const hex = createHash('sha256').update(`threadline-repair:${runId}:${resetEventId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** A refusal to reset: the command says why and exits 1, having changed nothing. */
export class CannotRepair extends Error {}

export const repairCommand: Command = {
  summary:
    'Get a thread going again whose running execution no longer replays: reset it to the last workflow task before the divergence (a plan; --yes resets).',
  usage: 'RESOURCE/THREAD [--yes] [--event N] [--bundle FILE] [--json]',
  options: {
    yes: { type: 'boolean' },
    event: { type: 'string' },
    bundle: { type: 'string' },
    json: { type: 'boolean' },
    ...threadOptions,
  },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--yes': 'Reset. Without it the command prints what it would do and changes nothing.',
    '--event <id>':
      'Reset to this WorkflowTaskCompleted event instead of the last one before the divergence (its prefix must replay).',
    '--bundle <file>':
      'Replay against this workflow bundle instead of bundling the workflow code of this installation.',
    '--json': '{ workflowId, runId, divergence, resetEventId, redone, reset, newRunId }.',
  },
  examples: [
    'threadline history repair user-42/support',
    'threadline history repair user-42/support --yes',
    'threadline history repair user-42/support --event 51 --yes',
  ],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    const eventOption = context.values.event as string | undefined;
    if (eventOption !== undefined && !/^[1-9]\d*$/.test(eventOption)) {
      throw new UsageError(`--event takes an event id (a whole number ≥ 1), not "${eventOption}".`);
    }
    const bundle = bundleOption(context);
    const yes = context.values.yes === true;
    try {
      return await withSession(context.env, async ({ temporal, settings }) => {
        const plan = await planRepair(temporal, target, settings.temporal.namespace, {
          bundle,
          resetEventId: eventOption === undefined ? undefined : Number(eventOption),
        });
        if (!plan) {
          context.out(
            context.values.json
              ? json({ workflowId: threadKey(target.resourceId, target.threadId), divergence: null, reset: false })
              : `${formatThreadName(target)}: its running execution replays against this code; it is not stuck on a divergence, nothing to reset. (A thread whose tasks fail for another reason: \`temporal workflow describe\` shows the pending task's last failure.)`,
          );
          return EXIT.ok;
        }
        if (!yes) {
          context.out(context.values.json ? json({ ...plan, reset: false }) : describePlan(target, plan, false));
          return EXIT.ok;
        }
        const newRunId = await resetThread(temporal, settings.temporal.namespace, plan);
        context.out(
          context.values.json
            ? json({ ...plan, reset: true, newRunId })
            : `${describePlan(target, plan, true)}\nReset: the thread goes on in run ${newRunId}.`,
        );
        return EXIT.ok;
      });
    } catch (err) {
      if (!(err instanceof CannotRepair)) throw err;
      context.err(err.message);
      return EXIT.failure;
    }
  },
};

/** What the repair would do, or null when the running execution replays (no `--event`: nothing to reset). */
async function planRepair(
  temporal: Client,
  target: ThreadTarget,
  namespace: string,
  options: { bundle?: string; resetEventId?: number },
): Promise<RepairPlan | null> {
  const { WorkflowNotFoundError } = await import('@temporalio/client');
  const workflowId = threadKey(target.resourceId, target.threadId);
  const name = formatThreadName(target);
  let description;
  try {
    description = await temporal.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new CannotRepair(`No thread ${name} in namespace "${namespace}".`);
    throw err;
  }
  if (description.status.name !== 'RUNNING') {
    throw new CannotRepair(
      `${name} is not running (its latest execution is ${description.status.name}): only a running execution can be stuck.`,
    );
  }
  const { runId } = description;
  const { events } = await readExecutionHistory(temporal.workflow, workflowId, runId);
  const replay = await makeReplayer(workflowId, options.bundle);
  const error = await replay(events);
  const divergence = error ? await locateDivergence(events, error, replay) : null;
  if (!divergence && options.resetEventId === undefined) return null;

  let resetEventId = options.resetEventId;
  if (resetEventId === undefined) {
    resetEventId = lastTaskCompletedBefore(events, divergence!.eventId);
    if (resetEventId === undefined) {
      throw new CannotRepair(
        `${name}: run ${runId} diverges at event ${divergence!.eventId} (${divergence!.eventType}), in its first workflow task: there is no earlier task to reset to. ` +
          'Terminate the thread (`temporal workflow terminate`) and start it again.',
      );
    }
  } else {
    const chosen = events.find((event) => Number(event.eventId) === resetEventId);
    if (chosen?.eventType !== TASK_COMPLETED) {
      throw new CannotRepair(
        `${name}: event ${resetEventId} of run ${runId} is ${chosen ? eventTypeName(chosen.eventType) : 'not in its history'}, not a WorkflowTaskCompleted.`,
      );
    }
  }
  await checkKeptEventsReplay(replay, keptEvents(events, resetEventId), name, resetEventId);
  return { workflowId, runId, divergence, resetEventId, redone: redoneWork(events, resetEventId) };
}

/** A reset to a point the code cannot replay up to would leave the thread as stuck as before: refuse it. */
async function checkKeptEventsReplay(
  replay: ReplayEvents,
  kept: JsonEvent[],
  name: string,
  resetEventId: number,
): Promise<void> {
  const error = await replay(kept);
  if (!error) return;
  const divergence = await locateDivergence(kept, error, replay);
  throw new CannotRepair(
    `${name}: resetting to event ${resetEventId} would not help: the events it keeps diverge already, at event ${divergence.eventId} (${divergence.eventType}): ${divergence.message}`,
  );
}

/** Resets the planned run; refuses (`CannotRepair`) when it is no longer the thread's current, running one. */
export async function resetThread(temporal: Client, namespace: string, plan: RepairPlan): Promise<string> {
  const { default: Long } = await import('long');
  // A reset names the run it resets and terminates whichever run is current: if another one began since the plan
  // (someone reset it meanwhile), resetting the planned run would throw that one's work away.
  const current = await temporal.workflow.getHandle(plan.workflowId).describe();
  if (current.runId !== plan.runId || current.status.name !== 'RUNNING') {
    throw new CannotRepair(
      `${plan.workflowId}: its current run is now ${current.runId} (${current.status.name}), not the run ${plan.runId} just checked: nothing reset. Run the command again.`,
    );
  }
  const reason = plan.divergence
    ? `threadline history repair: replay diverges at event ${plan.divergence.eventId} (${plan.divergence.eventType})`
    : `threadline history repair: reset to event ${plan.resetEventId}`;
  const response = await temporal.workflowService.resetWorkflowExecution({
    namespace,
    workflowExecution: { workflowId: plan.workflowId, runId: plan.runId },
    reason,
    workflowTaskFinishEventId: Long.fromNumber(plan.resetEventId),
    requestId: resetRequestId(plan.runId, plan.resetEventId),
    identity: 'threadline history repair',
    // Signals and updates accepted after the reset point are reapplied (the server's default, said here).
    resetReapplyExcludeTypes: [],
  });
  return response.runId ?? '';
}

function describePlan(target: ThreadTarget, plan: RepairPlan, done: boolean): string {
  const { redone } = plan;
  const lines = [
    `Thread ${formatThreadName(target)}, run ${plan.runId}:`,
    plan.divergence
      ? `  diverges at event ${plan.divergence.eventId} (${plan.divergence.eventType}${plan.divergence.name ? ` ${plan.divergence.name}` : ''}): ${plan.divergence.message}`
      : '  replays against this code (reset asked for with --event)',
    `  ${done ? 'was reset' : 'resets'} to event ${plan.resetEventId} (WorkflowTaskCompleted): the new run keeps events 1-${plan.resetEventId - 1}, which replay, and this code redoes that task.`,
    `  Redone after it: ${redone.updates} accepted update(s) and ${redone.signals} signal(s), reapplied by Temporal; ` +
      `${redone.steps} model step(s) run again (the provider is called again) and ${redone.otherActivities} other activit${redone.otherActivities === 1 ? 'y' : 'ies'}.`,
  ];
  if (!done) lines.push('Nothing changed. Run again with --yes to reset.');
  return lines.join('\n');
}
