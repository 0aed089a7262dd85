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

/**
 * How a step's context window travels to the step activity. The first step of an execution sends it whole; every
 * later one sends only what changed since the window the previous step was sent: how many of that window's newest
 * messages it keeps, and the messages after them. So a step's activity input, and the history it is recorded in, stay
 * the same size however long the conversation grows (the worker rebuilds the window from what it keeps of the
 * previous step, or asks the workflow — `stepWindowQuery` — when another worker ran that step).
 */
export type StepWindow =
  | { full: StoredMessage[] }
  | {
      /** The step (thread-wide `stepKey`) whose window this one continues. */
      base: string;
      /** How many of the base window's newest messages open this window. */
      keep: number;
      /** The messages after them. */
      tail: StoredMessage[];
    };

/** What the step activity receives: the plan with its window as a `StepWindow`, addressed to its thread. */
export interface StepInput extends Omit<StepPlan, 'messages'> {
  threadKey: string;
  resourceId: string;
  threadId: string;
  window?: StepWindow;
  /** The whole window, as histories recorded before `window` existed carry it. */
  messages?: StoredMessage[];
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
