/**
 * The TypeScript client: talks to threads through Temporal (update-with-start, queries) and reads their streams
 * from the bus.
 */
import {
  ApplicationFailure,
  Client,
  Connection,
  WithStartWorkflowOperation,
  QueryNotRegisteredError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type UpdateDefinition,
  type WorkflowHandle,
  isGrpcServiceError,
} from '@temporalio/client';
import { createBus } from '../bus';
import type { ArchivePage, EventBus } from '../bus/types';
import {
  ConflictError,
  NotFoundError,
  PayloadTooLargeError,
  ThreadlineError,
  UnavailableError,
  ValidationError,
} from '../protocol/errors';
import {
  checkInputDepthBound,
  messageInput,
  notificationBatch,
  signalInput,
  stateInput,
  type IngressLimits,
} from './inputs';
import type { AgentSummary, SendTarget } from '../protocol/api';
import type { ThreadListPage } from '../protocol/thread-list';
import {
  cancelQueuedRequestSchema,
  defaultLimits,
  describeZodError,
  notificationQuerySchema,
  notificationStatusRequestSchema,
  threadTargetSchema,
  toolApprovalSchema,
  type InputResult,
  type NotificationBatch,
  type NotificationInput,
  type NotificationQuery,
  type NotificationStatusRequest,
  type MessageInput,
  type SignalInput,
  type StateSignalInput,
  type ThreadInput,
  type ThreadTarget,
} from '../protocol/schemas';
import { definitions } from '../config/definitions';
import { DEFAULT_TASK_QUEUE, temporalConnectionFromEnv, temporalConnectionOptions } from '../config/settings';
import { threadlineConnectionOptions } from './grpc-retry';
import { GrpcStatus } from './grpc-status';
import { messagesOf, TASK_RETRY_AFTER_SECONDS, unreadableWhileTaskFails, workflowTaskFailing } from './unavailable';
import { retryGuardedQuery } from '../protocol/query-task-guard';
import { subscribe, type ThreadSubscription } from './subscription';
import { listThreads, type ThreadListFilters, type ThreadListOptions } from './thread-list';
import { forkThread, inspectThreadStep, listThreadSteps } from './time-travel';
import type { ForkRequest, StepList, StepPrompt } from '../protocol/time-travel';
import { AgentCatalog } from './agent-catalog';
import { type SubscribeOptions } from '../protocol/api';
import { threadKey } from '../protocol/ids';
import { isFailureType, type FailureDetails, type FailureType } from '../protocol/failures';
import {
  abortThreadUpdate,
  approveToolUpdate,
  cancelQueuedUpdate,
  changeNotificationStatusUpdate,
  notificationsQuery,
  submitNotificationsUpdate,
  sendSignalSignal,
  submitInputUpdate,
  threadMessagesQuery,
  threadStateQuery,
} from '../protocol/definitions';
import { stateIndependentAction, type StateIndependentAction } from '../protocol/routing';
import { type MessagesPage } from '../protocol/views';
import {
  THREAD_WORKFLOW_TYPE,
  defaultThreadConfig,
  type ThreadConfigInput,
  type ThreadWorkflowArgs,
} from '../protocol/thread-config';
import { keywordValue, resourceSearchAttribute } from '../protocol/search-attributes';
import { inspectSearchAttributes } from './search-attributes';
import { threadDetails, threadSummary } from '../protocol/summaries';
import {
  type AbortResult,
  type NotificationSendResult,
  type ThreadView,
  type ToolApproval,
  type ToolApprovalResult,
} from '../protocol/views';
import type { NotificationRecord, RecordPage } from '../protocol/views';

/** At most `limit` keys, the least recently used dropped first. */
class RecentKeys {
  private readonly keys = new Set<string>();

  constructor(private readonly limit: number) {}

  has(key: string): boolean {
    return this.keys.has(key);
  }

  add(key: string): void {
    if (this.limit === 0) return;
    // Re-inserted: a Set iterates in insertion order, so the first key is the least recently used.
    this.keys.delete(key);
    this.keys.add(key);
    if (this.keys.size > this.limit) this.keys.delete(this.keys.values().next().value!);
  }

  delete(key: string): void {
    this.keys.delete(key);
  }
}

/** At most `limit` concurrent holders per key; the rest wait in arrival order. */
class KeyedLimiter {
  private readonly active = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(private readonly limit: number) {}

  async acquire(key: string): Promise<() => void> {
    if ((this.active.get(key) ?? 0) >= this.limit) {
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(key) ?? [];
        queue.push(resolve);
        this.waiting.set(key, queue);
      });
    } else {
      this.active.set(key, (this.active.get(key) ?? 0) + 1);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const queue = this.waiting.get(key);
      const next = queue?.shift();
      if (queue?.length === 0) this.waiting.delete(key);
      if (next) return next(); // the slot passes straight to the next waiter
      const count = (this.active.get(key) ?? 1) - 1;
      if (count === 0) this.active.delete(key);
      else this.active.set(key, count);
    };
  }
}

