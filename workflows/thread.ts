/**
 * threadWorkflow: one execution chain per thread. Handlers validate and record; one main loop decides.
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxySinks,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { NotificationBatch, ThreadInput } from '../protocol/schemas';
// Not the zod schemas: every workflow context evaluates its modules, and zod costs tens of milliseconds there.
import {
  describeIssues,
  validateAbortRequest,
  validateCancelQueuedRequest,
  validateInboxToolInput,
  validateNotificationBatch,
  validateNotificationQuery,
  validateNotificationStatusRequest,
  validateThreadInput,
  validateToolApproval,
  type PayloadIssue,
  type PayloadValidator,
} from '../protocol/validate';
import {
  abortThreadUpdate,
  approveToolUpdate,
  changeNotificationStatusUpdate,
  notificationsQuery,
  sendNotificationSignal,
  submitNotificationsUpdate,
  cancelQueuedUpdate,
  queueMessageSignal,
  sendMessageSignal,
  sendSignalSignal,
  submitInputUpdate,
  threadMessagesQuery,
  stepWindowQuery,
  threadStateQuery,
} from '../protocol/definitions';
import type { AgentProfile } from '../protocol/agent-profile';
import type { StepResult, ToolCall, ToolResultPart } from '../protocol/messages';
import { threadKey } from '../protocol/ids';
import { ThreadRefusal } from '../protocol/failures';
import type { ThreadWorkflowArgs as BaseWorkflowArgs } from '../protocol/thread-config';
import {
  emptySnapshot,
  openGates,
  ThreadState,
  type RunState,
  type NotificationSettings,
  type ToolWait,
  type ThreadSnapshot,
} from './state';
import { resolveThreadConfig } from '../protocol/thread-config';
import type { StepInput, StepPlan } from '../protocol/step';
import { StepWindows } from './state/step-window';
import {
  archiveSummary,
  decideSummary,
  describeAgentSummary,
  publishSummary,
  stepSummary,
  toolSummary,
} from '../protocol/summaries';
import { LOOP_STAMPS_LAST_INPUT_PATCH, SearchAttributeSync } from './search-attributes';
import type { ThreadlineSinks } from './sinks';
import { captureBeforeStep, captureStepPlan, captureStepResult } from './inspection';
import { installQueryTaskGuard } from './query-task-guard';

type Activities = ReturnType<typeof createActivities>;

export type ThreadWorkflowArgs = BaseWorkflowArgs<ThreadSnapshot>;

/**
 * `patched()` id: inputs that persist or discard whatever the thread's state are routed so also while another agent's
 * run is active and while the run's pending inputs are at their limit (workflows/state/snapshot.ts `ThreadGates`).
 */
export const STATE_INDEPENDENT_ACTIONS_PATCH = 'state-independent-actions';

/**
 * `patched()` id: a signalled input (or notification) nested deeper than the thread's `maxInputDepth` is dropped as
 * an invalid payload; histories from before took it. Asked only for such a signal.
 */
export const INPUT_DEPTH_PATCH = 'input-depth';

/**
 * `patched()` id: the main loop lets every answer the activation's update handlers have queued go out before it acts
 * (`settle()`), so its commands follow them however sdk-core grouped the updates into activations. Asked once, as
 * the workflow starts: its marker is then the first task's command, never racing a handler, and a first task with a
 * command is never merged into the next one (see the main loop).
 */
export const SETTLE_BEFORE_ACTING_PATCH = 'settle-before-acting';

/** Events per publish activity, in JSON bytes: far below Temporal's 2 MB payload limit. */
const PUBLISH_BUDGET_BYTES = 256 * 1024;

/** The workflow clock: deterministic inside the sandbox (it is the time of the current workflow task). */
function workflowNow(): number {
  return new Date().getTime();
}

/**
 * Resolves once the microtasks the activation has queued so far have run: an update handler's answer (its
 * completion command) is issued a few microtasks after the handler returned, and every one queued before this call
 * goes out before the code after it runs. `condition()` evaluates its predicate at once and then only between
 * rounds of microtasks, so a predicate that is false the first time and true after is exactly that barrier. It
 * needs no timer, no command and no workflow task. Call it from a continuation (after an `await`): called inside the
 * workflow function itself, the SDK checks conditions again before those microtasks run, and it would not wait.
 */
