/**
 * The thread as data: what it has accepted and what it will do next. Handlers call `accept` (record and decide the
 * input's action); the workflow's main loop calls the rest. No Temporal imports, no clock, no randomness: ids and
 * time are injected, so this is unit-testable and replays deterministically.
 */
import {
  type InboxToolInput,
  type InputAction,
  type InputResult,
  type NotificationBatch,
  type NotificationQuery,
  type NotificationStatusRequest,
  type StreamOptions,
  type ThreadInput,
} from '../protocol/schemas';
import { decideDelivery } from './delivery-policy';
import { type ConfiguredDecision, type DeliveryDecision, type DeliveryPolicyConfig } from '../protocol/agent-profile';
import {
  byPriority,
  coalesce,
  findCoalescable,
  inboxCounts,
  isClosed,
  newRecord,
  notificationAttributes,
  pageOf,
  summaryOf,
  unschedule,
  withoutBody,
} from './inbox';
import { type NotificationRecord, type RecordPage } from '../protocol/views';
import type { EventDraft, ThreadEventType } from '../protocol/events';
import type {
  AssistantMessage,
  ContextWindowConfig,
  InputMessage,
  ToolCall,
  StepResult,
  StoredMessage,
  ToolMessage,
  ToolResultPart,
} from '../protocol/messages';
import { mergeAttributes } from '../protocol/render';
import {
  isUnchanged,
  laneMessagesIn,
  laneView,
  nextVersion,
  recordState,
  refreshCopies,
  stateOf,
  windowHasSnapshot,
  type Lane,
} from '../protocol/lanes';
import type {
  AbortResult,
  ApprovalStatus,
  NotificationOutcome,
  NotificationSendResult,
  ThreadView,
  ToolApproval,
  ToolApprovalResult,
} from '../protocol/views';
import type { StepLane, StepPlan } from '../protocol/step';
import type { ThreadConfig } from '../protocol/thread-config';
import { ThreadRefusal } from '../protocol/failures';
import { echoPayload, echoType } from '../protocol/events';

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
  /** The step's tool calls, parked until every call that needs approval is decided (SPEC §2.4). */
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

export const DEFAULT_DECLINE_REASON = 'Tool call was not approved by the user';

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
  /** Notification sends remembered for idempotency, compactly: record ids and actions (absent before notifications). */
  rememberedBatches?: [string, RememberedBatch][];
  /** Records that left the inbox beyond its bound, waiting for the archive activity (absent when none). */
  evicted?: NotificationRecord[];
  /** The last notification record number: record ids are `n1`, `n2`, … per thread (short, for prompts and state). */
  notificationSeq?: number;
  eventSeq: number;
  stepSeq: number;
  runsCompleted: number;
  /** State lanes by id (absent in snapshots written before lanes existed). */
  lanes?: Record<string, Lane>;
  /** Tool call ids whose approval was decided (the newest few hundred): deciding one again is a conflict. */
  decidedToolCalls?: string[];
  /** The notification inbox (absent in snapshots written before it existed). */
  inbox?: NotificationRecord[];
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

export interface ThreadClock {
  now(): number;
  newId(): string;
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
    eventSeq: 0,
    stepSeq: 0,
    runsCompleted: 0,
  };
}

export class ThreadState {
  private readonly remembered: Map<string, InputResult>;
  private readonly rememberedBatches: Map<string, RememberedBatch>;
  /** Outbox events announcing a record, by record id, while they wait to be published (not part of the snapshot). */
  private readonly unpublishedRecordEvents = new Map<string, OutboxEvent>();

  constructor(
    private readonly s: ThreadSnapshot,
    readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
  ) {
    this.remembered = new Map(s.remembered);
    this.rememberedBatches = new Map(s.rememberedBatches ?? []);
  }

  get key(): { resourceId: string; threadId: string } {
    return { resourceId: this.s.resourceId, threadId: this.s.threadId };
  }

  get run(): RunState | null {
    return this.s.run;
  }

  get messages(): readonly StoredMessage[] {
    return this.s.messages;
  }

  get queue(): readonly QueuedRun[] {
    return this.s.queue;
  }

  get outboxSize(): number {
    return this.s.outbox.length;
  }

  isActive(): boolean {
    return this.s.run !== null;
  }

  /**
   * The main loop has something to do: a run to step (not one parked on approvals nobody decided yet), a queued run
   * to start, events to publish.
   */
  hasWork(): boolean {
    const { run } = this.s;
    if (this.s.outbox.length > 0) return true;
    if ((this.s.evicted?.length ?? 0) > 0 && (!run || this.isParked())) return true;
    if (!run) return this.s.queue.length > 0;
    return !this.isParked() || run.abortRequested === true;
  }

  /** The run waits for a human to approve or decline a tool call. */
  isParked(): boolean {
    return this.s.run?.toolWait?.calls.some((c) => c.approval?.status === 'waiting') === true;
  }

  /** The earliest approval deadline of the parked run (milliseconds since the epoch), if any has one. */
  approvalDeadline(): number | undefined {
    const deadlines = (this.s.run?.toolWait?.calls ?? [])
      .filter((c) => c.approval?.status === 'waiting' && c.approval.expiresAt !== undefined)
      .map((c) => c.approval!.expiresAt!);
    return deadlines.length > 0 ? Math.min(...deadlines) : undefined;
  }