export interface ConnectOptions {
  /** The event bus; without one the client makes its own: Redis Streams at `redisUrl`, else in-process. */
  bus?: EventBus;
  redisUrl?: string;
  /**
   * An existing Temporal client. Without one, `connect()` makes its own from `process.env` as the `temporal` CLI
   * would (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE and its
   * temporal.toml; see docs/configuration.md); `address` and `namespace` override what it finds.
   */
  client?: Client;
  address?: string;
  namespace?: string;
  /** Default `threadline`; without `client`, TEMPORAL_TASK_QUEUE from `process.env` when set. */
  taskQueue?: string;
  /** Settings a thread is created with (continue-as-new threshold, timeouts, limits). Carried across continue-as-new. */
  threadConfig?: ThreadConfigInput;
  limits?: Partial<IngressLimits>;
  /**
   * How long a send keeps resending while Temporal refuses it for a passing reason, in milliseconds (default 30,000;
   * THREADLINE_DELIVERY_TIMEOUT_MS for the gateway): busy or unreachable, or the thread's workflow task on a retry
   * attempt after a worker died holding it (Temporal refuses updates from the third attempt until one completes). Still
   * refused then: `UnavailableError` (HTTP 503 with Retry-After), and nothing was delivered.
   */
  deliveryTimeoutMs?: number;
  /**
   * How many threads this client remembers as running (default 10,000; 0 remembers none), least recently used
   * forgotten first. A send to one of them is a plain update (or signal) instead of update-with-start (or
   * signal-with-start), which carries the start request — workflow arguments with the agent's profile, search
   * attributes, summary — for the server to decode and drop; a thread that ended since is found missing and started
   * as before.
   */
  knownThreads?: number;
}

/** What a send returns: the thread's decision, and `persisted`, resolved once the input is in the thread's history. */
export type SendResult = InputResult & { persisted: Promise<void> };

export class ThreadlineClient {
  readonly temporal: Client;
  readonly bus: EventBus;
  readonly taskQueue: string;
  readonly threadConfig: ThreadConfigInput | undefined;
  readonly limits: IngressLimits;
  readonly deliveryTimeoutMs: number;
  private readonly ownConnection: Connection | null;
  private readonly ownBus: EventBus | null;
  private readonly inFlight = new KeyedLimiter(8);
  /** Threads a send of this client reached running (`knownThreads`): the next send skips the start request. */
  private readonly running: RecentKeys;
  /**
   * The agents workers announced on the bus, cached: a new thread starts with its agent's profile (saving it a round
   * trip), and a gateway on this client lists and checks agents from the same cache.
   */
  readonly agents = new AgentCatalog(() => this.bus.agents());

  constructor(temporal: Client, options: ConnectOptions, ownConnection: Connection | null) {
    // Before anything is opened: a refused option leaves nothing behind.
    const checked = checkConnectOptions(options);
    this.deliveryTimeoutMs = checked.deliveryTimeoutMs;
    this.running = new RecentKeys(checked.knownThreads);
    this.temporal = temporal;
    this.ownBus = options.bus ? null : createBus({ redisUrl: options.redisUrl });
    this.bus = options.bus ?? this.ownBus!;
    this.taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
    this.threadConfig = options.threadConfig;
    this.limits = { ...defaultLimits, ...options.limits };
    this.ownConnection = ownConnection;
  }

  /**
   * What a thread this client starts is created with: its `threadConfig`, and (where they are not the defaults) the
   * input size and nesting this client admits, so the thread takes from raw senders what this client takes.
   */
  private startConfig(): ThreadConfigInput | undefined {
    const { maxInputBytes, maxInputDepth } = this.limits;
    const own: ThreadConfigInput = {
      ...(maxInputBytes !== defaultThreadConfig.maxInputBytes && { maxInputBytes }),
      ...(maxInputDepth !== defaultThreadConfig.maxInputDepth && { maxInputDepth }),
    };
    if (Object.keys(own).length === 0) return this.threadConfig;
    return { ...own, ...this.threadConfig };
  }

  agent(agentId: string): AgentClient {
    return new AgentClient(this, agentId);
  }

