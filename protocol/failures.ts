/**
 * Why a thread refuses a request, as a stable `type` with structured `details`. The workflow's validators and
 * handlers throw these as Temporal `ApplicationFailure`s (type and details travel across the Temporal boundary);
 * the client branches on `type`, never on message text, and the gateway turns the client's errors into HTTP
 * statuses in one place.
 */
import { jsonByteLength } from './vocabulary';

export const failureTypes = [
  /** The payload does not match its schema (HTTP 400). */
  'InvalidInput',
  /** A limit of the thread refuses the input: queue full, too many lanes, inbox full (HTTP 409). */
  'InputRejected',
  /** An input over the thread's `maxInputBytes` (HTTP 413): clients refuse these first; raw Temporal senders meet it. */
  'InputTooLarge',
  /** A state signal identical to its lane's latest state: answered as `skipped`, never stored. */
  'UnchangedState',
  /** No run of the thread waits for this tool call's approval (HTTP 404). */
  'ToolCallNotFound',
  /** The tool call's approval was already decided (HTTP 409). */
  'ToolCallDecided',
  /** No such record in the thread's inbox (HTTP 404). */
  'NotificationNotFound',
  /** A paging cursor that was not handed out (HTTP 400). */
  'InvalidCursor',
] as const;

export type FailureType = (typeof failureTypes)[number];

/** The structured details each failure type carries. */
export interface FailureDetails {
  InvalidInput: { issues: string };
  InputRejected: { limit: string; value: number };
  InputTooLarge: { limit: 'maxInputBytes'; value: number; bytes: number };
  UnchangedState: { laneId: string; version: number };
  ToolCallNotFound: { toolCallId: string };
  ToolCallDecided: { toolCallId: string };
  NotificationNotFound: { notificationId: string };
  InvalidCursor: { cursor: string };
}

/**
 * A refusal raised by the thread's pure state code (which imports nothing from Temporal); the workflow sends it on
 * as an `ApplicationFailure` with the same type, message and details.
 */
export class ThreadRefusal<T extends FailureType = FailureType> extends Error {
  override name = 'ThreadRefusal';
  constructor(
    readonly type: T,
    message: string,
    readonly details: FailureDetails[T],
  ) {
    super(message);
  }
}

export function isFailureType(value: unknown): value is FailureType {
  return typeof value === 'string' && (failureTypes as readonly string[]).includes(value);
}

/** Checks an inbox page cursor (`<position>:<record id>`) and splits it; refuses one that was not handed out. */
export function parseInboxCursor(cursor: string): [number, string] {
  const colon = cursor.indexOf(':');
  const at = Number(cursor.slice(0, colon));
  if (colon < 0 || !Number.isFinite(at)) {
    throw new ThreadRefusal('InvalidCursor', `Invalid cursor "${cursor}": pass a nextCursor as given.`, { cursor });
  }
  return [at, cursor.slice(colon + 1)];
}

/**
 * Refuses a value over the thread's `maxInputBytes` as JSON: the clients check it first, so only raw Temporal senders
 * meet this — and a thread must not store what its next step's activity input could not carry.
 */
export function refuseOversized(value: unknown, what: string, maxInputBytes: number): void {
  const bytes = jsonByteLength(value);
  if (bytes <= maxInputBytes) return;
  throw new ThreadRefusal(
    'InputTooLarge',
    `${what} is ${bytes} bytes as JSON; this thread takes at most ${maxInputBytes} (its maxInputBytes). Send less.`,
    { limit: 'maxInputBytes', value: maxInputBytes, bytes },
  );
}

/**
 * The refusal of a value nested deeper than the thread's `maxInputDepth` (check it with `nestedDeeperThan`, before
 * anything serializes the value: `JSON.stringify` overflows the stack a few thousand levels down). The clients and
 * the gateway refuse such inputs first, so only raw Temporal senders meet this.
 */
export function depthRefusal(what: string, maxInputDepth: number): ThreadRefusal<'InvalidInput'> {
  const message = `${what} nests arrays and objects deeper than ${maxInputDepth} levels (this thread's maxInputDepth). Send a flatter value.`;
  return new ThreadRefusal('InvalidInput', message, { issues: message });
}