  /**
   * Parks the step's tool calls when one needs approval: subscribers get `tool-call-approval` for each, and the run
   * stays active (deliver inputs wait for it; wakes for other agents queue). Returns whether it parked.
   */
  parkTools(plan: StepPlan, result: StepResult): boolean {
    const run = this.s.run;
    if (!run || !result.toolCalls.some((c) => c.approval)) return false;
    const now = this.clock.now();
    run.toolWait = {
      stepKey: plan.stepKey,
      stepNumber: plan.stepNumber,
      calls: result.toolCalls.map((call): ParkedToolCall => {
        if (!call.approval) return { call };
        const timeoutMs = call.approval.timeoutMs ?? this.config.approvalTimeoutMs;
        const approval: NonNullable<ParkedToolCall['approval']> = { status: 'waiting', requestedAt: now };
        if (timeoutMs !== undefined) approval.expiresAt = now + timeoutMs;
        return { call, approval };
      }),
    };
    for (const parked of run.toolWait.calls) {
      if (!parked.approval) continue;
      const { toolCallId, toolName, input } = parked.call;
      this.emit(
        'tool-call-approval',
        { toolCallId, toolName, args: input, status: 'waiting', expiresAt: parked.approval.expiresAt },
        run.runId,
      );
    }
    return true;
  }

  /** The update validator: throws `ToolCallNotFound` / `ToolCallDecided` without changing anything. */
  validateApproval(approval: ToolApproval): void {
    const parked = this.s.run?.toolWait?.calls.find((c) => c.call.toolCallId === approval.toolCallId);
    if (parked?.approval?.status === 'waiting') return;
    if (parked?.approval || this.s.decidedToolCalls?.includes(approval.toolCallId)) {
      throw new ThreadRefusal(
        'ToolCallDecided',
        `Tool call already decided: ${approval.toolCallId} was already approved or declined.`,
        { toolCallId: approval.toolCallId },
      );
    }
    throw new ThreadRefusal(
      'ToolCallNotFound',
      `Unknown tool call: ${approval.toolCallId}: no run of this thread waits for its approval.`,
      { toolCallId: approval.toolCallId },
    );
  }

  /** Records a human's decision; the main loop runs the tools once every approval of the step is decided. */
  decideApproval(approval: ToolApproval): ToolApprovalResult {
    this.validateApproval(approval);
    const run = this.s.run!;
    const parked = run.toolWait!.calls.find((c) => c.call.toolCallId === approval.toolCallId)!;
    const status = approval.approved ? 'approved' : 'declined';
    this.settleApproval(parked, status, approval.declineReason, approval.resumeData);
    return { accepted: true, toolCallId: approval.toolCallId, runId: run.runId, status };
  }

  /** Declines every waiting approval whose deadline passed (`now` from the workflow clock). */
  expireApprovals(): void {
    const now = this.clock.now();
    for (const parked of this.s.run?.toolWait?.calls ?? []) {
      const a = parked.approval;
      if (a?.status === 'waiting' && a.expiresAt !== undefined && a.expiresAt <= now) {
        this.settleApproval(parked, 'declined', 'Tool call approval timed out');
      }
    }
  }

  private settleApproval(
    parked: ParkedToolCall,
    status: 'approved' | 'declined',
    declineReason?: string,
    resumeData?: unknown,
  ): void {
    const a = parked.approval!;
    a.status = status;
    if (status === 'declined') a.declineReason = declineReason ?? DEFAULT_DECLINE_REASON;
    if (resumeData !== undefined) a.resumeData = resumeData;
    const decided = (this.s.decidedToolCalls ??= []);
    decided.push(parked.call.toolCallId);
    if (decided.length > 500) decided.splice(0, decided.length - 500);
    const { toolCallId, toolName, input } = parked.call;
    this.emit(
      'tool-call-approval',
      { toolCallId, toolName, args: input, status, ...(a.declineReason ? { declineReason: a.declineReason } : {}) },
      this.s.run!.runId,
    );
  }

  /** The parked calls, once every approval is decided: taken off the run for the main loop to execute. */
  takeDecidedTools(): ToolWait | null {
    const run = this.s.run;
    if (!run?.toolWait || this.isParked()) return null;
    const wait = run.toolWait;
    delete run.toolWait;
    return wait;
  }

  /**
   * Checks an input against the thread's limits without changing anything (the update validator, and the
   * signal handler before `accept`). Throws an `InputRejected` refusal that names the limit.
   */
  validate(input: ThreadInput): void {
    if (this.remembered.has(input.id)) return;
    const { run } = this.s;
    const lanes = this.s.lanes ?? {};
    if (input.state && isUnchanged(lanes[input.state.laneId], input.state)) {
      const version = lanes[input.state.laneId]!.tracking.version;
      throw new ThreadRefusal(
        'UnchangedState',
        `Unchanged state: lane "${input.state.laneId}" is at version ${version} with this cacheKey and mode.`,
        { laneId: input.state.laneId, version },
      );
    }
    if (input.state && !lanes[input.state.laneId] && Object.keys(lanes).length >= this.config.maxLanes) {
      throw new ThreadRefusal(
        'InputRejected',
        `The thread has ${this.config.maxLanes} state lanes; a state for lane "${input.state.laneId}" would add one. Reuse a lane id or raise maxLanes.`,
        { limit: 'maxLanes', value: this.config.maxLanes },
      );
    }
    if (input.delivery === 'queue' && run && this.s.queue.length >= this.config.maxQueueLength) {
      throw new ThreadRefusal(
        'InputRejected',
        `The thread's queue is full (${this.config.maxQueueLength} queued runs). Wait for a run to finish or raise maxQueueLength.`,
        { limit: 'maxQueueLength', value: this.config.maxQueueLength },
      );
    }
    if (input.delivery === 'send' && run && run.pending.length >= this.config.maxPendingInputs) {
      throw new ThreadRefusal(
        'InputRejected',
        `The active run has ${this.config.maxPendingInputs} inputs waiting for the next step. Wait or raise maxPendingInputs.`,
        { limit: 'maxPendingInputs', value: this.config.maxPendingInputs },
      );
    }
  }

