/**
 * Runs: the active run and its steps, the queue of runs behind it, abort and cancellation. A run answers every
 * input accepted for it; inputs it could not answer start the next run instead of vanishing.
 */
import { echoPayload, echoType } from '../../protocol/events';
import type { AssistantMessage, InputMessage, StepResult, ToolResultPart } from '../../protocol/messages';
import type { StreamOptions } from '../../protocol/schemas';
import type { StepPlan } from '../../protocol/step';
import type { ThreadConfig } from '../../protocol/thread-config';
import type { AbortResult } from '../../protocol/views';
import { selectWindow, toInputMessage, type Conversation } from './conversation';
import type { Lanes } from './lanes';
import type { Outbox } from './outbox';
import type { PendingInput, QueuedRun, RunState, StepOptions, ThreadClock, ThreadSnapshot } from './snapshot';

export class Runs {
  constructor(
    private readonly s: ThreadSnapshot,
    private readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
    private readonly outbox: Pick<Outbox, 'emit' | 'take'>,
    private readonly conversation: Pick<Conversation, 'append' | 'store' | 'recordToolResults'>,
    private readonly lanes: Pick<Lanes, 'refresh' | 'forStep' | 'recordComputed'>,
  ) {}

  /** A new run behind the active one, for one input. */
  enqueue(accepted: PendingInput, streamOptions: StreamOptions | undefined): QueuedRun {
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

  start(queued: QueuedRun): RunState {
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
    this.outbox.emit('start', { runId: run.runId, agentId: run.agentId }, run.runId);
    return run;
  }

  /** Starts the next queued run when idle. Returns whether one started. */
  startNextQueued(): boolean {
    if (this.s.run || this.s.queue.length === 0) return false;
    const next = this.s.queue.shift()!;
    this.start(next);
    this.emitQueue();
    return true;
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
  abort(): void {
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
        this.outbox.emit('tool-result', result, run.runId);
        return result;
      });
      this.conversation.recordToolResults({ stepKey: run.toolWait.stepKey, runId: run.runId }, results);
      delete run.toolWait;
    }
    this.outbox.emit('abort', { runId: run.runId, steps: run.stepNumber }, run.runId);
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
    this.lanes.refresh(run, window, owned);
    const transient: InputMessage[] = [];
    for (const accepted of run.pending.splice(0)) {
      const message = toInputMessage(accepted, run.runId);
      if (accepted.input.transient) transient.push(message);
      else this.conversation.store(accepted, run.runId);
      this.outbox.emit(echoType(message), echoPayload(message, 'deliver'), run.runId);
    }
    run.interruptRequested = false;
    run.stepNumber += 1;
    const messages = selectWindow(this.s.messages, window);
    const lanes = this.lanes.forStep(messages, owned);
    const plan: StepPlan = {
      runId: run.runId,
      agentId: run.agentId,
      stepNumber: run.stepNumber,
      stepKey: `${this.s.stepSeq}`,
      messages,
      transient,
      preEvents: this.outbox.take(),
      streamOptions: run.streamOptions,
    };
    if (lanes.length > 0) plan.lanes = lanes;
    return plan;
  }

  /** Records a finished step: the signals its processors added, then its message (when it said anything). */
  completeStep(plan: StepPlan, result: StepResult): void {
    for (const signal of result.signals ?? []) {
      this.conversation.append(signal);
      this.lanes.recordComputed(signal, plan.runId);
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
      this.conversation.append(message);
    }
  }

  /** An interrupted step leaves nothing in the conversation; subscribers drop its partial output. */
  interruptStep(plan: StepPlan): void {
    this.outbox.emit('step-interrupted', { stepNumber: plan.stepNumber }, plan.runId);
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

  finish(reason: 'stop' | 'error' | 'max-steps', error?: string): void {
    const run = this.s.run;
    if (!run) return;
    if (reason === 'error') this.outbox.emit('error', { message: error ?? 'The run failed.' }, run.runId);
    this.outbox.emit('finish', { runId: run.runId, reason, steps: run.stepNumber }, run.runId);
    this.s.run = null;
    this.s.runsCompleted += 1;
    // Inputs accepted for a run that failed before answering them start the next run instead of vanishing.
    if (run.pending.length > 0) {
      this.s.queue.unshift({ runId: this.clock.newId(), agentId: run.agentId, inputs: run.pending });
      this.emitQueue();
    }
  }

  private maxSteps(run: RunState): number {
    return run.streamOptions?.maxSteps ?? this.config.maxStepsPerRun;
  }

  private emitQueue(): void {
    this.outbox.emit('queue-updated', {
      queue: this.s.queue.map((q) => ({
        runId: q.runId,
        agentId: q.agentId,
        inputIds: q.inputs.map((i) => i.input.id),
      })),
    });
  }
}
