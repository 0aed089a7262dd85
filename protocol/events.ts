/**
 * The events of a thread's subscriber stream, as every side sees them: the workflow decides them, the bus numbers
 * them, clients and the gateway read them.
 */
import type { InputMessage } from './messages';

export const threadEventTypes = [
  'start',
  'step-start',
  'text-start',
  'text-delta',
  'text-end',
  'reasoning-delta',
  'tool-call',
  'tool-call-approval',
  'tool-result',
  'step-finish',
  'step-interrupted',
  'finish',
  'error',
  'abort',
  'data-user-message',
  'data-signal',
  'state-updated',
  'notification-updated',
  'queue-updated',
  'run-retry',
  'snapshot',
] as const;

export type ThreadEventType = (typeof threadEventTypes)[number];

/** One item of a thread's stream. `id` is assigned by the bus and strictly increasing per thread. */
export interface ThreadEvent {
  id: string;
  threadKey: string;
  runId?: string;
  type: ThreadEventType;
  payload: unknown;
  /** Milliseconds since the epoch, set by the publisher. */
  at: number;
}

/**
 * An event before the bus assigns its id. `key` makes publishing idempotent: a second publish of the same key
 * (an activity retried after a partial success, a replayed workflow task) is ignored while the first is retained.
 */
export interface EventDraft {
  key: string;
  runId?: string;
  type: ThreadEventType;
  payload: unknown;
  at: number;
}

/**
 * The key of the `seq`-th event a thread's workflow decided (`w:1`, `w:2`, …): the sequence lives in the workflow's
 * snapshot, so it goes on across replay and continue-as-new and never starts again.
 */
export function workflowEventKey(seq: number): string {
  return `w:${seq}`;
}

/**
 * The key of a thread's first event. Every thread's stream begins with it: the workflow's first event is published
 * before anything else of the thread (a step publishes the workflow's events it carries before its own output). A bus
 * stream that begins with any other key began anew (the bus lost the thread's earlier events), which a subscriber
 * reading the thread from its start must be told (a gap).
 */
export const THREAD_FIRST_EVENT_KEY = workflowEventKey(1);

/** The event that echoes an input: user messages as `data-user-message`, everything else as `data-signal`. */
export function echoType(message: InputMessage): ThreadEventType {
  return message.type === 'user' && !message.tagName ? 'data-user-message' : 'data-signal';
}

/** The echo of an input where it entered the thread (`persisted` only for inputs stored without a run). */
export function echoPayload(message: InputMessage, action: 'deliver' | 'persist'): unknown {
  return {
    id: message.id,
    type: message.type,
    tagName: message.tagName,
    contents: message.contents,
    attributes: message.attributes,
    metadata: message.metadata,
    ...(action === 'persist' ? { persisted: true } : {}),
  };
}