  /**
   * Delivers an input; the first input to a thread starts exactly one execution. One the thread answers the same way
   * whatever its state (`persist` or `discard` on both sides: protocol/routing.ts) goes by signal-with-start, answered
   * here; every other by update-with-start, answered by the thread. To a thread this client knows running, both go
   * without the start request (`knownThreads`).
   */
  async submit(target: ThreadTarget, input: ThreadInput): Promise<SendResult> {
    const settled = stateIndependentAction(input);
    if (settled) return this.signalWithStart(target, input, settled);
    const result = await this.updateWithStart(target, submitInputUpdate, input, (err) => unchangedState(err, input.id));
    // An accepted update is already in the thread's history.
    return { ...result, persisted: Promise.resolve() };
  }

  /**
   * One update-with-start against the thread, resent while Temporal refuses it for a passing reason. Temporal admits
   * 10 in-flight updates per workflow; past that it turns updates away and drops workflow tasks, and throughput
   * collapses (measured: 137/s at 8 in flight, 6/s at 32). Stay under it from this client. `answered` turns a
   * validator's refusal that is really an answer (a skipped state) into the result.
   */
  private async updateWithStart<R, A>(
    target: ThreadTarget,
    update: UpdateDefinition<R, [A]>,
    arg: A,
    answered: (err: unknown) => R | null = () => null,
  ): Promise<R> {
    const workflowId = threadKey(target.resourceId, target.threadId);
    const release = await this.inFlight.acquire(workflowId);
    const since = Date.now();
    try {
      return await this.sendOrStart(workflowId, {
        send: () => this.temporal.workflow.getHandle(workflowId).executeUpdate(update, { args: [arg] }),
        start: async () =>
          this.temporal.workflow.executeUpdateWithStart(update, {
            args: [arg],
            startWorkflowOperation: this.startOperation(
              workflowId,
              target,
              await this.startProfiles((arg as { agentId?: string }).agentId),
            ),
          }),
        answered,
        since,
      });
    } finally {
      release();
    }
  }