  /** Records an input and decides what the thread does with it (SPEC §2.1, §2.2 behaviours). */
  accept(input: ThreadInput): InputResult {
    const previous = this.remembered.get(input.id);
    if (previous) return { ...previous, duplicate: true };
    const result = input.state ? this.acceptState(input) : this.route(input);
    this.remember(input.id, result);
    return result;
  }

  /**
   * A state signal (SPEC §3.1): skipped when the lane's latest state has the same cacheKey and mode; otherwise
   * routed like any signal, and the lane's tracking is committed only if the thread took it (not when discarded).
   */
  private acceptState(input: ThreadInput): InputResult {
    const state = input.state!;
    const lanes = (this.s.lanes ??= {});
    const lane = lanes[state.laneId];
    if (isUnchanged(lane, state)) {
      return {
        accepted: true,
        action: 'skipped',
        reason: 'unchanged',
        signalId: input.id,
        version: lane!.tracking.version,
      };
    }
    const version = nextVersion(lane, state);
    const stamped: ThreadInput = { ...input, metadata: { ...input.metadata, state: { ...state, version } } };
    const result = this.route(stamped);
    if (result.action === 'discard') return result;
    const at = this.clock.now();
    const accepted = toInputMessage({ input: stamped, acceptedAt: at }, result.runId);
    const next = recordState(lane, accepted, at, this.config.maxLaneDeltas);
    lanes[state.laneId] = next;
    this.emit('state-updated', { ...laneView(state.laneId, next), signalId: input.id, action: result.action });
    return { ...result, version };
  }

  private route(input: ThreadInput): InputResult {
    const { run } = this.s;
    const at = this.clock.now();
    if (run) {
      const attributes = mergeAttributes(input.attributes, input.ifActive?.attributes);
      const accepted: PendingInput = { input: { ...input, attributes }, acceptedAt: at };
      // A wake for another agent cannot join this agent's loop: it runs next.
      if (input.delivery === 'queue' || input.agentId !== run.agentId) {
        return this.result('queued', input.id, this.enqueue(accepted, input.ifIdle?.streamOptions).runId);
      }
      const behavior = input.ifActive?.behavior ?? 'deliver';
      if (behavior === 'persist') return this.persist(accepted);
      if (behavior === 'discard') return this.result('discard', input.id);
      run.pending.push(accepted);
      if (behavior === 'interrupt') {
        run.interruptRequested = true;
        return this.result('interrupt', input.id, run.runId);
      }
      return this.result('deliver', input.id, run.runId);
    }
    const attributes = mergeAttributes(input.attributes, input.ifIdle?.attributes);
    const accepted: PendingInput = { input: { ...input, attributes }, acceptedAt: at };
    const behavior = input.ifIdle?.behavior ?? 'wake';
    if (behavior === 'persist') return this.persist(accepted);
    if (behavior === 'discard') return this.result('discard', input.id);
    const started = this.startRun({
      runId: this.clock.newId(),
      agentId: input.agentId,
      inputs: [accepted],
      streamOptions: input.ifIdle?.streamOptions,
    });
    return this.result('wake', input.id, started.runId);
  }

  private result(action: InputAction, signalId: string, runId?: string): InputResult {
    return runId === undefined ? { accepted: true, action, signalId } : { accepted: true, action, runId, signalId };
  }

  private remember(id: string, result: InputResult): void {
    this.remembered.set(id, result);
    while (this.remembered.size > this.config.rememberInputs) {
      const oldest = this.remembered.keys().next().value as string;
      this.remembered.delete(oldest);
    }
  }

  private persist(accepted: PendingInput): InputResult {
    // A transient input exists only for the turn it joins: with nothing to join, it is dropped.
    if (accepted.input.transient) return this.result('discard', accepted.input.id);
    const message = this.store(accepted, undefined);
    this.emit(echoType(message), echoPayload(message, 'persist'));
    return this.result('persist', accepted.input.id);
  }

  private enqueue(accepted: PendingInput, streamOptions: StreamOptions | undefined): QueuedRun {
    const queued: QueuedRun = {
      runId: this.clock.newId(),
      agentId: accepted.input.agentId,
      inputs: [accepted],
      streamOptions,
    };
    this.s.queue.push(queued);
    this.emitQueue();
    return queued;
  }

  private startRun(queued: QueuedRun): RunState {
    const run: RunState = {
      runId: queued.runId,
      agentId: queued.agentId,
      stepNumber: 0,
      pending: queued.inputs,
      streamOptions: queued.streamOptions,
      startedAt: this.clock.now(),
      interruptRequested: false,
    };
    this.s.run = run;
    this.emit('start', { runId: run.runId, agentId: run.agentId }, run.runId);
    return run;
  }

  /**
   * `abortThread`: the active run stops (its model call and tools are cancelled by the main loop). Queued runs go
   * next, unless `clearPendingSignals`, which also drops inputs waiting for the run's next step.
   */
  requestAbort(clearPendingSignals: boolean): AbortResult {
    const cleared: string[] = [];
    const run = this.s.run;
    if (clearPendingSignals) {
      if (run) cleared.push(...run.pending.splice(0).map((p) => p.input.id));
      cleared.push(...this.s.queue.flatMap((q) => q.inputs.map((i) => i.input.id)));
      if (this.s.queue.length > 0) {
        this.s.queue = [];
        this.emitQueue();
      }
    }
    if (!run) return { aborted: false, clearedSignalIds: cleared };
    run.abortRequested = true;
    return { aborted: true, runId: run.runId, clearedSignalIds: cleared };
  }

