/**
 * The thread as data: what it has accepted and what it will do next. Handlers call `accept` (record and decide the
 * input's action); the workflow's main loop calls the rest. No Temporal imports, no clock, no randomness: ids and
 * time are injected, so this is unit-testable and replays deterministically.
 *
 * `ThreadState` is the front the workflow talks to; the work is done by parts that share one snapshot object:
 * inputs, runs, approvals, lanes, the conversation, the outbox, the notification inbox and its dispatcher.
 */
import type { StepResult, StoredMessage, ToolResultPart } from '../../protocol/messages';
import type {
  InboxToolInput,
  InputResult,
  NotificationBatch,
  NotificationQuery,
  NotificationStatusRequest,
  ThreadInput,
} from '../../protocol/schemas';
import type { StepPlan } from '../../protocol/step';
import type { ThreadConfig } from '../../protocol/thread-config';
import type { ThreadEventType } from '../../protocol/events';
import type {
  AbortResult,
  NotificationRecord,
  NotificationSendResult,
  RecordPage,
  ThreadView,
  ToolApproval,
  ToolApprovalResult,
} from '../../protocol/views';
import { Approvals } from './approvals';
import { Conversation } from './conversation';
import { Inbox } from './inbox';
import { Inputs } from './inputs';
import { Lanes } from './lanes';
import { Notifications } from './notifications';
import { Outbox } from './outbox';
import { Runs } from './runs';
import {
  openGates,
  type NotificationSettings,
  type OutboxEvent,
  type QueuedRun,
  type RunState,
  type StepOptions,
  type ThreadClock,
  type ThreadGates,
  type ThreadSnapshot,
  type ToolWait,
} from './snapshot';
import { threadView } from './view';

export class ThreadState {
  private readonly outbox: Outbox;
  private readonly conversation: Conversation;
  private readonly lanes: Lanes;
  private readonly runs: Runs;
  private readonly inputs: Inputs;
  private readonly approvals: Approvals;
  private readonly inbox: Inbox;
  private readonly notifications: Notifications;

