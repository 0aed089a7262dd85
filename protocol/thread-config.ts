/**
 * A thread's settings: limits, timeouts, the default context window. Passed when the thread's workflow starts and
 * carried across continue-as-new, so every execution of a thread runs with the settings it was created with.
 */
import type { AgentProfile } from './agent-profile';
import type { ContextWindowConfig } from './messages';
import { defaultLimits } from './vocabulary';

export interface ThreadConfig {
  /** Continue-as-new once history reaches this many events (Temporal also suggests it at 4,096 / 4 MB). */
  continueAsNewAfterEvents: number;
  /** Updates and signals per execution before continuing as new (Temporal caps updates at 2,000 per run). */
  maxUpdatesPerExecution: number;
  maxSignalsPerExecution: number;
  /** Input ids remembered for idempotency (oldest forgotten first). */
  rememberInputs: number;
  /**
   * One input's size as JSON (a message, signal or state; each notification of a send). Clients refuse bigger ones
   * first (THREADLINE_MAX_INPUT_BYTES, which the client also starts threads with); the thread refuses them from any
   * sender, so a raw Temporal client cannot store what the next step could not carry (Temporal caps a payload at 2 MB).
   */
  maxInputBytes: number;
  /**
   * Levels of arrays and objects in one input (a message, signal or state; each notification of a send; an approval's
   * `resumeData`). Clients refuse deeper ones first (`connect({ limits: { maxInputDepth } })`, the gateway's body
   * bound); the thread refuses them from any sender (`InvalidInput`, a signal dropped with a log line), so a raw
   * Temporal client cannot store a value deep enough to overflow the stack of whatever serializes it next.
   */
  maxInputDepth: number;
  maxQueueLength: number;
  maxPendingInputs: number;
  /** Stored conversation messages kept in the thread (oldest dropped first). */
  maxStoredMessages: number;
  /**
   * Their size in all, as JSON (oldest dropped first; the newest always stays): the stored conversation travels in
   * the continue-as-new payload, which Temporal caps at 2 MB.
   */
  maxStoredBytes: number;
  /** Model steps per run before it stops asking the model (tool loops); pending user inputs still get answered. */
  maxStepsPerRun: number;
  /** How long a tool call waits for approval before it is declined (undefined: forever). A tool may set its own. */
  approvalTimeoutMs?: number;
  /** Notification sends remembered for idempotency (oldest forgotten first). */
  rememberNotificationBatches: number;
  /** Notification records kept per thread; beyond it the oldest closed ones leave (pending ones never do). */
  maxInboxRecords: number;
  /** Failed deliveries of one notification before it becomes `failed` (behaviour §4.3). */
  maxDeliveryAttempts: number;
  /** First retry delay after a failed delivery; doubles per attempt (at most a minute). */
  notificationRetryMs: number;
  /** When summaries go out, unless the agent sets `notifications.digestWindow`. */
  digestWindowMs: number;
  /**
   * A newer `ThreadlineLastInputAt` search attribute alone is written once it moved by this much (each write is a
   * history event); with any other change of the thread's attributes it is exact.
   */
  lastInputResolutionMs: number;
  /** State lanes per thread; a state for a new lane beyond this is refused. */
  maxLanes: number;
  /** Deltas kept per lane since its latest snapshot (the oldest dropped first: send a snapshot now and then). */
  maxLaneDeltas: number;
  /** The window the model sees, unless the agent sets its own (`defineAgent({ contextWindow })`). */
  contextWindow: ContextWindowConfig;
  step: { heartbeatTimeoutMs: number; startToCloseTimeoutMs: number; maxAttempts: number; initialRetryMs: number };
  tool: { startToCloseTimeoutMs: number; maxAttempts: number };
}

export const defaultThreadConfig: ThreadConfig = {
  continueAsNewAfterEvents: 4_000,
  maxUpdatesPerExecution: 1_000,
  maxSignalsPerExecution: 5_000,
  rememberInputs: 2_000,
  maxInputBytes: defaultLimits.maxInputBytes,
  maxInputDepth: defaultLimits.maxInputDepth,
  maxQueueLength: defaultLimits.maxQueueLength,
  maxPendingInputs: defaultLimits.maxPendingInputs,
  maxStoredMessages: 2_000,
  maxStoredBytes: 1024 * 1024,
  maxStepsPerRun: 25,
  maxLanes: 64,
  maxInboxRecords: 1_000,
  rememberNotificationBatches: 200,
  maxDeliveryAttempts: 5,
  notificationRetryMs: 1_000,
  digestWindowMs: 60_000,
  maxLaneDeltas: 50,
  lastInputResolutionMs: 60_000,
  contextWindow: { maxMessages: 100, maxBytes: 512 * 1024 },
  step: { heartbeatTimeoutMs: 10_000, startToCloseTimeoutMs: 10 * 60_000, maxAttempts: 5, initialRetryMs: 1_000 },
  tool: { startToCloseTimeoutMs: 5 * 60_000, maxAttempts: 3 },
};

export type ThreadConfigInput = Partial<Omit<ThreadConfig, 'contextWindow' | 'step' | 'tool'>> & {
  contextWindow?: Partial<ContextWindowConfig>;
  step?: Partial<ThreadConfig['step']>;
  tool?: Partial<ThreadConfig['tool']>;
};

export function resolveThreadConfig(input: ThreadConfigInput | undefined): ThreadConfig {
  const d = defaultThreadConfig;
  return {
    ...d,
    ...input,
    contextWindow: { ...d.contextWindow, ...input?.contextWindow },
    step: { ...d.step, ...input?.step },
    tool: { ...d.tool, ...input?.tool },
  };
}

/** The thread workflow's input: the thread, its settings, and (after continue-as-new) the state it carries. */
export interface ThreadWorkflowArgs<Snapshot = unknown> {
  resourceId: string;
  threadId: string;
  config?: ThreadConfigInput;
  /** Set by continue-as-new: the thread as the previous execution left it. */
  snapshot?: Snapshot;
  /**
   * The profiles of agents the starting client already knows (workers announce them: `AgentSummary.profile`), so the
   * first step needs no round trip to a worker to ask. Used by this execution only; an agent missing here is asked.
   */
  profiles?: Record<string, AgentProfile>;
}

/** The workflow type name every client starts threads with. */
export const THREAD_WORKFLOW_TYPE = 'threadWorkflow';