  /** Ends the active run as aborted; inputs still pending for it start the next run (at the front of the queue). */
  abortRun(): void {
    const run = this.s.run;
    if (!run) return;
    // Parked tool calls get a result, so the conversation stays valid for the provider (every call answered).
    if (run.toolWait) {
      const results = run.toolWait.calls.map(({ call }): ToolResultPart => {
        const result: ToolResultPart = {
          type: 'tool-result',
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          output: `Tool ${call.toolName} did not run: the run was aborted`,
          isError: true,
        };
        this.emit('tool-result', result, run.runId);
        return result;
      });
      this.recordToolResults({ stepKey: run.toolWait.stepKey, runId: run.runId }, results);
      delete run.toolWait;
    }
    this.emit('abort', { runId: run.runId, steps: run.stepNumber }, run.runId);
    this.s.run = null;
    this.s.runsCompleted += 1;
    if (run.pending.length > 0) {
      this.s.queue.unshift({ runId: this.clock.newId(), agentId: run.agentId, inputs: run.pending });
      this.emitQueue();
    }
  }

  /** Removes queued runs that have not started; returns the input ids actually removed. */
  cancelQueued(signalIds: readonly string[]): string[] {
    const wanted = new Set(signalIds);
    const removed: string[] = [];
    this.s.queue = this.s.queue.filter((q) => {
      const ids = q.inputs.map((i) => i.input.id);
      if (!ids.some((id) => wanted.has(id))) return true;
      removed.push(...ids);
      return false;
    });
    if (removed.length > 0) this.emitQueue();
    return removed;
  }

  /** Starts the next queued run when idle. Returns whether one started. */
  startNextQueued(): boolean {
    if (this.s.run || this.s.queue.length === 0) return false;
    const next = this.s.queue.shift()!;
    this.startRun(next);
    this.emitQueue();
    return true;
  }

  /**
   * Moves the inputs accepted since the last step into the conversation, each as its own turn, echoed to
   * subscribers where it enters the model's context, and returns what the step activity needs.
   */
  planStep(options: StepOptions = {}): StepPlan {
    const run = this.s.run;
    if (!run) throw new Error('planStep called without an active run');
    const window = { ...this.config.contextWindow, ...options.contextWindow };
    const owned = new Set(options.ownedLanes ?? []);
    this.s.stepSeq += 1;
    this.refreshLanes(run, window, owned);
    const transient: InputMessage[] = [];
    for (const accepted of run.pending.splice(0)) {
      const message = toInputMessage(accepted, run.runId);
      if (accepted.input.transient) transient.push(message);
      else this.store(accepted, run.runId);
      this.emit(echoType(message), echoPayload(message, 'deliver'), run.runId);
    }
    run.interruptRequested = false;
    run.stepNumber += 1;
    const messages = selectWindow(this.s.messages, window);
    const lanes: StepLane[] = [];
    for (const [laneId, lane] of Object.entries(this.s.lanes ?? {})) {
      lane.tracking.activeCopies = laneMessagesIn(messages, laneId).length;
      if (!owned.has(laneId)) continue;
      const hasSnapshot = windowHasSnapshot(messages, laneId, lane);
      const stepLane: StepLane = { laneId, tracking: { ...lane.tracking }, hasSnapshot };
      if (!hasSnapshot && lane.lastSnapshot) {
        stepLane.lastSnapshot = lane.lastSnapshot;
        stepLane.deltasSinceSnapshot = lane.deltasSinceSnapshot;
      }
      lanes.push(stepLane);
    }
    const plan: StepPlan = {
      runId: run.runId,
      agentId: run.agentId,
      stepNumber: run.stepNumber,
      stepKey: `${this.s.stepSeq}`,
      messages,
      transient,
      preEvents: this.takeOutbox(),
      streamOptions: run.streamOptions,
    };
    if (lanes.length > 0) plan.lanes = lanes;
    return plan;
  }

  /**
   * The model always sees every lane's current state: a lane whose latest snapshot would fall outside this step's
   * window gets a copy of it (and of the deltas since) appended before the step's new inputs, at the same version.
   * Lanes a processor owns are left to it (`contextWindow.hasSnapshot` tells it to re-emit).
   */
  private refreshLanes(run: RunState, window: ContextWindowConfig, owned: ReadonlySet<string>): void {
    const lanes = Object.entries(this.s.lanes ?? {}).filter(([id, lane]) => !owned.has(id) && lane.lastSnapshot);
    if (lanes.length === 0) return;
    const upcoming = run.pending.filter((p) => !p.input.transient).map((p) => toInputMessage(p, run.runId));
    const seen = selectWindow([...this.s.messages, ...upcoming], window);
    for (const [laneId, lane] of lanes) {
      if (windowHasSnapshot(seen, laneId, lane)) continue;
      for (const copy of refreshCopies(lane, `${this.s.stepSeq}`, run.runId, this.clock.now())) {
        this.append(copy);
        this.emit(echoType(copy), { ...(echoPayload(copy, 'deliver') as object), refreshed: true }, run.runId);
      }
    }
  }

  /** Records a finished step's message. Returns the tool calls to run (none → the step ended the model's turn). */
  completeStep(plan: StepPlan, result: StepResult): void {
    for (const signal of result.signals ?? []) {
      this.append(signal);
      const state = stateOf(signal);
      if (!state || state.refreshOf) continue;
      // A processor-computed state (SPEC §3.2): the step already deduped and versioned it; record it.
      const lanes = (this.s.lanes ??= {});
      const next = recordState(lanes[state.laneId], signal, this.clock.now(), this.config.maxLaneDeltas);
      lanes[state.laneId] = next;
      this.emit(
        'state-updated',
        { ...laneView(state.laneId, next), signalId: signal.id, action: 'deliver' },
        plan.runId,
      );
    }
    if (result.content.length > 0) {
      const message: AssistantMessage = {
        id: `a:${plan.stepKey}`,
        role: 'assistant',
        runId: plan.runId,
        stepNumber: plan.stepNumber,
        content: result.content,
        at: this.clock.now(),
      };
      this.append(message);
    }
  }