  constructor(
    private readonly s: ThreadSnapshot,
    readonly config: ThreadConfig,
    clock: ThreadClock,
    private readonly gates: ThreadGates = openGates,
  ) {
    this.outbox = new Outbox(s, clock);
    this.conversation = new Conversation(s, config, clock);
    this.lanes = new Lanes(s, config, clock, this.outbox, this.conversation);
    this.runs = new Runs(s, config, clock, this.outbox, this.conversation, this.lanes);
    this.inputs = new Inputs(s, config, clock, this.outbox, this.conversation, this.lanes, this.runs, gates);
    this.approvals = new Approvals(s, config, clock, this.outbox);
    this.inbox = new Inbox(s, config, clock, this.outbox, this.inputs);
    this.notifications = new Notifications(s, config, clock, this.inbox, this.inputs);
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

  /** When the thread last accepted an input; null before the first. */
  get lastInputAt(): number | null {
    return this.s.lastInputAt;
  }

  get outboxSize(): number {
    return this.outbox.size;
  }

  isActive(): boolean {
    return this.s.run !== null;
  }

  /**
   * The main loop has something to do: a run to step (not one parked on approvals nobody decided yet), a queued run
   * to start, events to publish, evicted records to archive while no step is due.
   */
  hasWork(): boolean {
    const { run } = this.s;
    if (this.s.outbox.length > 0) return true;
    if (this.s.evicted.length > 0 && (!run || this.isParked())) return true;
    if (!run) return this.s.queue.length > 0;
    return !this.isParked() || run.abortRequested === true;
  }

  // ---- Inputs and runs (behaviour §2) -------------------------------------------------------------------------------

  /**
   * Throws the `ThreadRefusal` the thread would answer the input with, changing nothing. An update validator passes
   * `openGates`: a validator may not call `patched()`, and Temporal never replays one.
   */
  validate(input: ThreadInput, gates?: ThreadGates): void {
    this.inputs.validate(input, gates);
  }

  /** Records an input and decides what the thread does with it. */
  accept(input: ThreadInput): InputResult {
    return this.inputs.accept(input);
  }

  requestAbort(clearPendingSignals: boolean): AbortResult {
    return this.runs.requestAbort(clearPendingSignals);
  }

  abortRun(): void {
    this.runs.abort();
  }

  cancelQueued(signalIds: readonly string[]): string[] {
    return this.runs.cancelQueued(signalIds);
  }

  startNextQueued(): boolean {
    return this.runs.startNextQueued();
  }

  planStep(options: StepOptions = {}): StepPlan {
    return this.runs.planStep(options);
  }

  completeStep(plan: StepPlan, result: StepResult): void {
    this.runs.completeStep(plan, result);
  }

  recordToolResults(plan: Pick<StepPlan, 'stepKey' | 'runId'>, results: ToolResultPart[]): void {
    this.conversation.recordToolResults(plan, results);
  }

  interruptStep(plan: StepPlan): void {
    this.runs.interruptStep(plan);
  }

  shouldContinue(result: Pick<StepResult, 'toolCalls'> | null): boolean {
    return this.runs.shouldContinue(result);
  }

  finishRun(reason: 'stop' | 'error' | 'max-steps', error?: string): void {
    this.runs.finish(reason, error);
  }

  // ---- Tool approvals (behaviour §2.4) ------------------------------------------------------------------------------

  isParked(): boolean {
    return this.approvals.isParked();
  }

  approvalDeadline(): number | undefined {
    return this.approvals.deadline();
  }

  parkTools(plan: StepPlan, result: StepResult): boolean {
    return this.approvals.park(plan, result);
  }

  validateApproval(approval: ToolApproval): void {
    this.approvals.validate(approval);
  }

  decideApproval(approval: ToolApproval): ToolApprovalResult {
    return this.approvals.decide(approval);
  }

  expireApprovals(): void {
    this.approvals.expire();
  }

  takeDecidedTools(): ToolWait | null {
    return this.approvals.takeDecided();
  }

  // ---- Outbox --------------------------------------------------------------------------------------------------

  emit(type: ThreadEventType, payload: unknown, runId?: string): void {
    this.outbox.emit(type, payload, runId);
  }

  takeOutbox(maxBytes = Infinity): OutboxEvent[] {
    return this.outbox.take(maxBytes);
  }

  outboxExceeds(maxBytes: number): boolean {
    return this.outbox.exceeds(maxBytes);
  }

  restoreOutbox(events: OutboxEvent[]): void {
    this.outbox.restore(events);
  }

  // ---- Notifications (behaviour §4) ---------------------------------------------------------------------------------

  /** As `validate`, for a notification send: an update validator passes `openGates`. */
  validateNotifications(batch: NotificationBatch, gates: ThreadGates = this.gates): void {
    this.notifications.validate(batch, gates);
  }

  acceptNotifications(batch: NotificationBatch, settings: NotificationSettings = {}): NotificationSendResult {
    return this.notifications.accept(batch, settings);
  }

  hasDueNotifications(): boolean {
    return this.notifications.hasDue();
  }

  nextNotificationDeadline(): number | undefined {
    return this.notifications.nextDeadline();
  }

  dispatchNotifications(): void {
    this.notifications.dispatch();
  }

  validateStatusChange(request: NotificationStatusRequest): void {
    this.inbox.validateStatusChange(request);
  }

  changeNotificationStatus(request: NotificationStatusRequest): NotificationRecord[] {
    return this.inbox.changeStatus(request);
  }

  listNotifications(query: NotificationQuery = {}): RecordPage {
    return this.inbox.list(query);
  }

  inboxTool(input: InboxToolInput): unknown {
    return this.inbox.tool(input);
  }

  takeEvicted(max = 200): NotificationRecord[] {
    return this.inbox.takeEvicted(max);
  }

  restoreEvicted(records: NotificationRecord[]): void {
    this.inbox.restoreEvicted(records);
  }

  get evictedCount(): number {
    return this.inbox.evictedCount;
  }

  // ---- Whole thread --------------------------------------------------------------------------------------------

  /** The whole thread, for continue-as-new. */
  snapshot(): ThreadSnapshot {
    return {
      ...this.s,
      remembered: this.inputs.rememberedEntries(),
      rememberedBatches: this.notifications.rememberedEntries(),
    };
  }

  /** What `threadStateQuery` answers. */
  view(): ThreadView {
    return threadView(this.s);
  }
}
