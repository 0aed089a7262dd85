/**
 * Time travel: a thread's steps, what the model received at one of them, and forks from before one. "Step N" is the
 * thread-wide step key (`stepKey`: the thread's N-th model call, counted across runs and continue-as-new), not the
 * step number inside a run. Shared by the worker that answers (worker/inspect.ts), the clients and the gateway.
 */
import type { ModelMessage } from 'ai';
import type { ThreadTarget } from './schemas';

export type StepStatus = 'completed' | 'failed' | 'cancelled' | 'running';

/** One model call of a thread, as its history records it. */
export interface StepListing {
  /** The thread-wide step number (`stepKey`): what `inspect --step` and `fork --at-step` take. */
  step: number;
  /** The Threadline run the step belongs to. */
  runId: string;
  /** The step's number inside its run (from 1). */
  stepNumber: number;
  agentId: string;
  status: StepStatus;
  /** When the step activity was scheduled (ISO 8601). */
  startedAt?: string;
  /** The activity's summary in the Temporal UI: `step 2 · support-agent`. */
  summary: string;
  /** The Temporal run (execution of the thread's chain) that holds the step. */
  execution: string;
}

export interface StepList {
  steps: StepListing[];
}

/** Exactly what the model received at one step, rebuilt by replaying the thread's history on a worker. */
export interface StepPrompt {
  step: number;
  runId: string;
  stepNumber: number;
  agentId: string;
  status: StepStatus;
  /** The Temporal run that holds the step. */
  execution: string;
  /** The model as the agent names it (`openai/gpt-4o-mini`), or the model object's `provider/modelId`. */
  model: string;
  system: string;
  /** The tools offered, by name: description and JSON schema of the input. */
  tools: Record<string, { description?: string; inputSchema: unknown }>;
  /** The AI SDK model messages: the window, the step's transient inputs, the signals its processors added. */
  messages: ModelMessage[];
  /** The run's model settings and tool choice, when it has any. */
  settings?: Record<string, unknown>;
  /**
   * The provider request: its URL and its body, byte for byte. Null when the model is not the built-in OpenAI
   * provider (the demo model sends nothing; a provider of your own cannot be asked without calling it).
   */
  request: { url: string; body: string } | null;
  /**
   * False when part of the prompt is not in the history: the step did not complete, so the signals its processors
   * added (returned with its result) are unknown and missing from `messages`.
   */
  complete: boolean;
  /** Why `request` is null or the prompt incomplete. */
  notes: string[];
}

/** Starts a new thread whose state is the source's as it stood before step `atStep`. */
export interface ForkRequest {
  atStep: number;
  to: ThreadTarget;
  /** Re-run step `atStep` with this agent (other instructions or another model); default: the step's own agent. */
  agentId?: string;
}

/** What the inspection workflow is asked: a step's prompt, or the state to fork from it. */
export interface InspectionRequest extends ThreadTarget {
  step: number;
  fork?: Omit<ForkRequest, 'atStep'>;
}

/** The fork's workflow arguments (`ThreadWorkflowArgs`), built on the worker from the replayed state. */
export interface ForkStart {
  args: { resourceId: string; threadId: string; config?: unknown; snapshot: unknown };
}

/** The short workflow that runs an inspection on a worker of the thread's task queue (no effect on the thread). */
export const INSPECT_WORKFLOW_TYPE = 'threadlineInspectStep';

/** Why an inspection cannot be answered. */
export const inspectionFailures = {
  /** No such step in the thread's history (or no such thread). */
  notFound: 'StepNotFound',
  /** The request cannot be served (an agent this worker does not host). */
  invalid: 'InvalidInspection',
  /** The worker's workflow code does not replay the history that holds the step. */
  replay: 'InspectionReplayFailed',
} as const;

export type InspectionFailureType = (typeof inspectionFailures)[keyof typeof inspectionFailures];

/** What the inspection workflow answers: the prompt, the fork's start, or why neither can be had. */
export type InspectionOutcome =
  { prompt: StepPrompt } | { fork: ForkStart } | { refused: { type: InspectionFailureType; message: string } };