  recordToolResults(plan: Pick<StepPlan, 'stepKey' | 'runId'>, results: ToolResultPart[]): void {
    if (results.length === 0) return;
    const message: ToolMessage = {
      id: `t:${plan.stepKey}`,
      role: 'tool',
      runId: plan.runId,
      content: results,
      at: this.clock.now(),
    };
    this.append(message);
  }

  /** An interrupted step leaves nothing in the conversation; subscribers drop its partial output. */
  interruptStep(plan: StepPlan): void {
    this.emit('step-interrupted', { stepNumber: plan.stepNumber }, plan.runId);
  }

  /**
   * Whether the run asks the model again: it does while tool results or inputs wait for an answer.
   * Every input accepted before this call is answered by this run; anything accepted after starts the next.
   */
  shouldContinue(result: Pick<StepResult, 'toolCalls'> | null): boolean {
    const run = this.s.run;
    if (!run) return false;
    if (run.pending.length > 0) return true;
    if (result && result.toolCalls.length > 0) return run.stepNumber < this.maxSteps(run);
    return false;
  }

  private maxSteps(run: RunState): number {
    return run.streamOptions?.maxSteps ?? this.config.maxStepsPerRun;
  }

  finishRun(reason: 'stop' | 'error' | 'max-steps', error?: string): void {
    const run = this.s.run;
    if (!run) return;
    if (reason === 'error') this.emit('error', { message: error ?? 'The run failed.' }, run.runId);
    this.emit('finish', { runId: run.runId, reason, steps: run.stepNumber }, run.runId);
    this.s.run = null;
    this.s.runsCompleted += 1;
    // Inputs accepted for a run that failed before answering them start the next run instead of vanishing.
    if (run.pending.length > 0) {
      this.s.queue.unshift({ runId: this.clock.newId(), agentId: run.agentId, inputs: run.pending });
      this.emitQueue();
    }
  }

  /** The oldest events, at most `maxBytes` of JSON (always at least one): activity payloads stay well under 2 MB. */
  takeOutbox(maxBytes = Infinity): OutboxEvent[] {
    this.unpublishedRecordEvents.clear();
    if (maxBytes === Infinity) return this.s.outbox.splice(0);
    let bytes = 0;
    let n = 0;
    while (n < this.s.outbox.length) {
      bytes += JSON.stringify(this.s.outbox[n]).length;
      if (n > 0 && bytes > maxBytes) break;
      n += 1;
    }
    return this.s.outbox.splice(0, n);
  }

  /** Whether the outbox holds more than `maxBytes` of JSON (stops counting once it does). */
  outboxExceeds(maxBytes: number): boolean {
    let bytes = 0;
    for (const event of this.s.outbox) {
      bytes += JSON.stringify(event).length;
      if (bytes > maxBytes) return true;
    }
    return false;
  }

  /** Events taken for publishing that could not be published go back to the front, order kept. */
  restoreOutbox(events: OutboxEvent[]): void {
    this.s.outbox.unshift(...events);
  }

  emit(type: ThreadEventType, payload: unknown, runId?: string): void {
    this.s.eventSeq += 1;
    const draft: OutboxEvent = { key: `w:${this.s.eventSeq}`, type, payload, at: this.clock.now() };
    if (runId !== undefined) draft.runId = runId;
    this.s.outbox.push(draft);
  }

  private emitQueue(): void {
    this.emit('queue-updated', {
      queue: this.s.queue.map((q) => ({
        runId: q.runId,
        agentId: q.agentId,
        inputIds: q.inputs.map((i) => i.input.id),
      })),
    });
  }

  private store(accepted: PendingInput, runId: string | undefined): InputMessage {
    const message = toInputMessage(accepted, runId);
    this.append(message);
    return message;
  }

  private append(message: StoredMessage): void {
    this.s.messages.push(message);
    const excess = this.s.messages.length - this.config.maxStoredMessages;
    if (excess > 0) this.s.messages.splice(0, excess);
  }

  // ---- Notifications (SPEC §4) -------------------------------------------------------------------------------

  /** Refuses a send the inbox cannot take: pending records never leave it, so they bound it. */
  validateNotifications(batch: NotificationBatch): void {
    if (this.rememberedBatches.has(batch.id)) return;
    const inbox = this.s.inbox ?? [];
    const open = inbox.filter((r) => !isClosed(r)).length;
    if (open + batch.notifications.length > this.config.maxInboxRecords) {
      throw new ThreadRefusal(
        'InputRejected',
        `The thread's inbox holds ${open} open notifications (limit ${this.config.maxInboxRecords}). Mark some seen, dismiss or archive them, or raise maxInboxRecords.`,
        { limit: 'maxInboxRecords', value: this.config.maxInboxRecords },
      );
    }
  }

