/**
 * threadWorkflow: one execution chain per thread. Handlers validate and record; one main loop decides.
 */
import {
  ActivityCancellationType,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { z } from 'zod';
import type { EventDraft } from '../client/bus/types';
import type { createActivities } from '../activities';
import {
  abortRequestSchema,
  cancelQueuedRequestSchema,
  describeZodError,
  threadInputSchema,
  toolApprovalSchema,
  type ThreadInput,
} from '../client/schemas';
import {
  abortThreadUpdate,
  approveToolUpdate,
  cancelQueuedUpdate,
  queueMessageSignal,
  sendMessageSignal,
  sendSignalSignal,
  submitInputUpdate,
  threadMessagesQuery,
  threadStateQuery,
} from './definitions';
import type { AgentProfile } from './agent-profile';
import type { StepResult, ToolCall, ToolResultPart } from './messages';
import { threadKey } from './ids';
import {
  emptySnapshot,
  resolveThreadConfig,
  ThreadState,
  type RunState,
  type StepPlan,
  type ThreadConfigInput,
  type ToolWait,
  type ThreadSnapshot,
  UnchangedStateError,
} from './thread-state';

type Activities = ReturnType<typeof createActivities>;

export interface ThreadWorkflowArgs {
  resourceId: string;
  threadId: string;
  config?: ThreadConfigInput;
  /** Set by continue-as-new: the thread as the previous execution left it. */
  snapshot?: ThreadSnapshot;
}

/** The workflow clock: deterministic inside the sandbox (it is the time of the current workflow task). */
function workflowNow(): number {
  return new Date().getTime();
}

export async function threadWorkflow(args: ThreadWorkflowArgs): Promise<void> {
  const config = resolveThreadConfig(args.config);
  const thread = new ThreadState(args.snapshot ?? emptySnapshot(args.resourceId, args.threadId), config, {
    now: workflowNow,
    newId: uuid4,
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
  const { runTool } = proxyActivities<Activities>({
    startToCloseTimeout: config.tool.startToCloseTimeoutMs,
    retry: { maximumAttempts: config.tool.maxAttempts },
  });
  const { describeAgent } = proxyLocalActivities<Activities>({
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
  });
  const publishRetry = { maximumAttempts: 20, initialInterval: '200 milliseconds', maximumInterval: '5 seconds' };
  const { publishEvents: publishEventsLocally } = proxyLocalActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: publishRetry,
  });
  const { publishEvents: publishEventsActivity } = proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: publishRetry,
  });
  // A local activity runs inside the workflow task: when the server drops that task (it happens under bursts of
  // updates), events of decisions that were never committed reach subscribers, and the retried task numbers its
  // events differently, so key-based dedupe drops some echoes and repeats others. A regular activity is scheduled
  // only by a committed task. Histories recorded before this change keep the local activity.
  const publishEvents = (threadKeyArg: string, events: EventDraft[]): Promise<void> =>
    patched('publish-events-as-activity')
      ? publishEventsActivity(threadKeyArg, events)
      : publishEventsLocally(threadKeyArg, events);

  // Signals never throw: a bad payload is logged and dropped, the thread untouched.
  const onSignal = (name: string) => (raw: unknown) => {
    signalsSeen += 1;
    const parsed = threadInputSchema.safeParse(raw);
    if (!parsed.success) {
      log.warn(`Dropped invalid ${name} payload`, { error: describeZodError(parsed.error) });
      return;
    }
    const input = withDelivery(parsed.data, name);
    try {
      thread.validate(input);
    } catch (err) {
      if (err instanceof UnchangedStateError) return; // skipped: the lane already has this state
      log.warn(`Dropped ${name} input ${input.id}`, { error: (err as Error).message });
      return;
    }
    thread.accept(input);
  };
  setHandler(sendMessageSignal, onSignal('sendMessage'));
  setHandler(queueMessageSignal, onSignal('queueMessage'));
  setHandler(sendSignalSignal, onSignal('sendSignal'));

  setHandler(
    submitInputUpdate,
    (input) => {
      updatesSeen += 1;
      return thread.accept(input);
    },
    {
      validator: (raw) => {
        validateControl(threadInputSchema, raw);
        thread.validate(raw);
      },
    },
  );
  setHandler(
    abortThreadUpdate,
    (request) => {
      updatesSeen += 1;
      return thread.requestAbort(request?.clearPendingSignals === true);
    },
    { validator: (request) => validateControl(abortRequestSchema, request) },
  );
  setHandler(
    cancelQueuedUpdate,
    (request) => {
      updatesSeen += 1;
      return { cancelledSignalIds: thread.cancelQueued(request.signalIds) };
    },
    { validator: (request) => validateControl(cancelQueuedRequestSchema, request) },
  );
  setHandler(
    approveToolUpdate,
    (approval) => {
      updatesSeen += 1;
      return thread.decideApproval(approval);
    },
    {
      validator: (raw) => {
        validateControl(toolApprovalSchema, raw);
        thread.validateApproval(raw);
      },
    },
  );
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
  const publish = async (): Promise<void> => {
    const events = thread.takeOutbox();
    if (events.length === 0) return;
    try {
      await publishEvents(key, events);
      publishBackoffMs = 1_000;
    } catch (err) {
      // The bus is down beyond the local activity's retries: keep the events, in order, and try again later.
      // Failing here would fail the thread's workflow; an outage of the stream must not cost the conversation.
      log.warn('Publishing events failed; retrying', { error: (err as Error).message, backoffMs: publishBackoffMs });
      thread.restoreOutbox(events);
      await sleep(publishBackoffMs);
      publishBackoffMs = Math.min(publishBackoffMs * 2, 60_000);
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
    try {
      return await cancellable(cancelWhen, () =>
        runTool({
          threadKey: key,
          runId: plan.runId,
          agentId: plan.agentId,
          call,
          ...thread.key,
          ...(resumeData !== undefined ? { resumeData } : {}),
        }),
      );
    } catch (err) {
      const reason = isCancellation(err)
        ? 'the run was aborted'
        : (((err as Error).cause as Error | undefined)?.message ?? (err as Error).message);
      return toolError(plan, call, `Tool ${call.toolName} failed: ${reason}`);
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
   * Runs `fn` in a scope that is cancelled as soon as `cancelWhen()` holds. Resolves once the scope settled and the
   * watcher is gone, so no condition outlives the work it guards.
   */
  const cancellable = async <T>(cancelWhen: () => boolean, fn: () => Promise<T>): Promise<T> => {
    const scope = new CancellationScope();
    let settled = false;
    const watcher = condition(() => settled || cancelWhen()).then(() => {
      if (!settled) scope.cancel();
    });
    try {
      return await scope.run(fn);
    } finally {
      settled = true;
      await watcher;
    }
  };

  // Asked once per agent per execution (a deploy that changes an agent reaches threads at their next execution).
  // A local activity: no side effect, no extra round trip. Histories recorded before profiles existed skip it.
  const profiles = new Map<string, AgentProfile | null>();
  const profileOf = async (agentId: string): Promise<AgentProfile | null> => {
    if (!patched('agent-profile')) return null;
    if (!profiles.has(agentId)) {
      let profile: AgentProfile | null = null;
      try {
        profile = await describeAgent(agentId);
      } catch (err) {
        log.warn('Could not describe the agent; using the thread defaults', { agentId, error: (err as Error).message });
      }
      profiles.set(agentId, profile);
    }
    return profiles.get(agentId) ?? null;
  };

  const step = async (): Promise<void> => {
    const run = thread.run!;
    if (run.abortRequested) {
      thread.abortRun();
      return;
    }
    const decided = thread.takeDecidedTools();
    if (decided) {
      await runDecidedTools(run, decided);
      return;
    }
    const profile = await profileOf(run.agentId);
    const plan = thread.planStep({ contextWindow: profile?.contextWindow, ownedLanes: profile?.ownedLanes });
    let result: StepResult;
    try {
      // An interrupt or an abort cancels the model call: the provider request is aborted by the activity.
      result = await cancellable(
        () => run.interruptRequested || run.abortRequested === true,
        () => runStep({ ...plan, threadKey: key, resourceId: args.resourceId, threadId: args.threadId }),
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
    thread.completeStep(plan, result);
    // A tool that needs approval parks the run (SPEC §2.4); the main loop resumes it once a human decided.
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

  const ready = () => thread.hasWork() || wantsContinueAsNew();
  for (;;) {
    const deadline = thread.approvalDeadline();
    // A parked run with an approval timeout waits on a durable timer: the decline happens even after restarts.
    if (deadline === undefined) await condition(ready);
    else await condition(ready, Math.max(1, deadline - workflowNow()));
    thread.expireApprovals();
    if (wantsContinueAsNew()) break;
    if (!thread.run && thread.startNextQueued()) continue;
    if (thread.run && (!thread.isParked() || thread.run.abortRequested)) await step();
    else await publish();
  }

  // Continue-as-new only between steps, after every handler finished, with the outbox flushed: nothing is lost.
  await publish();
  await condition(allHandlersFinished);
  await continueAsNew<typeof threadWorkflow>({
    resourceId: args.resourceId,
    threadId: args.threadId,
    config: args.config,
    snapshot: thread.snapshot(),
  });
}

/** Update validators reject with a plain Error: the update is refused and never reaches history. */
function validateControl(schema: z.ZodType, raw: unknown): void {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new Error(`Invalid input: ${describeZodError(parsed.error)}`);
}

function withDelivery(input: ThreadInput, signalName: string): ThreadInput {
  if (signalName === 'queueMessage') return { ...input, delivery: 'queue' };
  if (signalName === 'sendMessage') return { ...input, delivery: 'send' };
  return input;
}
