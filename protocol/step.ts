/**
 * The contract between the thread workflow and its step activity: what one model call gets.
 */
import type { EventDraft } from './events';
import type { LaneTracking } from './lanes';
import type { InputMessage, StoredMessage } from './messages';
import type { StreamOptions } from './schemas';

/** What the step activity needs for one model call. */
export interface StepPlan {
  runId: string;
  agentId: string;
  stepNumber: number;
  stepKey: string;
  messages: StoredMessage[];
  /** Transient inputs: in this step's context, never stored. */
  transient: InputMessage[];
  preEvents: EventDraft[];
  streamOptions?: StreamOptions;
  /** Lanes the agent's processors own (`computeStateSignal`), with what they need when the window lost them. */
  lanes?: StepLane[];
}

/** A processor-owned lane as the step sees it (behaviour §3.2). */
export interface StepLane {
  laneId: string;
  tracking: LaneTracking;
  hasSnapshot: boolean;
  /** Only when the window no longer holds them: resolved from the lane itself. */
  lastSnapshot?: InputMessage;
  deltasSinceSnapshot?: InputMessage[];
}