  /**
   * Records a send (SPEC §4.1): each notification creates a record or coalesces into a pending one with the same
   * source, kind and dedupeKey/coalesceKey, then the delivery policy decides (SPEC §4.2) with the thread's own state.
   */
  acceptNotifications(batch: NotificationBatch, settings: NotificationSettings = {}): NotificationSendResult {
    const previous = this.rememberedBatches.get(batch.id);
    if (previous) return { ...this.replayBatch(previous), duplicate: true };
    const inbox = (this.s.inbox ??= []);
    const now = this.clock.now();
    const outcomes = batch.notifications.map((input, i): NotificationOutcome => {
      let record = findCoalescable(inbox, input);
      const coalesced = record !== undefined;
      if (record) coalesce(record, input, now);
      else {
        const id = `n${(this.s.notificationSeq = (this.s.notificationSeq ?? 0) + 1)}`;
        record = newRecord(input, { id, ...this.key, agentId: batch.agentId }, now);
        inbox.push(record);
      }
      const decision = decideDelivery(record, this.isActive(), settings.policy, settings.decided?.[i]);
      this.applyDecision(record, decision, settings.digestWindowMs ?? this.config.digestWindowMs, now);
      this.emitRecord(record, coalesced ? 'coalesced' : 'created');
      return {
        id: record.id,
        status: record.status,
        action: decision.action,
        coalesced,
        coalescedCount: record.coalescedCount,
        ...(record.deliveryReason ? { deliveryReason: record.deliveryReason } : {}),
      };
    });
    this.evictClosed();
    this.rememberedBatches.set(batch.id, {
      ids: outcomes.map((o) => o.id),
      actions: outcomes.map((o) => o.action),
      coalesced: outcomes.map((o) => (o.coalesced ? 1 : 0)),
    });
    while (this.rememberedBatches.size > this.config.rememberNotificationBatches) {
      this.rememberedBatches.delete(this.rememberedBatches.keys().next().value as string);
    }
    return { accepted: true, notifications: outcomes };
  }

  /** A repeated send answers with the first one's records and actions, and the records' current status. */
  private replayBatch(batch: RememberedBatch): NotificationSendResult {
    const byId = new Map((this.s.inbox ?? []).map((r) => [r.id, r]));
    return {
      accepted: true,
      notifications: batch.ids.map((id, i) => {
        const record = byId.get(id);
        return {
          id,
          status: record?.status ?? 'archived',
          action: batch.actions[i],
          coalesced: batch.coalesced[i] === 1,
          coalescedCount: record?.coalescedCount ?? 1,
        };
      }),
    };
  }

  private applyDecision(record: NotificationRecord, decision: DeliveryDecision, windowMs: number, now: number): void {
    if (decision.reason) record.deliveryReason = decision.reason;
    // A digest already scheduled (even one due this instant) keeps its time.
    const scheduledDigest = record.summaryAt;
    delete record.summaryAt;
    switch (decision.action) {
      case 'deliver':
      case 'queue':
        this.deliverRecord(record, decision.action === 'queue' ? 'queue' : 'send');
        return;
      case 'defer':
        record.deliverAt = decision.deliverAt ?? now + windowMs;
        return;
      case 'summarize':
        // `high` while active is summarized at once and delivered in full once idle; the rest join the digest.
        record.summaryAt =
          decision.summaryAt ?? (decision.fullWhenIdle ? now : (scheduledDigest ?? this.nextDigestAt(now, windowMs)));
        if (decision.fullWhenIdle) record.fullWhenIdle = true;
        return;
      case 'persist':
        this.persistRecord(record);
        return;
      case 'discard':
        record.status = 'discarded';
        record.discardedAt = now;
        return;
    }
  }

  /** The open digest's time, so summaries batch per window; a new window opens when none is open. */
  private nextDigestAt(now: number, windowMs: number): number {
    const open = (this.s.inbox ?? [])
      .filter((r) => r.status === 'pending' && r.summaryAt !== undefined && r.summaryAt > now)
      .map((r) => r.summaryAt!);
    return open.length > 0 ? Math.min(...open) : now + windowMs;
  }

  /** The full `<notification>` signal of a record. */
  private notificationInput(record: NotificationRecord, delivery: 'send' | 'queue'): ThreadInput {
    return {
      id: `notification:${record.id}:${record.deliveryAttempts}`,
      agentId: this.s.run?.agentId ?? record.agentId,
      delivery,
      type: 'notification',
      contents: record.summary,
      attributes: notificationAttributes(record),
    };
  }

  /**
   * A full delivery: delivered to the active run or waking the thread. The record becomes `delivered` only then
   * (SPEC §4.3); a delivery the thread refuses (a limit) counts as a failed attempt and is retried with backoff.
   */
  private deliverRecord(record: NotificationRecord, delivery: 'send' | 'queue'): void {
    const input = this.notificationInput(record, delivery);
    try {
      this.validate(input);
    } catch (err) {
      this.failDelivery(record, (err as Error).message);
      return;
    }
    const result = this.route(input);
    if (result.action === 'persist' || result.action === 'discard') {
      // Not delivered, and never due again by itself: nothing to retry.
      delete record.deliverAt;
      delete record.fullWhenIdle;
      return;
    }
    const now = this.clock.now();
    record.status = 'delivered';
    record.deliveredAt = now;
    record.deliveredSignalId = input.id;
    record.updatedAt = now;
    unschedule(record);
  }

  /** The full signal stored without waking or joining a run; the record stays pending (never marked delivered). */
  private persistRecord(record: NotificationRecord): void {
    const input = this.notificationInput(record, 'send');
    this.route({ ...input, ifActive: { behavior: 'persist' }, ifIdle: { behavior: 'persist' } });
  }

  private failDelivery(record: NotificationRecord, error: string): void {
    const now = this.clock.now();
    record.deliveryAttempts += 1;
    record.lastDeliveryError = error;
    record.updatedAt = now;
    if (record.deliveryAttempts >= this.config.maxDeliveryAttempts) {
      record.status = 'failed';
      unschedule(record);
    } else {
      const backoff = this.config.notificationRetryMs * 2 ** (record.deliveryAttempts - 1);
      record.deliverAt = now + Math.min(backoff, 60_000);
    }
    this.emitRecord(record, record.status === 'failed' ? 'failed' : 'delivery-failed');
  }

  /** Something is due now: a deferred delivery, a summary, or a full delivery waiting for the thread to be idle. */
  hasDueNotifications(): boolean {
    const now = this.clock.now();
    const idle = !this.s.run && this.s.queue.length === 0;
    return (this.s.inbox ?? []).some(
      (r) =>
        r.status === 'pending' &&
        ((r.deliverAt !== undefined && r.deliverAt <= now) ||
          (r.summaryAt !== undefined && r.summaryAt <= now) ||
          (idle && r.fullWhenIdle === true)),
    );
  }