function settle(): Promise<void> {
  let asked = false;
  return condition(() => {
    const settled = asked;
    asked = true;
    return settled;
  });
}

export async function threadWorkflow(args: ThreadWorkflowArgs): Promise<void> {
  // Before anything else: an activation a query task made up is failed before workflow code sees it (issue #14).
  installQueryTaskGuard();
  // Before any handler is registered: updates that come with the first activation run inside `setHandler`.
  const settleBeforeActing = patched(SETTLE_BEFORE_ACTING_PATCH);
  const loopStampsLastInput = patched(LOOP_STAMPS_LAST_INPUT_PATCH);
  const config = resolveThreadConfig(args.config);
  const thread = new ThreadState(
    args.snapshot ?? emptySnapshot(args.resourceId, args.threadId),
    config,
    { now: workflowNow, newId: uuid4 },
    {
      stateIndependentActions: () => patched(STATE_INDEPENDENT_ACTIONS_PATCH),
      boundedInputDepth: () => patched(INPUT_DEPTH_PATCH),
    },
  );
  const searchAttributes = new SearchAttributeSync(thread, {
    loopStamps: loopStampsLastInput,
    lastInputResolutionMs: config.lastInputResolutionMs,
    now: workflowNow,
  });
  const key = threadKey(args.resourceId, args.threadId);
  let updatesSeen = 0;
  let signalsSeen = 0;

  const { runStep } = proxyActivities<Activities>({
    heartbeatTimeout: config.step.heartbeatTimeoutMs,
    startToCloseTimeout: config.step.startToCloseTimeoutMs,
    // Wait for the step to acknowledge cancellation so its last chunks precede `step-interrupted`.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: config.step.maxAttempts, initialInterval: config.step.initialRetryMs },
  });
  // Tells the worker that runs a step, over the bus, that its cancellation is on the way (workflows/sinks.ts).
  const { threadlineSteps } = proxySinks<ThreadlineSinks>();
  const { runTool } = proxyActivities<Activities>({
    startToCloseTimeout: config.tool.startToCloseTimeoutMs,
    retry: { maximumAttempts: config.tool.maxAttempts },
  });
  const agentCallOptions = {
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
  } as const;
  // Regular activities, not local ones: a local activity runs inside the workflow task, so when the server drops
  // that task (it happens under bursts of updates) events of decisions that were never committed reach subscribers;
  // and a local activity awaited by an update handler while the dispatcher runs replayed its result at a different
  // point than it arrived. A regular activity is scheduled only by a committed task.
  const { describeAgent, decideNotifications } = proxyActivities<Activities>(agentCallOptions);
  const { publishEvents, archiveNotifications } = proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 20, initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
  });

  // Asked once per agent per execution (a deploy that changes an agent reaches threads at their next execution).
  const profiles = new Map<string, Promise<AgentProfile | null>>();
  // Not `async`: a wrapper would add promises to every workflow task that runs a step (docs/performance.md).
  const profileOf = (agentId: string): Promise<AgentProfile | null> => {
    // One request per agent, shared by every handler that needs it meanwhile.
    let profile = profiles.get(agentId);
    // The starting client's copy of what the worker announced saves the round trip (this execution only: the next
    // one asks, so a deploy that changes an agent reaches the thread at its next execution).
    const given = args.profiles?.[agentId];
    if (!profile && given) profiles.set(agentId, (profile = Promise.resolve(given)));
    if (!profile) {
      profile = describeAgent
        .executeWithOptions({ summary: describeAgentSummary(agentId) }, [agentId])
        .catch((err: Error) => {
          log.warn('Could not describe the agent; using the thread defaults', { agentId, error: err.message });
          return null;
        });
      profiles.set(agentId, profile);
    }
    return profile;
  };

  // Signals never throw: a bad payload is logged and dropped, the thread untouched.
  const onSignal = (name: string) => (raw: unknown) => {
    signalsSeen += 1;
    const parsed = validateThreadInput(raw);
    if (!parsed.success) {
      log.warn(`Dropped invalid ${name} payload`, { error: describeIssues(parsed.issues) });
      return;
    }
    const input = withDelivery(parsed.data, name);
    try {
      thread.validate(input);
    } catch (err) {
      if (err instanceof ThreadRefusal && err.type === 'UnchangedState') return; // skipped: the lane has this state
      log.warn(droppedLine(name, err, `input ${input.id}`), { error: (err as Error).message });
      return;
    }
    thread.accept(input);
  };
  // Update handlers that ran since the main loop last acted, and those still running (one awaits an activity): the
  // loop lets their answers out before it acts (`settle()`), and skips that round of condition checks when there are
  // none, as in a task that only completes a step (docs/performance.md).
  let updatesToSettle = false;
  let updatesRunning = 0;
  const updateHandler =
    <A extends unknown[], R>(handler: (...args: A) => R) =>
    (...args: A): R => {
      updatesSeen += 1;
      updatesToSettle = true;
      updatesRunning += 1;
      let result: R;
      try {
        result = handler(...args);
      } catch (err) {
        updatesRunning -= 1;
        throw err;
      }
      if (!(result instanceof Promise)) {
        updatesRunning -= 1;
        return result;
      }
      return result.finally(() => {
        updatesRunning -= 1;
        updatesToSettle = true;
      }) as R;
    };
  setHandler(sendMessageSignal, onSignal('sendMessage'));
  setHandler(queueMessageSignal, onSignal('queueMessage'));
  setHandler(sendSignalSignal, onSignal('sendSignal'));

  setHandler(
    submitInputUpdate,
    updateHandler((input) => refuseWith(() => thread.accept(input))),
    {
      validator: (raw) =>
        refuseWith(() => {
          validateControl(validateThreadInput, raw);
          thread.validate(raw, openGates);
        }),
    },
  );
  setHandler(
    abortThreadUpdate,
    updateHandler((request) => thread.requestAbort(request?.clearPendingSignals === true)),
    { validator: (request) => refuseWith(() => validateControl(validateAbortRequest, request)) },
  );
  setHandler(
    cancelQueuedUpdate,
    updateHandler((request) => ({ cancelledSignalIds: thread.cancelQueued(request.signalIds) })),
    { validator: (request) => refuseWith(() => validateControl(validateCancelQueuedRequest, request)) },
  );
  setHandler(
    approveToolUpdate,
    updateHandler((approval) => refuseWith(() => thread.decideApproval(approval))),
    {
      validator: (raw) =>
        refuseWith(() => {
          validateControl(validateToolApproval, raw);
          thread.validateApproval(raw);
        }),
    },
  );
  /** The agent's policy for a send, and its `decide()` answers when it has one (user code: a local activity). */
  const notificationSettings = async (batch: NotificationBatch): Promise<NotificationSettings> => {
    const profile = await profileOf(batch.agentId);
    const settings: NotificationSettings = {};
    const n = profile?.notifications;
    if (!n) return settings;
    if (n.deliveryPolicy) settings.policy = n.deliveryPolicy;
    if (n.digestWindowMs !== undefined) settings.digestWindowMs = n.digestWindowMs;
    if (n.hasDecide) {
      settings.decided = await decideNotifications.executeWithOptions(
        { summary: decideSummary(batch.notifications.length, batch.agentId) },
        [batch.agentId, batch.notifications, { ...thread.key, threadState: thread.isActive() ? 'active' : 'idle' }],
      );
    }
    return settings;
  };
  setHandler(
    submitNotificationsUpdate,
    updateHandler(async (batch) => thread.acceptNotifications(batch, await notificationSettings(batch))),
    {
      validator: (raw) =>
        refuseWith(() => {
          validateControl(validateNotificationBatch, raw);
          thread.validateNotifications(raw, openGates);
        }),
    },
  );
  setHandler(sendNotificationSignal, async (raw) => {
    signalsSeen += 1;
    const parsed = validateNotificationBatch(raw);
    if (!parsed.success) {
      log.warn('Dropped invalid sendNotification payload', { error: describeIssues(parsed.issues) });
      return;
    }
    try {
      thread.validateNotifications(parsed.data);
    } catch (err) {
      log.warn(droppedLine('sendNotification', err, `notifications ${parsed.data.id}`), {
        error: (err as Error).message,
      });
      return;
    }
    thread.acceptNotifications(parsed.data, await notificationSettings(parsed.data));
  });
  setHandler(
    changeNotificationStatusUpdate,
    updateHandler((request) => refuseWith(() => thread.changeNotificationStatus(request))),
    {
      validator: (raw) =>
        refuseWith(() => {
          validateControl(validateNotificationStatusRequest, raw);
          thread.validateStatusChange(raw);
        }),
    },
  );
  setHandler(notificationsQuery, (raw) => {
    const parsed = validateNotificationQuery(raw ?? {});
    if (!parsed.success) throw invalidInput(parsed.issues);
    return refuseWith(() => thread.listNotifications(parsed.data));
  });
  setHandler(threadStateQuery, () => thread.view());
  setHandler(threadMessagesQuery, ({ limit = 50, before } = {}) => {
    const all = thread.messages;
    const end = before ? all.findIndex((m) => m.id === before) : all.length;
    const stop = end < 0 ? all.length : end;
    const start = Math.max(0, stop - limit);
    return { messages: all.slice(start, stop), hasMore: start > 0 };
  });

  const wantsContinueAsNew = (): boolean => {
    const info = workflowInfo();
    return (
      info.continueAsNewSuggested ||
      info.historyLength >= config.continueAsNewAfterEvents ||
      updatesSeen >= config.maxUpdatesPerExecution ||
      signalsSeen >= config.maxSignalsPerExecution
    );
  };

  let publishBackoffMs = 1_000;
  /** Publishes the oldest events; false when the bus is down (the events stay in the outbox, in order). */
  const publish = async (): Promise<boolean> => {
    const events = thread.takeOutbox(PUBLISH_BUDGET_BYTES);
    if (events.length === 0) return true;
    try {
      await publishEvents.executeWithOptions({ summary: publishSummary(events.length) }, [key, events]);
      publishBackoffMs = 1_000;
      return true;
    } catch (err) {
      // The bus is down beyond the local activity's retries: keep the events, in order, and try again later.
      // Failing here would fail the thread's workflow; an outage of the stream must not cost the conversation.
      log.warn('Publishing events failed; retrying', { error: (err as Error).message, backoffMs: publishBackoffMs });
      thread.restoreOutbox(events);
      await sleep(publishBackoffMs);
      publishBackoffMs = Math.min(publishBackoffMs * 2, 60_000);
      return false;
    }
  };

  type ToolStep = Pick<StepPlan, 'runId' | 'agentId' | 'stepKey'>;

  /**
   * One tool call as its own activity. A call that failed for good (timed out, retries used up) or was cancelled by
   * an abort is an error result the model reads: every tool call keeps its result, and the workflow never fails.
   */
  const runOneTool = async (
    plan: ToolStep,
    call: ToolCall,
    cancelWhen: () => boolean,
    resumeData?: unknown,
  ): Promise<ToolResultPart> => {
    if (call.builtin === 'notification-inbox') return runInboxTool(plan, call);
    try {
      return await cancellable(cancelWhen, () =>
        runTool.executeWithOptions({ summary: toolSummary(call.toolName) }, [
          {
            threadKey: key,
            runId: plan.runId,
            agentId: plan.agentId,
            call,
            ...thread.key,
            ...(resumeData !== undefined ? { resumeData } : {}),
          },
        ]),
      );
    } catch (err) {
      const reason = isCancellation(err)
        ? 'the run was aborted'
        : (((err as Error).cause as Error | undefined)?.message ?? (err as Error).message);
      return toolError(plan, call, `Tool ${call.toolName} failed: ${reason}`);
    }
  };

  /** The inbox tool works on the thread's own state, so the workflow runs it: no activity, no race. */
  const runInboxTool = (plan: ToolStep, call: ToolCall): ToolResultPart => {
    const parsed = validateInboxToolInput(call.input);
    if (!parsed.success) return toolError(plan, call, `Invalid input: ${describeIssues(parsed.issues)}`);
    try {
      const output = thread.inboxTool(parsed.data);
      const result: ToolResultPart = {
        type: 'tool-result',
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output,
      };
      thread.emit('tool-result', result, plan.runId);
      return result;
    } catch (err) {
      return toolError(plan, call, (err as Error).message);
    }
  };

  const toolError = (plan: ToolStep, call: ToolCall, output: string): ToolResultPart => {
    const failed: ToolResultPart = {
      type: 'tool-result',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      output,
      isError: true,
    };
    thread.emit('tool-result', failed, plan.runId);
    return failed;
  };

  /** Records that left the inbox go to the bus's archive; while it is down they wait in the thread. */
  const archive = async (): Promise<void> => {
    const records = thread.takeEvicted();
    try {
      await archiveNotifications.executeWithOptions({ summary: archiveSummary(records.length) }, [key, records]);
    } catch (err) {
      log.warn('Archiving notifications failed; retrying', { error: (err as Error).message });
      thread.restoreEvicted(records);
      await sleep(5_000);
    }
  };

  const runToolCalls = async (plan: StepPlan, result: StepResult, cancelWhen: () => boolean): Promise<void> => {
    const results = await Promise.all(result.toolCalls.map((call) => runOneTool(plan, call, cancelWhen)));
    thread.recordToolResults(plan, results);
  };

  /** The step's parked calls, every approval decided: approved ones and those that needed none run; declined ones answer. */
  const runDecidedTools = async (run: RunState, wait: ToolWait): Promise<void> => {
    const plan: ToolStep = { runId: run.runId, agentId: run.agentId, stepKey: wait.stepKey };
    const results = await Promise.all(
      wait.calls.map(({ call, approval }) =>
        approval?.status === 'declined'
          ? Promise.resolve(toolError(plan, call, approval.declineReason!))
          : runOneTool(plan, call, () => run.abortRequested === true, approval?.resumeData),
      ),
    );
    thread.recordToolResults(plan, results);
    if (run.abortRequested) {
      thread.abortRun();
      return;
    }
    if (!thread.shouldContinue({ toolCalls: wait.calls.map((c) => c.call) })) thread.finishRun('max-steps');
  };

  /**
   * Runs `fn` in a scope that is cancelled as soon as `cancelWhen()` holds (then `onCancel` runs). One condition, for
   * the whole execution, watches every such scope in flight (`cancelWatcher` below): a condition per call cost every
   * step its promises and, once the step settled, one more round of condition checks (docs/performance.md).
   */
  const cancellable = async <T>(cancelWhen: () => boolean, fn: () => Promise<T>, onCancel?: () => void): Promise<T> => {
    const watch: Watched = { cancelWhen, scope: new CancellationScope(), onCancel };
    watched.add(watch);
    try {
      return await watch.scope.run(fn);
    } finally {
      watched.delete(watch);
    }
  };
  interface Watched {
    cancelWhen: () => boolean;
    scope: CancellationScope;
    onCancel?: () => void;
  }
  const watched = new Set<Watched>();
  const anyDue = (): boolean => {
    for (const watch of watched) if (watch.cancelWhen()) return true;
    return false;
  };
  const cancelWatcher = async (): Promise<never> => {
    for (;;) {
      await condition(anyDue);
      for (const watch of [...watched]) {
        if (!watch.cancelWhen()) continue;
        watched.delete(watch);
        watch.scope.cancel();
        watch.onCancel?.();
      }
    }
  };

  // The window travels as what changed since the previous step's (protocol/step.ts `StepWindow`): a step's input and
  // its history stay the same size however long the conversation grows.
  const windows = new StepWindows();
  setHandler(stepWindowQuery, (stepKey) => {
    const window = windows.windowOf(stepKey);
    if (!window) throw new Error(`Step ${stepKey} is not in flight.`);
    return [...window];
  });
  const stepInput = ({ messages, ...plan }: StepPlan): StepInput => ({
    ...plan,
    window: windows.send(plan.stepKey, messages),
    threadKey: key,
    resourceId: args.resourceId,
    threadId: args.threadId,
  });

  const step = async (): Promise<void> => {
    const run = thread.run!;
    if (run.abortRequested) {
      thread.abortRun();
      return;
    }
    const decided = thread.takeDecidedTools();
    if (decided) {
      // The decisions' events go out before any tool runs (a tool's result is published by its own activity).
      await publish();
      await runDecidedTools(run, decided);
      return;
    }
    // A burst of handler events (a thousand notifications) goes out before the step, in budget-sized batches: the
    // step publishes what is left ahead of its own events, so the order holds and its input stays small.
    while (thread.outboxExceeds(PUBLISH_BUDGET_BYTES)) await publish();
    const profile = await profileOf(run.agentId);
    captureBeforeStep(() => thread.snapshot()); // time travel: no-ops outside an inspection replay
    const plan = thread.planStep({ contextWindow: profile?.contextWindow, ownedLanes: profile?.ownedLanes });
    captureStepPlan(plan);
    let result: StepResult;
    try {
      // An interrupt or an abort cancels the model call: the provider request is aborted by the activity.
      result = await cancellable(
        () => run.interruptRequested || run.abortRequested === true,
        () => runStep.executeWithOptions({ summary: stepSummary(plan) }, [stepInput(plan)]),
        // The cancellation stays the decision; the notice only lets the step's worker stop the model call sooner.
        () => threadlineSteps.cancelRequested({ threadKey: key, stepKey: plan.stepKey }),
      );
    } catch (err) {
      // The step may not have published the events that precede it; publishing is idempotent by key, so send them
      // (again) before anything else.
      thread.restoreOutbox(plan.preEvents);
      if (isCancellation(err) && run.abortRequested) {
        thread.interruptStep(plan);
        thread.abortRun();
      } else if (isCancellation(err) && run.interruptRequested) {
        // Nothing of the cancelled step is kept; the interrupting input is pending, so a fresh step follows.
        thread.interruptStep(plan);
      } else {
        log.error('Step failed', { runId: plan.runId, error: (err as Error).message });
        thread.finishRun('error', (err as Error).message);
      }
      return;
    }
    captureStepResult(plan, result);
    thread.completeStep(plan, result);
    // A tool that needs approval parks the run (behaviour §2.4); the main loop resumes it once a human decided.
    if (thread.parkTools(plan, result)) return;
    if (result.toolCalls.length > 0) {
      // Tools finish even when interrupted (their results belong to the step); only an abort cancels them.
      await runToolCalls(plan, result, () => run.abortRequested === true);
      if (run.abortRequested) {
        thread.abortRun();
        return;
      }
    }
    if (!thread.shouldContinue(result)) {
      thread.finishRun(result.toolCalls.length > 0 ? 'max-steps' : 'stop');
    }
  };

  // One durable timer for the earliest deadline (an approval timeout, a deferred notification, a digest), re-armed
  // only when that deadline changes: due in three hours means three hours, across any number of worker restarts.
  interface ArmedTimer {
    at: number;
    fired: boolean;
    scope: CancellationScope;
  }
  let timer = null as ArmedTimer | null;
  const armTimer = (at: number | undefined): void => {
    if (timer && !timer.fired && timer.at === at) return;
    if (timer && !timer.fired) timer.scope.cancel();
    timer = null;
    if (at === undefined) return;
    const armed: ArmedTimer = { at, fired: false, scope: new CancellationScope() };
    armed.scope
      .run(() => sleep(Math.max(1, at - workflowNow())))
      .then(
        () => (armed.fired = true),
        () => undefined, // cancelled: a nearer deadline replaced it
      );
    timer = armed;
  };
  const earliest = (...times: (number | undefined)[]): number | undefined => {
    const set = times.filter((t): t is number => t !== undefined);
    return set.length > 0 ? Math.min(...set) : undefined;
  };
  // The dispatcher runs beside the main loop, so what is due goes out on time even while a step is in flight: a
  // digest or a deferred notification then joins the run at its next step boundary, retries keep their schedule.
  const nextDeadline = () => earliest(thread.approvalDeadline(), thread.nextNotificationDeadline());
  const dispatcher = async (): Promise<never> => {
    for (;;) {
      const next = nextDeadline();
      armTimer(next);
      await condition(() => timer?.fired === true || thread.hasDueNotifications() || nextDeadline() !== next);
      if (timer?.fired) timer = null;
      thread.expireApprovals();
      thread.dispatchNotifications();
    }
  };
  // A cancelled workflow (`temporal workflow cancel`) cancels every scope: the main loop's wait ends the execution as
  // cancelled, and the dispatcher's must not be an unhandled rejection (it would fail every workflow task after).
  // Anything else it throws stays unhandled: a bug fails the workflow task until a fixed worker replays it.
  void dispatcher().catch((err: unknown) => {
    if (!isCancellation(err)) throw err;
  });
  void cancelWatcher().catch((err: unknown) => {
    if (!isCancellation(err)) throw err;
  });

  const ready = () => thread.hasWork() || wantsContinueAsNew();
  for (let first = true; ; first = false) {
    // A condition that already holds costs its promises and resolves at once: later iterations wait only when there is
    // nothing to do. Not the first: it runs inside the workflow function, where `settle()` is a barrier only after this
    // wait (see settle()); nor in executions from before `settle()`, which acted after this wait's microtasks.
    if (first || !settleBeforeActing || !ready()) await condition(ready);
    // Updates answer before the loop acts on them, however sdk-core grouped them. A new worker that takes a thread
    // with its whole history, where no task has completed with a command yet, takes the first task for a "workflow
    // task heartbeat" and runs its `initializeWorkflow` with the current task's updates (sdk-core 1.24,
    // history_update.rs `find_end_index_of_next_wft_seq`): they run inside `setHandler`, and their answers are queued
    // before the loop wakes. Replay ends that sequence at the update's sequencing event and hands the updates over in
    // an activation of their own, where the loop wakes after the first: its commands went out between two answers,
    // and the history did not replay (issue #14, test/workflow/updates-on-new-worker.test.ts).
    if (settleBeforeActing && (updatesToSettle || updatesRunning > 0)) {
      updatesToSettle = false;
      await settle();
    }
    if (wantsContinueAsNew()) break;
    if (!thread.run && thread.startNextQueued()) continue;
    // What the handlers and the last iteration changed, in one upsert (only when a value changed).
    searchAttributes.sync();
    if (thread.run && (!thread.isParked() || thread.run.abortRequested)) await step();
    else if (thread.outboxSize > 0 || thread.evictedCount === 0) await publish();
    else await archive();
  }

  // Continue-as-new only between steps, after every handler finished, with the outbox flushed: nothing is lost, and
  // the next execution's input stays small (events of handlers that finished meanwhile are published too).
  await publish();
  await condition(allHandlersFinished);
  // Until what is left fits one publish (it converges: a record's unpublished announcements collapse into one), and
  // not while the bus is down: then the rest travels in the snapshot.
  while (thread.outboxExceeds(PUBLISH_BUDGET_BYTES)) {
    if (!(await publish())) break;
    await condition(allHandlersFinished);
  }
  // The next execution starts with the attributes this one has (the server carries them over): current ones.
  searchAttributes.sync();
  await continueAsNew<typeof threadWorkflow>({
    resourceId: args.resourceId,
    threadId: args.threadId,
    config: args.config,
    snapshot: thread.snapshot(),
  });
}

