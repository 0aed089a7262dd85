/**
 * A thread's steps, read from its history chain without replaying it: each `runStep` activity the workflow scheduled
 * is one step, numbered across runs and continue-as-new as the thread numbers them (`stepKey`), with its outcome.
 */
import type { StepListing, StepStatus } from '../protocol/time-travel';
import { jsonPayloadValue, type ChainExecution } from './history-chain';

const STEP_ACTIVITY = 'runStep';

const outcomes: Record<string, { attributes: string; status: StepStatus }> = {
  EVENT_TYPE_ACTIVITY_TASK_COMPLETED: { attributes: 'activityTaskCompletedEventAttributes', status: 'completed' },
  EVENT_TYPE_ACTIVITY_TASK_FAILED: { attributes: 'activityTaskFailedEventAttributes', status: 'failed' },
  EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: { attributes: 'activityTaskTimedOutEventAttributes', status: 'failed' },
  EVENT_TYPE_ACTIVITY_TASK_CANCELED: { attributes: 'activityTaskCanceledEventAttributes', status: 'cancelled' },
};

/** The events that close an execution (an update's `…_UPDATE_COMPLETED` does not). */
const CLOSE_EVENTS = new Set(
  ['COMPLETED', 'FAILED', 'TIMED_OUT', 'CANCELED', 'TERMINATED', 'CONTINUED_AS_NEW'].map(
    (end) => `EVENT_TYPE_WORKFLOW_EXECUTION_${end}`,
  ),
);

/** What a step's activity input says about it (the fields every version of the input has carried). */
interface StepInputFields {
  runId?: unknown;
  agentId?: unknown;
  stepNumber?: unknown;
  stepKey?: unknown;
}

/**
 * Every step of the chain, oldest first. A step's number is its `stepKey` when its input can be read, else counted:
 * the workflow plans exactly one step per `runStep` it schedules, from the `stepSeq` the chain started with (a fork
 * starts past 0).
 */
export function listSteps(chain: readonly ChainExecution[]): StepListing[] {
  const steps: StepListing[] = [];
  let counted = startingStepSeq(chain[0]);
  for (const execution of chain) {
    const { events } = execution.history;
    const outcome = new Map<string, StepStatus>();
    for (const event of events) {
      const kind = outcomes[event.eventType];
      if (!kind) continue;
      const scheduled = (event[kind.attributes] as { scheduledEventId?: string } | undefined)?.scheduledEventId;
      if (scheduled !== undefined) outcome.set(scheduled, kind.status);
    }
    const closed = events.some((e) => CLOSE_EVENTS.has(e.eventType));
    for (const event of events) {
      if (event.eventType !== 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED') continue;
      const attributes = event.activityTaskScheduledEventAttributes as
        { activityType?: { name?: string }; input?: { payloads?: unknown[] } } | undefined;
      if (attributes?.activityType?.name !== STEP_ACTIVITY) continue;
      counted += 1;
      const input = (jsonPayloadValue(attributes.input?.payloads?.[0]) ?? {}) as StepInputFields;
      const summary = String(jsonPayloadValue((event.userMetadata as { summary?: unknown })?.summary) ?? '');
      const fromSummary = /^step (\d+) · (.*)$/.exec(summary);
      const keyed = typeof input.stepKey === 'string' && /^\d+$/.test(input.stepKey) ? Number(input.stepKey) : null;
      steps.push({
        step: keyed ?? counted,
        runId: typeof input.runId === 'string' ? input.runId : '',
        stepNumber: typeof input.stepNumber === 'number' ? input.stepNumber : Number(fromSummary?.[1] ?? 0),
        agentId: typeof input.agentId === 'string' ? input.agentId : (fromSummary?.[2] ?? ''),
        // Scheduled but never finished: running, unless the execution closed meanwhile (terminated, say).
        status: outcome.get(event.eventId) ?? (closed ? 'cancelled' : 'running'),
        ...(typeof event.eventTime === 'string' ? { startedAt: event.eventTime } : {}),
        summary,
        execution: execution.runId,
      });
      if (keyed !== null) counted = keyed;
    }
  }
  return steps;
}

/** The `stepSeq` of the snapshot the chain's first execution started with (a fork's), else 0. */
function startingStepSeq(first: ChainExecution | undefined): number {
  const started = first?.history.events[0]?.workflowExecutionStartedEventAttributes as
    { input?: { payloads?: unknown[] } } | undefined;
  const args = jsonPayloadValue(started?.input?.payloads?.[0]) as { snapshot?: { stepSeq?: unknown } } | undefined;
  const seq = args?.snapshot?.stepSeq;
  return typeof seq === 'number' ? seq : 0;
}