  /** The earliest future `deliverAt`/`summaryAt`: the one timer the workflow keeps for the inbox. */
  nextNotificationDeadline(): number | undefined {
    const now = this.clock.now();
    let next: number | undefined;
    for (const r of this.s.inbox ?? []) {
      if (r.status !== 'pending') continue;
      for (const at of [r.deliverAt, r.summaryAt]) {
        if (at !== undefined && at > now && (next === undefined || at < next)) next = at;
      }
    }
    return next;
  }

  /**
   * Dispatches what is due (SPEC §4.3), urgent first: deferred full deliveries, full deliveries that waited for an
   * idle thread, then one summary of every record due for one.
   */
  dispatchNotifications(): void {
    const inbox = this.s.inbox;
    if (!inbox || inbox.length === 0) return;
    const now = this.clock.now();
    const pending = () => inbox.filter((r) => r.status === 'pending');
    for (const record of pending()
      .filter((r) => r.deliverAt !== undefined && r.deliverAt <= now)
      .sort(byPriority)) {
      this.deliverRecord(record, 'send');
      this.emitRecord(record, record.status === 'delivered' ? 'delivered' : 'updated');
    }
    if (!this.s.run && this.s.queue.length === 0) {
      for (const record of pending()
        .filter((r) => r.fullWhenIdle)
        .sort(byPriority)) {
        this.deliverRecord(record, 'send');
        this.emitRecord(record, record.status === 'delivered' ? 'delivered' : 'updated');
      }
    }
    const due = pending()
      .filter((r) => r.summaryAt !== undefined && r.summaryAt <= now)
      .sort(byPriority);
    if (due.length > 0) this.summarize(due);
  }

  /** One `<notification-summary>` for every record due; a low-only digest is stored without waking the thread. */
  private summarize(records: NotificationRecord[]): void {
    const { attributes, text } = summaryOf(records);
    const lowOnly = records.every((r) => r.priority === 'low');
    const input: ThreadInput = {
      id: `notification-summary:${this.s.eventSeq + 1}`,
      agentId: this.s.run?.agentId ?? records[0].agentId,
      delivery: 'send',
      type: 'notification',
      tagName: 'notification-summary',
      contents: text,
      attributes,
      ...(lowOnly ? { ifIdle: { behavior: 'persist' as const } } : {}),
    };
    const now = this.clock.now();
    try {
      this.validate(input);
    } catch {
      // A limit refused it: try the digest again a little later, records untouched.
      for (const r of records) r.summaryAt = now + this.config.notificationRetryMs;
      return;
    }
    this.route(input);
    for (const r of records) {
      delete r.summaryAt;
      r.summarySignalId = input.id;
      r.updatedAt = now;
      this.emitRecord(r, 'summarized');
    }
  }

  /** Applications' `markSeen` / `dismiss` / `archive` (SPEC §4.4). Unknown ids change nothing. */
  validateStatusChange(request: NotificationStatusRequest): void {
    const ids = new Set((this.s.inbox ?? []).map((r) => r.id));
    const unknown = request.ids.find((id) => !ids.has(id));
    if (unknown !== undefined) throw notificationNotFound(unknown);
  }

  changeNotificationStatus(request: NotificationStatusRequest): NotificationRecord[] {
    this.validateStatusChange(request);
    const wanted = new Set(request.ids);
    const changed = (this.s.inbox ?? []).filter((r) => wanted.has(r.id));
    for (const record of changed) this.setStatus(record, request.change);
    this.evictClosed();
    return changed.map((r) => ({ ...r }));
  }

  private setStatus(record: NotificationRecord, change: 'seen' | 'dismiss' | 'archive'): void {
    const now = this.clock.now();
    if (change === 'seen') {
      record.status = 'seen';
      record.seenAt = now;
    } else if (change === 'dismiss') {
      record.status = 'dismissed';
      record.dismissedAt = now;
    } else {
      record.status = 'archived';
      record.archivedAt = now;
    }
    record.updatedAt = now;
    unschedule(record);
    this.emitRecord(record, record.status);
  }

  listNotifications(query: NotificationQuery = {}): RecordPage {
    return pageOf(this.s.inbox ?? [], query, query.limit ?? 20, query.cursor);
  }

  /**
   * The `notification-inbox` tool (SPEC §4.4), run by the workflow itself: it reads and changes the inbox, and
   * `read` delivers the full notification as a signal (it joins the run at the next step), not as tool output.
   */
  inboxTool(input: InboxToolInput): unknown {
    const inbox = this.s.inbox ?? [];
    const find = (id: string) => {
      const record = inbox.find((r) => r.id === id);
      if (!record) throw notificationNotFound(id);
      return record;
    };
    const filter = {
      ...(input.priority ? { priority: [input.priority] } : {}),
      ...(input.source ? { source: [input.source] } : {}),
    };
    switch (input.action) {
      case 'list':
      case 'search': {
        const status = input.status
          ? [input.status]
          : input.action === 'list'
            ? (['pending', 'delivered'] as const)
            : undefined;
        const page = pageOf(inbox, { ...filter, status, q: input.query }, input.limit);
        for (const r of page.notifications)
          if (r.status === 'pending' || r.status === 'delivered') this.setStatus(r, 'seen');
        return { notifications: page.notifications.map((r) => withoutBody({ ...r })), hasMore: page.hasMore };
      }
      case 'read': {
        const records = input.id
          ? [find(input.id)]
          : pageOf(inbox, { ...filter, status: [input.status ?? 'pending'] }, input.limit).notifications;
        const read = records.map((record) => {
          const injected = record.deliveredSignalId === undefined;
          if (injected) {
            const signal = this.notificationInput(record, 'send');
            this.route(signal);
            record.deliveredSignalId = signal.id;
          }
          this.setStatus(record, 'seen');
          return { id: record.id, status: record.status, injected };
        });
        return { notifications: read, note: 'Full notifications arrive as <notification> signals.' };
      }
      case 'markSeen':
      case 'dismiss':
      case 'archive': {
        const record = find(input.id!);
        this.setStatus(record, input.action === 'markSeen' ? 'seen' : input.action);
        return { notification: withoutBody({ ...record }) };
      }
    }
  }