  /**
   * One input to a thread, resent while Temporal refuses it for a passing reason: `send` (to the running execution)
   * when this client saw the thread running, else — or once `send` finds it missing — `start` (with start). Either
   * that succeeds leaves the thread known as running.
   */
  private async sendOrStart<R>(
    workflowId: string,
    {
      send,
      start,
      answered = () => null,
      since,
    }: { send: () => Promise<R>; start: () => Promise<R>; answered?: (err: unknown) => R | null; since: number },
  ): Promise<R> {
    let known = this.running.has(workflowId);
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await (known ? send() : start());
        this.running.add(workflowId);
        return result;
      } catch (err) {
        if (known && isNotFound(err)) {
          // The thread ended since this client last reached it: start it, as for a thread never seen.
          this.running.delete(workflowId);
          known = false;
          continue;
        }
        const answer = answered(err);
        if (answer) return answer;
        if (await this.retryableUpdateError(err, since, attempt)) continue;
        throw err;
      }
    }
  }

  /**
   * An input whose action does not depend on the thread's state, by signal-with-start (a plain signal to a thread this
   * client knows running): the server records the signal (starting the thread if need be) and answers, with no
   * workflow task in between, and the thread routes it as answered here. The answer carries no `duplicate`: a resent
   * id is recorded once (the thread remembers ids) but only the thread knows it saw it. Signals have no in-flight cap
   * per workflow, but the same `inFlight` bound keeps a flood to one thread from starving its continue-as-new (the
   * server refuses signals, RESOURCE_EXHAUSTED, while a close it bounced is retried).
   */
  private async signalWithStart(
    target: ThreadTarget,
    input: ThreadInput,
    action: StateIndependentAction,
  ): Promise<SendResult> {
    const workflowId = threadKey(target.resourceId, target.threadId);
    const release = await this.inFlight.acquire(workflowId);
    const since = Date.now();
    try {
      await this.sendOrStart(workflowId, {
        send: () => this.temporal.workflow.getHandle(workflowId).signal(sendSignalSignal, input),
        start: async () => {
          await this.temporal.workflow.signalWithStart(THREAD_WORKFLOW_TYPE, {
            ...this.startOptions(workflowId, target, await this.startProfiles(input.agentId)),
            signal: sendSignalSignal,
            signalArgs: [input] as [ThreadInput],
          });
        },
        since,
      });
    } finally {
      release();
    }
    // Signal-with-start returns once Temporal recorded the signal durably (one that arrives while a workflow task runs
    // is buffered and joins the history when that task completes).
    return { accepted: true, action, signalId: input.id, persisted: Promise.resolve() };
  }

  /** The agent's profile as its workers announced it, for a thread this send may start (saves it a round trip). */
  private async startProfiles(agentId: string | undefined): Promise<ThreadWorkflowArgs['profiles']> {
    const profile = agentId ? await this.agents.profile(agentId) : undefined;
    return profile && agentId ? { [agentId]: profile } : undefined;
  }

  private startOptions(workflowId: string, target: ThreadTarget, profiles?: ThreadWorkflowArgs['profiles']) {
    return {
      workflowId,
      taskQueue: this.taskQueue,
      args: [{ resourceId: target.resourceId, threadId: target.threadId, config: this.startConfig(), profiles }] as [
        ThreadWorkflowArgs,
      ],
      // Findable by resource from the start; the workflow keeps the other attributes (docs/operations.md).
      typedSearchAttributes: [{ key: resourceSearchAttribute, value: keywordValue(target.resourceId) }],
      staticSummary: threadSummary(target),
      staticDetails: threadDetails(target),
    };
  }

  private startOperation(workflowId: string, target: ThreadTarget, profiles?: ThreadWorkflowArgs['profiles']) {
    return new WithStartWorkflowOperation<(args: ThreadWorkflowArgs) => Promise<void>>(THREAD_WORKFLOW_TYPE, {
      ...this.startOptions(workflowId, target, profiles),
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  }

  /**
   * Notifications (behaviour §4.1), with update-with-start: the first one creates the thread. Answers what the thread
   * did with each (record id, status, action, coalesced).
   */
  async submitNotifications(target: ThreadTarget, batch: NotificationBatch): Promise<NotificationSendResult> {
    return this.updateWithStart(target, submitNotificationsUpdate, batch);
  }

  /**
   * Waits and answers true for the transient refusals worth resending while `deliveryTimeoutMs` from `since` has not
   * passed; maps update rejections to client errors.
   */
  private async retryableUpdateError(err: unknown, since: number, attempt: number): Promise<boolean> {
    // The ingress check counts the dev server's 1,000 bytes; a server on SQL storage allows fewer (PostgreSQL: 255,
    // `limit.maxIDLength`). Its refusal is the caller's input, not a server error, and nothing was started.
    if (/WorkflowId length exceeds limit/i.test(messagesOf(err))) {
      throw new ValidationError(
        'Invalid input: threadId: the workflow id made from resourceId and threadId (percent-encoded) is longer ' +
          'than this Temporal server accepts (limit.maxIDLength; 255 bytes on PostgreSQL). Use shorter ids.',
        { cause: err },
      );
    }
    if (workflowTaskFailing(err)) {
      if (await this.waitToResend(since, attempt)) return true;
      throw this.deadlineError(TASK_RETRYING, err);
    }
    if (err instanceof WorkflowUpdateFailedError) {
      if (unprocessedUpdate(err)) {
        if (await this.waitToResend(since, attempt)) return true;
        throw this.deadlineError(UPDATE_UNPROCESSED, err);
      }
      const message = (err.cause as Error | undefined)?.message ?? err.message;
      throw errorFromRefusal(err) ?? new ConflictError(message, { cause: err });
    }
    if (isRetryableRpc(err) && (await this.waitToResend(since, attempt))) return true;
    // The start sets ThreadlineResource. Right after `threadline setup` the namespace has the attributes, but the
    // server checks starts against its namespace cache, which learns of them at its next refresh (every 2 s by
    // default): resend meanwhile. Attributes the namespace does not have are refused below, at once.
    if (
      unmappedSearchAttribute(err) &&
      (await this.searchAttributesRegistered()) &&
      (await this.waitToResend(since, attempt))
    ) {
      return true;
    }
    const message = (err as Error).message;
    // The start sets ThreadlineResource: a namespace nobody ran `threadline setup` in refuses it.
    const hint = /search attribute Threadline/.test(message)
      ? ` Register Threadline's search attributes in the namespace first: run \`threadline setup\`.`
      : '';
    throw new ThreadlineError(`Could not deliver the input: ${hint ? message.replace(/\.?$/, '.') : message}${hint}`, {
      cause: err,
    });
  }

  /** Whether the namespace has all of Threadline's search attributes (false when the server does not say). */
  private async searchAttributesRegistered(): Promise<boolean> {
    try {
      const state = await inspectSearchAttributes(this.temporal.connection, this.temporal.options.namespace);
      return state.missing.length === 0 && state.mismatched.length === 0;
    } catch {
      return false;
    }
  }

  /** Waits before the next resend and answers true, or answers false once `deliveryTimeoutMs` from `since` has passed. */
  private async waitToResend(since: number, attempt: number): Promise<boolean> {
    const left = since + this.deliveryTimeoutMs - Date.now();
    if (left <= 0) return false;
    await new Promise((r) => setTimeout(r, Math.min(left, 1_000, 10 * 2 ** attempt)));
    return true;
  }

  /**
   * Still refused at the deadline for a passing reason (`why`): a 503 with Retry-After, nothing delivered, safe to send
   * again with the same id.
   */
  private deadlineError(why: string, err: unknown): UnavailableError {
    return new UnavailableError(
      `Could not deliver the input: ${why}; still so after ${this.deliveryTimeoutMs} ms ` +
        '(THREADLINE_DELIVERY_TIMEOUT_MS). Nothing was delivered: send it again with the same id.',
      { cause: err, retryAfterSeconds: TASK_RETRY_AFTER_SECONDS },
    );
  }

  /** The thread's inbox, newest first, filtered and paged; `null` when the thread does not exist. */
  async listNotifications(target: ThreadTarget, query: NotificationQuery = {}): Promise<RecordPage | null> {
    const parsed = notificationQuerySchema.safeParse(query);
    if (!parsed.success) throw new ValidationError(`Invalid notification query: ${describeZodError(parsed.error)}`);
    return await this.read(
      target,
      (thread) => thread.query(notificationsQuery, parsed.data),
      // The query is always registered: the client reports its handler's refusal (a bad cursor) as "not registered",
      // with the refusal's message.
      (err) =>
        err instanceof QueryNotRegisteredError
          ? new ValidationError(err.message, { cause: err })
          : errorFromRefusal(err),
    );
  }

  /**
   * Reads the thread with a query: `null` when it does not exist. A query the query-task guard failed is asked again;
   * one refused while the thread's workflow task fails throws `UnavailableError` at once; `refusal` maps the rest.
   */
  private async read<T>(
    target: ThreadTarget,
    query: (thread: WorkflowHandle) => Promise<T>,
    refusal: (err: unknown) => Error | null = () => null,
  ): Promise<T | null> {
    try {
      return await retryGuardedQuery(() =>
        query(this.temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId))),
      );
    } catch (err) {
      if (isNotFound(err)) return null;
      throw refusal(err) ?? unreadableWhileTaskFails(err) ?? err;
    }
  }

  /** Records that left the thread's inbox beyond its bound (the bus keeps them), newest first. */
  async listArchivedNotifications(
    target: ThreadTarget,
    page: { limit?: number; cursor?: string } = {},
  ): Promise<ArchivePage> {
    const parsed = threadTargetSchema.safeParse({ resourceId: target.resourceId, threadId: target.threadId });
    if (!parsed.success) throw new ValidationError(`Invalid target: ${describeZodError(parsed.error)}`);
    const limit = page.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new ValidationError('Invalid page: limit must be a whole number from 1 to 200.');
    }
    try {
      return await this.bus.archived(threadKey(target.resourceId, target.threadId), { limit, cursor: page.cursor });
    } catch (err) {
      if (/Invalid cursor/.test((err as Error).message)) throw new ValidationError((err as Error).message);
      throw err;
    }
  }

  /** `seen` / `dismiss` / `archive` (behaviour §4.4). Unknown thread or record → NotFoundError. */
  async changeNotificationStatus(
    target: ThreadTarget,
    ids: string[],
    change: NotificationStatusRequest['change'],
  ): Promise<NotificationRecord[]> {
    const parsed = notificationStatusRequestSchema.safeParse({ ids, change });
    if (!parsed.success) throw new ValidationError(`Invalid request: ${describeZodError(parsed.error)}`);
    try {
      const result = await this.control(target, changeNotificationStatusUpdate, parsed.data);
      if (!result) throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}.`);
      return result;
    } catch (err) {
      throw errorFromRefusal(err) ?? err;
    }
  }

  async abortThread(target: ThreadTarget & { clearPendingSignals?: boolean }): Promise<AbortResult> {
    const request = { clearPendingSignals: target.clearPendingSignals === true };
    const result = await this.control(target, abortThreadUpdate, request);
    return result ?? { aborted: false, clearedSignalIds: [] };
  }

  async cancelQueuedMessages(
    target: ThreadTarget & { signalIds: string[] },
  ): Promise<{ cancelledSignalIds: string[] }> {
    const parsed = cancelQueuedRequestSchema.safeParse({ signalIds: target.signalIds });
    if (!parsed.success) throw new ValidationError(`Invalid request: ${describeZodError(parsed.error)}`);
    return (await this.control(target, cancelQueuedUpdate, parsed.data)) ?? { cancelledSignalIds: [] };
  }

  /**
   * Approves or declines the tool call a run is parked on (behaviour §2.4). Unknown thread or tool call → NotFoundError
   * (404); a call already decided → ConflictError (409).
   */
  async sendToolApproval(target: ThreadTarget & ToolApproval): Promise<ToolApprovalResult> {
    const { resourceId, threadId, ...approval } = target;
    const parsed = toolApprovalSchema.safeParse(approval);
    if (!parsed.success) throw new ValidationError(`Invalid tool approval: ${describeZodError(parsed.error)}`);
    try {
      const result = await this.control({ resourceId, threadId }, approveToolUpdate, parsed.data);
      if (!result) throw new NotFoundError(`No thread ${resourceId}/${threadId}: nothing waits for an approval.`);
      return result;
    } catch (err) {
      throw errorFromRefusal(err) ?? err;
    }
  }

  /** A control update on an existing thread; `null` when the thread does not exist (nothing to control). */
  private async control<R, A>(target: ThreadTarget, update: UpdateDefinition<R, [A]>, request: A): Promise<R | null> {
    const parsedTarget = threadTargetSchema.safeParse({ resourceId: target.resourceId, threadId: target.threadId });
    if (!parsedTarget.success) throw new ValidationError(`Invalid target: ${describeZodError(parsedTarget.error)}`);
    const handle = this.temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId));
    const since = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await handle.executeUpdate(update, { args: [request] });
      } catch (err) {
        if (!workflowTaskFailing(err)) return controlRefusal(err);
        if (!(await this.waitToResend(since, attempt))) throw this.deadlineError(TASK_RETRYING, err);
      }
    }
  }

  async getThread(target: ThreadTarget): Promise<ThreadView | null> {
    return await this.read(target, (thread) => thread.query(threadStateQuery));
  }

  async getMessages(
    target: ThreadTarget,
    page: { limit?: number; before?: string } = {},
  ): Promise<MessagesPage | null> {
    return await this.read(target, (thread) => thread.query(threadMessagesQuery, page));
  }

  subscribeToThread(target: ThreadTarget, options: SubscribeOptions = {}): ThreadSubscription {
    return subscribe(this.bus, threadKey(target.resourceId, target.threadId), options, async () => ({
      thread: await this.getThread(target),
      messages: (await this.getMessages(target, { limit: 20 }))?.messages ?? [],
    }));
  }

  /** The thread's steps (model calls) from its history, oldest first; `null` when the thread does not exist. */
  listSteps(target: ThreadTarget): Promise<StepList | null> {
    return listThreadSteps(this.temporal, target);
  }

  /** What the model received at the thread's step `step` (a worker replays the history: `./time-travel`). */
  inspectStep(target: ThreadTarget, step: number): Promise<StepPrompt> {
    return inspectThreadStep(this.temporal, target, step);
  }

  /** A new thread from `source` as it stood before step `request.atStep`, re-running that step; answers its view. */
  forkThread(source: ThreadTarget, request: ForkRequest): Promise<ThreadView> {
    return forkThread(this.temporal, source, request);
  }

  /** One page of threads from Temporal visibility, filtered by their search attributes (`./thread-list`). */
  listThreads(filters: ThreadListFilters = {}, options: ThreadListOptions = {}): Promise<ThreadListPage> {
    return listThreads(this.temporal, filters, options);
  }

  /** The agents workers announced on the bus (what `GET /api/agents` lists). */
  listAgents(): Promise<AgentSummary[]> {
    return this.bus.agents();
  }

  async close(): Promise<void> {
    await this.ownBus?.close();
    await this.ownConnection?.close();
  }
}

/** One agent's view of threads: the behaviour §6 client API. */
export class AgentClient {
  constructor(
    private readonly client: ThreadlineClient,
    readonly agentId: string,
  ) {}

  /** Joins the active run at the next step boundary, or starts a run. */
  async sendMessage(message: MessageInput, target: SendTarget, options: { id?: string } = {}): Promise<SendResult> {
    const input = messageInput(this.agentId, 'send', message, target, { ...options, limits: this.client.limits });
    return this.client.submit(target, input);
  }

  /** Runs after the active run finishes (in acceptance order), or starts a run when idle. */
  async queueMessage(message: MessageInput, target: SendTarget, options: { id?: string } = {}): Promise<SendResult> {
    const input = messageInput(this.agentId, 'queue', message, target, { ...options, limits: this.client.limits });
    return this.client.submit(target, input);
  }

  /**
   * System-generated context (behaviour §2.2): `reactive` (default tag `system-reminder`), `notification`, `user`.
   * `ifActive.behavior`: deliver | persist | discard | interrupt; `ifIdle.behavior`: wake | persist | discard.
   * @example await agent.sendSignal({ type: 'notification', contents: 'CI failed' }, { ...thread, ifIdle: { behavior: 'persist' } })
   */
  async sendSignal(signal: SignalInput, target: SendTarget, options: { id?: string } = {}): Promise<SendResult> {
    const input = signalInput(this.agentId, signal, target, { ...options, limits: this.client.limits });
    return this.client.submit(target, input);
  }

  /**
   * Keeps a state lane current (behaviour §3.1). The same cacheKey and mode as the lane's latest state → `skipped`
   * (`reason: 'unchanged'`); otherwise the lane's version goes up and the state is routed like a signal.
   * @example await agent.sendStateSignal({ id: 'browser', cacheKey: 'https://example.com:3-tabs', contents: 'Browser is open.' }, { ...thread, ifIdle: { behavior: 'persist' } })
   */
  async sendStateSignal(
    signal: StateSignalInput,
    target: SendTarget,
    options: { id?: string } = {},
  ): Promise<SendResult> {
    const input = stateInput(this.agentId, signal, target, { ...options, limits: this.client.limits });
    return this.client.submit(target, input);
  }

  /** Stops the active run (its model call and tools are cancelled). Queued runs go next unless `clearPendingSignals`. */
  abortThread(target: ThreadTarget & { clearPendingSignals?: boolean }): Promise<AbortResult> {
    return this.client.abortThread(target);
  }

  /**
   * Drops one or more notifications into the thread's inbox (behaviour §4). Records coalesce by dedupeKey/coalesceKey;
   * the agent's delivery policy decides what the model sees, and when.
   * @example await agent.sendNotificationSignal({ source: 'github', kind: 'ci-status', priority: 'high', summary: 'CI failed on main.', dedupeKey: 'github:acme/app:main:ci' }, thread)
   */
  sendNotificationSignal(
    notifications: NotificationInput | NotificationInput[],
    target: ThreadTarget,
    options: { id?: string } = {},
  ): Promise<NotificationSendResult> {
    const batch = notificationBatch(this.agentId, notifications, target, { ...options, limits: this.client.limits });
    return this.client.submitNotifications(target, batch);
  }

  /** The thread's inbox, newest first (filters: status, priority, source, q; paging: limit, cursor). */
  listNotifications(target: ThreadTarget, query?: NotificationQuery): Promise<RecordPage | null> {
    return this.client.listNotifications(target, query);
  }

  /** Records that left the inbox beyond `maxInboxRecords`, newest first (kept by the bus). */
  listArchivedNotifications(target: ThreadTarget, page?: { limit?: number; cursor?: string }): Promise<ArchivePage> {
    return this.client.listArchivedNotifications(target, page);
  }

  markNotificationsSeen(target: ThreadTarget, ids: string[]): Promise<NotificationRecord[]> {
    return this.client.changeNotificationStatus(target, ids, 'seen');
  }

  dismissNotifications(target: ThreadTarget, ids: string[]): Promise<NotificationRecord[]> {
    return this.client.changeNotificationStatus(target, ids, 'dismiss');
  }

  archiveNotifications(target: ThreadTarget, ids: string[]): Promise<NotificationRecord[]> {
    return this.client.changeNotificationStatus(target, ids, 'archive');
  }

  /** Approves or declines a tool call the run is parked on; the answer continues on the existing subscriptions. */
  sendToolApproval(target: ThreadTarget & ToolApproval): Promise<ToolApprovalResult> {
    return this.client.sendToolApproval(target);
  }

  /** Removes not-yet-started queued messages; returns the ids actually removed. */
  cancelQueuedMessages(target: ThreadTarget & { signalIds: string[] }): Promise<{ cancelledSignalIds: string[] }> {
    return this.client.cancelQueuedMessages(target);
  }

  subscribeToThread(target: ThreadTarget, options?: SubscribeOptions): ThreadSubscription {
    return this.client.subscribeToThread(target, options);
  }

  getThread(target: ThreadTarget): Promise<ThreadView | null> {
    return this.client.getThread(target);
  }
}

/**
 * Returns the Threadline client. Given no Temporal `client`, it connects with the settings it loads from
 * `process.env` (and the temporal.toml profile it names), as the `temporal` CLI does; it reads nothing else from the
 * environment. Invalid settings throw a `SettingsError` naming the variable.
 * @example const client = await connect(); await client.agent('assistant').sendMessage('hi', { resourceId: 'u1', threadId: 't1' });
 */
export async function connect(options: ConnectOptions = {}): Promise<ThreadlineClient> {
  checkConnectOptions(options);
  if (options.client) return new ThreadlineClient(options.client, options, null);
  const { temporal: settings, address } = temporalConnectionFromEnv(process.env);
  const connection = await Connection.connect(
    threadlineConnectionOptions(temporalConnectionOptions(settings, options.address ?? address)),
  );
  const temporal = new Client({ connection, namespace: options.namespace ?? settings.namespace });
  return new ThreadlineClient(temporal, { ...options, taskQueue: options.taskQueue ?? settings.taskQueue }, connection);
}

/** Why an input was still refused at the deadline (`deadlineError`). */
const TASK_RETRYING =
  "the thread's workflow task is being retried (a worker stopped while holding it, or it keeps failing) and Temporal " +
  'refuses inputs until it completes';
const UPDATE_UNPROCESSED =
  'Temporal handed the update back unprocessed (`UnprocessedUpdate`: a workflow task that carried it completed ' +
  'without accepting or refusing it)';

/** The thread's typed refusal inside an update failure, if it is one. */
function refusalOf(err: unknown): { type: FailureType; message: string; details: unknown } | null {
  const cause = err instanceof WorkflowUpdateFailedError ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || !isFailureType(cause.type)) return null;
  return { type: cause.type, message: cause.message, details: cause.details?.[0] };
}

/**
 * The server turned the update back without the workflow seeing it (`UnprocessedUpdate`: a workflow task that carried
 * it completed without accepting or rejecting it). Nothing was recorded; the same update may be sent again.
 */
function unprocessedUpdate(err: WorkflowUpdateFailedError): boolean {
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === 'UnprocessedUpdate') return true;
  return /wasn't processed by worker/.test(cause?.message ?? err.message);
}

/** The client error for a refusal, by its type: the one place failure types become error classes. */
function errorFromRefusal(err: unknown): ThreadlineError | null {
  const refusal = refusalOf(err);
  if (!refusal) return null;
  const options = { cause: err };
  switch (refusal.type) {
    case 'InvalidInput':
    case 'InvalidCursor':
      return new ValidationError(refusal.message, options);
    case 'ToolCallNotFound':
    case 'NotificationNotFound':
      return new NotFoundError(refusal.message, options);
    case 'InputTooLarge':
      return new PayloadTooLargeError(refusal.message, options);
    case 'InputRejected':
    case 'ToolCallDecided':
    case 'UnchangedState':
      return new ConflictError(refusal.message, options);
  }
}

/** A control update's failure: `null` when the thread does not exist, else the client error thrown. */
function controlRefusal(err: unknown): null {
  if (isNotFound(err) || (err as Error).name === 'WorkflowNotFoundError') return null;
  if (err instanceof WorkflowUpdateFailedError) {
    const message = (err.cause as Error | undefined)?.message ?? err.message;
    throw errorFromRefusal(err) ?? new ValidationError(message, { cause: err });
  }
  throw err;
}

/** The validator refused a state identical to its lane's latest: skipped, and never in history. */
function unchangedState(err: unknown, signalId: string): InputResult | null {
  const refusal = refusalOf(err);
  if (refusal?.type !== 'UnchangedState') return null;
  const { version } = refusal.details as FailureDetails['UnchangedState'];
  return { accepted: true, action: 'skipped', reason: 'unchanged', signalId, version };
}

/** Threads a client remembers as running, by default (`ConnectOptions.knownThreads`). */
export const DEFAULT_KNOWN_THREADS = 10_000;

/** Refuses bad options with a `ValidationError` naming them; answers the delivery timeout and known-thread bound. */
function checkConnectOptions(options: ConnectOptions): { deliveryTimeoutMs: number; knownThreads: number } {
  checkInputDepthBound(options.limits?.maxInputDepth, 'limits.maxInputDepth');
  checkInputDepthBound(options.threadConfig?.maxInputDepth, 'threadConfig.maxInputDepth');
  const deliveryTimeoutMs = options.deliveryTimeoutMs ?? definitions.deliveryTimeoutMs.default;
  if (!Number.isInteger(deliveryTimeoutMs) || deliveryTimeoutMs < 1) {
    throw new ValidationError(
      `Invalid deliveryTimeoutMs: ${String(deliveryTimeoutMs)}. Use a whole number of milliseconds, at least 1.`,
    );
  }
  const knownThreads = options.knownThreads ?? DEFAULT_KNOWN_THREADS;
  if (!Number.isInteger(knownThreads) || knownThreads < 0) {
    throw new ValidationError(`Invalid knownThreads: ${String(knownThreads)}. Use a whole number, at least 0.`);
  }
  return { deliveryTimeoutMs, knownThreads };
}

function isNotFound(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === GrpcStatus.NOT_FOUND);
}

/** The server refused a search attribute it has no mapping for (one of Threadline's: the start's ThreadlineResource). */
function unmappedSearchAttribute(err: unknown): boolean {
  return /no mapping defined for search attribute Threadline/.test(messagesOf(err));
}

function isRetryableRpc(err: unknown): boolean {
  const cause = (err as { cause?: unknown })?.cause ?? err;
  const code = isGrpcServiceError(cause) ? cause.code : isGrpcServiceError(err) ? err.code : undefined;
  return code === GrpcStatus.RESOURCE_EXHAUSTED || code === GrpcStatus.UNAVAILABLE || code === GrpcStatus.ABORTED;
}
