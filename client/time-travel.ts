/**
 * Time travel from a client: a thread's steps (read from its history here), a step's prompt and forks (computed by a
 * worker of the thread's task queue, where the agents and the workflow code are: the `threadlineInspectStep` workflow,
 * which reads the thread's history and writes nothing to it).
 */
import { randomUUID } from 'node:crypto';
import {
  ActivityFailure,
  TimeoutFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { ConflictError, NotFoundError, ThreadlineError, ValidationError } from '../protocol/errors';
import { threadKey } from '../protocol/ids';
import { threadTargetSchema, describeZodError, type ThreadTarget } from '../protocol/schemas';
import { keywordValue, resourceSearchAttribute } from '../protocol/search-attributes';
import { threadDetails, threadSummary } from '../protocol/summaries';
import { THREAD_WORKFLOW_TYPE } from '../protocol/thread-config';
import { threadStateQuery } from '../protocol/definitions';
import {
  INSPECT_WORKFLOW_TYPE,
  inspectionFailures,
  type ForkRequest,
  type InspectionOutcome,
  type InspectionRequest,
  type StepList,
  type StepPrompt,
} from '../protocol/time-travel';
import type { ThreadView } from '../protocol/views';
import { readHistoryChain } from './history-chain';
import { listSteps } from './steps';

/** How long an inspection may take, the first one on a worker included (it bundles the workflow code for replays). */
const INSPECTION_TIMEOUT = '3 minutes';

/** The thread's steps, oldest first; `null` when the thread does not exist. */
export async function listThreadSteps(temporal: Client, target: ThreadTarget): Promise<StepList | null> {
  try {
    return {
      steps: listSteps(await readHistoryChain(temporal.workflow, threadKey(target.resourceId, target.threadId))),
    };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
}

/** What the model received at step `step` (thread-wide), byte for byte. Unknown thread or step → `NotFoundError`. */
export async function inspectThreadStep(temporal: Client, target: ThreadTarget, step: number): Promise<StepPrompt> {
  checkStep(step, 'step');
  const { outcome } = await runInspection(temporal, target, { ...target, step });
  if (!('prompt' in outcome)) throw new ThreadlineError('The inspection answered without a prompt.');
  return outcome.prompt;
}

/**
 * Starts `request.to`, a new thread whose state is `source`'s as it stood before step `atStep`: it re-runs that step
 * at once (with `agentId` when given). Answers the fork's view. A `to` that exists → `ConflictError`.
 */
export async function forkThread(temporal: Client, source: ThreadTarget, request: ForkRequest): Promise<ThreadView> {
  checkStep(request.atStep, 'atStep');
  const parsed = threadTargetSchema.safeParse(request.to);
  if (!parsed.success) throw new ValidationError(`Invalid fork target: ${describeZodError(parsed.error)}`);
  const to = { resourceId: parsed.data.resourceId, threadId: parsed.data.threadId };
  const workflowId = threadKey(to.resourceId, to.threadId);
  if (await exists(temporal, workflowId)) throw forkTargetExists(to);
  const { outcome, taskQueue } = await runInspection(temporal, source, {
    ...source,
    step: request.atStep,
    fork: { to, ...(request.agentId !== undefined ? { agentId: request.agentId } : {}) },
  });
  if (!('fork' in outcome)) throw new ThreadlineError('The inspection answered without a fork.');
  try {
    await temporal.workflow.start(THREAD_WORKFLOW_TYPE, {
      workflowId,
      taskQueue,
      args: [outcome.fork.args],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [{ key: resourceSearchAttribute, value: keywordValue(to.resourceId) }],
      staticSummary: threadSummary(to),
      staticDetails: threadDetails(to),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw forkTargetExists(to, err);
    throw err;
  }
  return temporal.workflow.getHandle(workflowId).query(threadStateQuery);
}

/** Runs `threadlineInspectStep` on the thread's task queue and maps its refusals to client errors. */
async function runInspection(
  temporal: Client,
  target: ThreadTarget,
  request: InspectionRequest,
): Promise<{ outcome: Exclude<InspectionOutcome, { refused: unknown }>; taskQueue: string }> {
  let taskQueue: string;
  try {
    taskQueue = (await temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId)).describe()).taskQueue;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}.`, { cause: err });
    }
    throw err;
  }
  let outcome: InspectionOutcome;
  try {
    outcome = (await temporal.workflow.execute(INSPECT_WORKFLOW_TYPE, {
      workflowId: `threadline-inspect-${randomUUID()}`,
      taskQueue,
      args: [request],
      workflowExecutionTimeout: INSPECTION_TIMEOUT,
      staticSummary: `inspect step ${request.step} of ${target.resourceId}/${target.threadId}`,
    })) as InspectionOutcome;
  } catch (err) {
    throw inspectionError(err, taskQueue);
  }
  if ('refused' in outcome) {
    const { type, message } = outcome.refused;
    if (type === inspectionFailures.notFound) throw new NotFoundError(message);
    if (type === inspectionFailures.invalid) throw new ValidationError(message);
    throw new ThreadlineError(message);
  }
  return { outcome, taskQueue };
}

function inspectionError(err: unknown, taskQueue: string): Error {
  if (!(err instanceof WorkflowFailedError)) return err as Error;
  const cause = err.cause instanceof ActivityFailure ? err.cause.cause : err.cause;
  if (cause instanceof TimeoutFailure) {
    return new ThreadlineError(
      `No worker answered the inspection within ${INSPECTION_TIMEOUT}: is a Threadline worker polling task queue "${taskQueue}"?`,
      { cause: err },
    );
  }
  return new ThreadlineError(`The inspection failed: ${(cause ?? err).message}`, { cause: err });
}

async function exists(temporal: Client, workflowId: string): Promise<boolean> {
  try {
    await temporal.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

function forkTargetExists(to: ThreadTarget, cause?: unknown): ConflictError {
  return new ConflictError(
    `Thread ${to.resourceId}/${to.threadId} exists already: fork into a thread id nobody used.`,
    cause ? { cause } : undefined,
  );
}

function checkStep(step: number, field: string): void {
  if (!Number.isInteger(step) || step < 1) {
    throw new ValidationError(
      `Invalid ${field}: ${String(step)}. Steps are numbered from 1 (\`listSteps\` lists them).`,
    );
  }
}