  /** Records waiting to be archived (at most `max`), taken off the thread; `restoreEvicted` puts them back. */
  takeEvicted(max = 200): NotificationRecord[] {
    return this.s.evicted?.splice(0, max) ?? [];
  }

  restoreEvicted(records: NotificationRecord[]): void {
    (this.s.evicted ??= []).unshift(...records);
  }

  get evictedCount(): number {
    return this.s.evicted?.length ?? 0;
  }

  /**
   * Over the bound, the oldest closed records leave the inbox for the archive (the bus keeps them retrievable:
   * `listArchivedNotifications`); subscribers get each one in full as it leaves.
   */
  private evictClosed(): void {
    const inbox = this.s.inbox;
    if (!inbox || inbox.length <= this.config.maxInboxRecords) return;
    let excess = inbox.length - this.config.maxInboxRecords;
    const leaving = new Set<string>();
    for (const r of [...inbox].sort((a, b) => a.updatedAt - b.updatedAt)) {
      if (excess === 0) break;
      if (!isClosed(r)) continue;
      leaving.add(r.id);
      excess -= 1;
      this.emit('notification-updated', { change: 'evicted', notification: withoutBody({ ...r }) });
      (this.s.evicted ??= []).push(r);
    }
    this.s.inbox = inbox.filter((r) => !leaving.has(r.id));
  }

  /**
   * Announces a record's change. A record's announcement not yet published is replaced in place by the newer one:
   * a burst of coalescing sends costs one event per record, not one per send, and the outbox stays bounded.
   */
  private emitRecord(record: NotificationRecord, change: string): void {
    const payload = { change, notification: withoutBody({ ...record }) };
    const queued = this.unpublishedRecordEvents.get(record.id);
    // The map holds only events still in the outbox: `takeOutbox` is the one way out, and it clears the map.
    if (queued) {
      queued.payload = payload;
      queued.at = this.clock.now();
      return;
    }
    this.emit('notification-updated', payload);
    this.unpublishedRecordEvents.set(record.id, this.s.outbox[this.s.outbox.length - 1]);
  }

  /** The whole thread, for continue-as-new. */
  snapshot(): ThreadSnapshot {
    return {
      ...this.s,
      remembered: [...this.remembered.entries()],
      rememberedBatches: [...this.rememberedBatches.entries()],
    };
  }

  /** What `threadStateQuery` answers. */
  view(): ThreadView {
    const { run } = this.s;
    return {
      resourceId: this.s.resourceId,
      threadId: this.s.threadId,
      status: run ? 'active' : 'idle',
      activeRun: run
        ? {
            runId: run.runId,
            agentId: run.agentId,
            stepNumber: run.stepNumber,
            pendingInputs: run.pending.length,
            status: this.isParked() ? 'awaiting-approval' : 'running',
            approvals: (run.toolWait?.calls ?? [])
              .filter((c) => c.approval)
              .map((c) => ({
                toolCallId: c.call.toolCallId,
                toolName: c.call.toolName,
                args: c.call.input,
                status: c.approval!.status,
                requestedAt: c.approval!.requestedAt,
                ...(c.approval!.expiresAt !== undefined ? { expiresAt: c.approval!.expiresAt } : {}),
              })),
          }
        : null,
      queue: this.s.queue.map((q) => ({
        runId: q.runId,
        agentId: q.agentId,
        inputIds: q.inputs.map((i) => i.input.id),
      })),
      messageCount: this.s.messages.length,
      runsCompleted: this.s.runsCompleted,
      lanes: Object.entries(this.s.lanes ?? {}).map(([id, lane]) => laneView(id, lane)),
      inbox: inboxCounts(this.s.inbox ?? []),
    };
  }
}

function toInputMessage(accepted: PendingInput, runId: string | undefined): InputMessage {
  const { input } = accepted;
  const message: InputMessage = {
    id: input.id,
    role: 'user',
    type: input.type,
    contents: input.contents,
    at: accepted.acceptedAt,
  };
  if (input.tagName !== undefined) message.tagName = input.tagName;
  if (input.attributes !== undefined) message.attributes = input.attributes;
  if (input.metadata !== undefined) message.metadata = input.metadata;
  if (input.providerOptions !== undefined) message.providerOptions = input.providerOptions;
  if (runId !== undefined) message.runId = runId;
  return message;
}

/**
 * The newest messages within the window's count and byte budget. Never starts on a tool result (its tool call
 * would be missing, which providers reject).
 */
export function selectWindow(messages: readonly StoredMessage[], window: ContextWindowConfig): StoredMessage[] {
  let start = Math.max(0, messages.length - window.maxMessages);
  let bytes = 0;
  for (let i = messages.length - 1; i >= start; i--) {
    bytes += JSON.stringify(messages[i]).length;
    if (bytes > window.maxBytes && i < messages.length - 1) {
      start = i + 1;
      break;
    }
  }
  while (start < messages.length && messages[start].role === 'tool') start++;
  return messages.slice(start);
}

function notificationNotFound(id: string): ThreadRefusal<'NotificationNotFound'> {
  return new ThreadRefusal('NotificationNotFound', `Unknown notification: ${id} is not in this thread's inbox.`, {
    notificationId: id,
  });
}
