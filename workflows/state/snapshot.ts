/**
 * The thread as plain data: what it carries across continue-as-new, and the shapes its parts share. One snapshot
 * object is shared by every part of the thread's state; each changes only its own fields.
 */
import type { ConfiguredDecision, DeliveryDecision, DeliveryPolicyConfig } from '../../protocol/agent-profile';
import type { EventDraft } from '../../protocol/events';
import type { Lane } from '../../protocol/lanes';
import type { ContextWindowConfig, StoredMessage, ToolCall } from '../../protocol/messages';
import type { InputResult, StreamOptions, ThreadInput } from '../../protocol/schemas';
import type { ApprovalStatus, NotificationRecord } from '../../protocol/views';

/** An accepted input waiting to enter the model's context, attributes already merged for the branch taken. */
export interface PendingInput {
  input: ThreadInput;
  acceptedAt: number;
}

export interface RunState {
  runId: string;
  agentId: string;
  stepNumber: number;
  pending: PendingInput[];
  streamOptions?: StreamOptions;
  startedAt: number;
  /** An `interrupt` input arrived: cancel the step in flight. */
  interruptRequested: boolean;
  /** `abortThread` arrived: cancel the model call and tools, end the run. */
  abortRequested?: boolean;
  /** The step's tool calls, parked until every call that needs approval is decided (behaviour §2.4). */
  toolWait?: ToolWait;
}

export interface ParkedToolCall {
  call: ToolCall;
  /** Absent for calls that need no approval: they run with the others once every approval is decided. */
  approval?: {
    status: ApprovalStatus;
    requestedAt: number;
    expiresAt?: number;
    declineReason?: string;
    resumeData?: unknown;
  };
}

export interface ToolWait {
  stepKey: string;
  stepNumber: number;
  calls: ParkedToolCall[];
}

export interface QueuedRun {
  runId: string;
  agentId: string;
  inputs: PendingInput[];
  streamOptions?: StreamOptions;
}

/** A workflow-decided event before the bus gives it an id; the key makes its publication idempotent. */
export type OutboxEvent = EventDraft;

/** Everything a thread carries across continue-as-new. */
export interface ThreadSnapshot {
  version: 1;
  resourceId: string;
  threadId: string;
  messages: StoredMessage[];
  run: RunState | null;
  queue: QueuedRun[];
  outbox: OutboxEvent[];
  remembered: [string, InputResult][];
  /** Notification sends remembered for idempotency, compactly: record ids and actions. */
  rememberedBatches: [string, RememberedBatch][];
  /** Records that left the inbox beyond its bound, waiting for the archive activity. */
  evicted: NotificationRecord[];
  /** The last notification record number: record ids are `n1`, `n2`, … per thread (short, for prompts and state). */
  notificationSeq: number;
  eventSeq: number;
  stepSeq: number;
  runsCompleted: number;
  /** State lanes by id. */
  lanes: Record<string, Lane>;
  /** Tool call ids whose approval was decided (the newest few hundred): deciding one again is a conflict. */
  decidedToolCalls: string[];
  /** The notification inbox. */
  inbox: NotificationRecord[];
  /** When the thread last accepted an input (a message, a signal, a delivered notification); null before the first. */
  lastInputAt: number | null;
}

/** A notification send as remembered for idempotency: small, so a long inbox history fits continue-as-new. */
export interface RememberedBatch {
  ids: string[];
  actions: DeliveryDecision['action'][];
  coalesced: (0 | 1)[];
}

/** The agent's notification settings the thread applies (plain data from its profile). */
export interface NotificationSettings {
  policy?: DeliveryPolicyConfig;
  digestWindowMs?: number;
  /** Per notification, what the agent's `decide()` answered (null: no opinion). */
  decided?: (ConfiguredDecision | null)[];
}

/** Time and ids, injected: the workflow passes its deterministic clock and `uuid4`, tests a fake. */
export interface ThreadClock {
  now(): number;
  newId(): string;
}

/**
 * Changes of routing that old histories did not make, each behind its `patched()` gate in the workflow: true where the
 * thread runs the new code (live, and when replaying a history that recorded the marker), false when replaying one
 * that predates it. Asked only where old and new code disagree, so the marker is recorded only then.
 */
export interface ThreadGates {
  /**
   * An input that `persist`s or `discard`s whatever the thread's state (protocol/routing.ts) does so also while
   * another agent's run is active (it was queued behind it) and while the run has `maxPendingInputs` waiting (it
   * was refused): so the client can answer it without asking the thread.
   */
  stateIndependentActions(): boolean;
  /**
   * An input (or notification) nested deeper than the thread's `maxInputDepth` is refused: an update's validator
   * refuses it, a signal is dropped with a log line. Histories from before took such a signal from a raw sender.
   */
  boundedInputDepth(): boolean;
}

/** Every gate open: the current behaviour (unit tests, and update validators, which Temporal never replays). */
export const openGates: ThreadGates = { stateIndependentActions: () => true, boundedInputDepth: () => true };

/** How the parts that produce inputs (state lanes, notifications, the inbox tool) hand them to the thread. */
export interface InputRouter {
  /** Throws the refusal the thread would answer, changing nothing. */
  validate(input: ThreadInput): void;
  /** Routes by the thread's state (deliver, queue, interrupt, wake, persist, discard), without remembering the id. */
  route(input: ThreadInput): InputResult;
}

/** What the main loop knows about the run's agent when it plans a step. */
export interface StepOptions {
  contextWindow?: Partial<ContextWindowConfig>;
  /** Lane ids the agent's processors own: they refresh those themselves. */
  ownedLanes?: readonly string[];
}

export function emptySnapshot(resourceId: string, threadId: string): ThreadSnapshot {
  return {
    version: 1,
    resourceId,
    threadId,
    messages: [],
    run: null,
    queue: [],
    outbox: [],
    remembered: [],
    rememberedBatches: [],
    evicted: [],
    notificationSeq: 0,
    eventSeq: 0,
    stepSeq: 0,
    runsCompleted: 0,
    lanes: {},
    decidedToolCalls: [],
    inbox: [],
    lastInputAt: null,
  };
}
