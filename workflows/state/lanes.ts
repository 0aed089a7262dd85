/**
 * State lanes on the thread (behaviour §3): state signals deduped and versioned per lane, processor-computed states
 * recorded, and the lane's current state put back into the window when it fell out.
 */
import { echoPayload, echoType } from '../../protocol/events';
import { ThreadRefusal } from '../../protocol/failures';
import {
  isUnchanged,
  laneMessagesIn,
  laneView,
  nextVersion,
  recordState,
  refreshCopies,
  stateOf,
  windowHasSnapshot,
} from '../../protocol/lanes';
import type { ContextWindowConfig, InputMessage, StoredMessage } from '../../protocol/messages';
import type { InputResult, ThreadInput } from '../../protocol/schemas';
import type { StepLane } from '../../protocol/step';
import type { ThreadConfig } from '../../protocol/thread-config';
import { selectWindow, toInputMessage, type Conversation } from './conversation';
import type { Outbox } from './outbox';
import type { InputRouter, RunState, ThreadClock, ThreadSnapshot } from './snapshot';

export class Lanes {
  constructor(
    private readonly s: ThreadSnapshot,
    private readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
    private readonly outbox: Pick<Outbox, 'emit'>,
    private readonly conversation: Pick<Conversation, 'append'>,
  ) {}

  /** Refuses a state identical to its lane's latest (`UnchangedState`) or one that would add a lane beyond the limit. */
  validate(input: ThreadInput): void {
    const { lanes } = this.s;
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
  }

  /**
   * A state signal (behaviour §3.1): skipped when the lane's latest state has the same cacheKey and mode; otherwise
   * routed like any signal, and the lane's tracking is committed only if the thread took it (not when discarded).
   */
  accept(input: ThreadInput, inputs: Pick<InputRouter, 'route'>): InputResult {
    const state = input.state!;
    const { lanes } = this.s;
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
    const result = inputs.route(stamped);
    if (result.action === 'discard') return result;
    const at = this.clock.now();
    const accepted = toInputMessage({ input: stamped, acceptedAt: at }, result.runId);
    const next = recordState(lane, accepted, at, this.config.maxLaneDeltas);
    lanes[state.laneId] = next;
    this.outbox.emit('state-updated', { ...laneView(state.laneId, next), signalId: input.id, action: result.action });
    return { ...result, version };
  }

  /** A processor-computed state the step added (behaviour §3.2): the step already deduped and versioned it; record it. */
  recordComputed(signal: InputMessage, runId: string): void {
    const state = stateOf(signal);
    if (!state || state.refreshOf) return;
    const { lanes } = this.s;
    const next = recordState(lanes[state.laneId], signal, this.clock.now(), this.config.maxLaneDeltas);
    lanes[state.laneId] = next;
    this.outbox.emit(
      'state-updated',
      { ...laneView(state.laneId, next), signalId: signal.id, action: 'deliver' },
      runId,
    );
  }

  /**
   * The model always sees every lane's current state: a lane whose latest snapshot would fall outside this step's
   * window gets a copy of it (and of the deltas since) appended before the step's new inputs, at the same version.
   * Lanes a processor owns are left to it (`contextWindow.hasSnapshot` tells it to re-emit).
   */
  refresh(run: RunState, window: ContextWindowConfig, owned: ReadonlySet<string>): void {
    const lanes = Object.entries(this.s.lanes).filter(([id, lane]) => !owned.has(id) && lane.lastSnapshot);
    if (lanes.length === 0) return;
    const upcoming = run.pending.filter((p) => !p.input.transient).map((p) => toInputMessage(p, run.runId));
    const seen = selectWindow([...this.s.messages, ...upcoming], window);
    for (const [laneId, lane] of lanes) {
      if (windowHasSnapshot(seen, laneId, lane)) continue;
      for (const copy of refreshCopies(lane, `${this.s.stepSeq}`, run.runId, this.clock.now())) {
        this.conversation.append(copy);
        this.outbox.emit(echoType(copy), { ...(echoPayload(copy, 'deliver') as object), refreshed: true }, run.runId);
      }
    }
  }

  /**
   * Counts each lane's copies in the step's window, and returns the processor-owned lanes as the step sees them
   * (with the lane's current state when the window no longer holds its snapshot).
   */
  forStep(messages: readonly StoredMessage[], owned: ReadonlySet<string>): StepLane[] {
    const lanes: StepLane[] = [];
    for (const [laneId, lane] of Object.entries(this.s.lanes)) {
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
    return lanes;
  }
}