/** Update validators refuse with a typed failure: the update is refused and never reaches history. */
function validateControl(validate: PayloadValidator<unknown>, raw: unknown): void {
  const parsed = validate(raw);
  if (!parsed.success) throw invalidInput(parsed.issues);
}

function invalidInput(found: readonly PayloadIssue[]): ApplicationFailure {
  const issues = describeIssues(found);
  return ApplicationFailure.create({
    type: 'InvalidInput',
    message: `Invalid input: ${issues}`,
    details: [{ issues }],
    nonRetryable: true,
  });
}

/**
 * Runs `fn`; a refusal of the thread's state code leaves as an `ApplicationFailure` of the same type and details, so
 * callers in any language branch on `type`.
 */
/** A dropped signal's log line: `Dropped invalid <name> payload` for an invalid one (too deep), as the validators'. */
function droppedLine(name: string, err: unknown, what: string): string {
  const invalid = err instanceof ThreadRefusal && err.type === 'InvalidInput';
  return invalid ? `Dropped invalid ${name} payload` : `Dropped ${name} ${what}`;
}

function refuseWith<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ThreadRefusal) {
      throw ApplicationFailure.create({
        type: err.type,
        message: err.message,
        details: [err.details],
        nonRetryable: true,
      });
    }
    throw err;
  }
}

function withDelivery(input: ThreadInput, signalName: string): ThreadInput {
  if (signalName === 'queueMessage') return { ...input, delivery: 'queue' };
  if (signalName === 'sendMessage') return { ...input, delivery: 'send' };
  return input;
}
