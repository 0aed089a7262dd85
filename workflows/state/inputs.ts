/**
 * What the thread does with an input (behaviour §2.1, §2.2): checked against its limits, remembered for idempotency, and
 * routed by the thread's state: delivered to the active run, queued behind it, interrupting it, waking the thread,
 * persisted without a run, or discarded.
 */
import { echoPayload, echoType } from '../../protocol/events';
import { ThreadRefusal, depthRefusal, refuseOversized } from '../../protocol/failures';
import { mergeAttributes } from '../../protocol/render';
import { stateIndependentAction } from '../../protocol/routing';
import type { InputAction, InputResult, ThreadInput } from '../../protocol/schemas';
import type { ThreadConfig } from '../../protocol/thread-config';
import { nestedDeeperThan } from '../../protocol/vocabulary';
import type { Conversation } from './conversation';
import type { Lanes } from './lanes';
import type { Outbox } from './outbox';
import type { Runs } from './runs';
import { openGates, type PendingInput, type ThreadClock, type ThreadGates, type ThreadSnapshot } from './snapshot';

export class Inputs {
  private readonly remembered: Map<string, InputResult>;

  constructor(
    private readonly s: ThreadSnapshot,
    private readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
    private readonly outbox: Pick<Outbox, 'emit'>,
    private readonly conversation: Pick<Conversation, 'store'>,
    private readonly lanes: Pick<Lanes, 'validate' | 'accept'>,
    private readonly runs: Pick<Runs, 'enqueue' | 'start'>,
    private readonly gates: ThreadGates = openGates,
  ) {
    this.remembered = new Map(s.remembered);
  }

  /** The remembered results, oldest first, for the snapshot. */
  rememberedEntries(): [string, InputResult][] {
    return [...this.remembered.entries()];
  }

  /**
   * Checks an input against the thread's limits without changing anything (the update validator, and the
   * signal handler before `accept`). Throws an `InputRejected` refusal that names the limit. `gates`: an update
   * validator passes `openGates` (Temporal never replays a validator, and it may not record a patch marker).
   */
  validate(input: ThreadInput, gates: ThreadGates = this.gates): void {
    // First: a value too deep to serialize, even as a resend of an id the thread remembers.
    if (nestedDeeperThan(input, this.config.maxInputDepth) && gates.boundedInputDepth()) {
      throw depthRefusal('The input', this.config.maxInputDepth);
    }
    if (this.remembered.has(input.id)) return;
    refuseOversized(input, 'The input', this.config.maxInputBytes);
    const { run } = this.s;
    this.lanes.validate(input);
    if (input.delivery === 'queue' && run && this.s.queue.length >= this.config.maxQueueLength) {
      throw new ThreadRefusal(
        'InputRejected',
        `The thread's queue is full (${this.config.maxQueueLength} queued runs). Wait for a run to finish or raise maxQueueLength.`,
        { limit: 'maxQueueLength', value: this.config.maxQueueLength },
      );
    }
    if (
      input.delivery === 'send' &&
      run &&
      run.pending.length >= this.config.maxPendingInputs &&
      !this.settled(input, gates) // it never waits for a step: nothing to bound
    ) {
      throw new ThreadRefusal(
        'InputRejected',
        `The active run has ${this.config.maxPendingInputs} inputs waiting for the next step. Wait or raise maxPendingInputs.`,
        { limit: 'maxPendingInputs', value: this.config.maxPendingInputs },
      );
    }
  }

  /** Records an input and decides what the thread does with it (behaviour §2.1, §2.2 behaviours). */
  accept(input: ThreadInput): InputResult {
    const previous = this.remembered.get(input.id);
    if (previous) return { ...previous, duplicate: true };
    const result = input.state ? this.lanes.accept(input, this) : this.route(input);
    this.remember(input.id, result);
    return result;
  }

  /** Routes an input by the thread's state, without remembering it (notifications and lanes route through here). */
  route(input: ThreadInput): InputResult {
    const { run } = this.s;
    const at = this.clock.now();
    this.s.lastInputAt = at;
    if (run) {
      const attributes = mergeAttributes(input.attributes, input.ifActive?.attributes);
      const accepted: PendingInput = { input: { ...input, attributes }, acceptedAt: at };
      // A wake for another agent cannot join this agent's loop: it runs next. What is stored or dropped whatever the
      // state joins no loop: the client answered it without asking (protocol/routing.ts).
      if (input.delivery === 'queue' || (input.agentId !== run.agentId && !this.settled(input, this.gates))) {
        return this.result('queued', input.id, this.runs.enqueue(accepted, input.ifIdle?.streamOptions).runId);
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
    const started = this.runs.start({
      runId: this.clock.newId(),
      agentId: input.agentId,
      inputs: [accepted],
      streamOptions: input.ifIdle?.streamOptions,
    });
    return this.result('wake', input.id, started.runId);
  }

  /** The input persists or discards whatever the state, and this thread routes it so (its gate is open). */
  private settled(input: ThreadInput, gates: ThreadGates): boolean {
    return stateIndependentAction(input) !== null && gates.stateIndependentActions();
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
    const message = this.conversation.store(accepted, undefined);
    this.outbox.emit(echoType(message), echoPayload(message, 'persist'));
    return this.result('persist', accepted.input.id);
  }
}
