/**
 * The wire's names and limits: enum values, the XML name rule, size limits and the messages that name them. Plain
 * data, no zod: the thread workflow loads this (through validate.ts and thread-config.ts) in every workflow context,
 * while schemas.ts builds its zod schemas from the same constants and re-exports them.
 */

export const XML_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export const defaultLimits = {
  /** Bytes of one input's JSON (message, signal, notification). */
  maxInputBytes: 256 * 1024,
  maxAttributes: 32,
  maxIdLength: 256,
  /** Queued runs waiting behind the active one. */
  maxQueueLength: 100,
  /** Inputs waiting for the next step boundary of the active run. */
  maxPendingInputs: 500,
  /** Levels of arrays and objects inside one input (message parts, metadata, state, notifications). */
  maxInputDepth: 64,
};

/**
 * Whether `value` nests arrays and objects deeper than `max` levels (the value itself is level 1). Iterative: it
 * runs on values too deep for a recursive walk (or `JSON.stringify`) to survive.
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}

export function invalidTagNameMessage(name: string): string {
  return `Invalid signal XML tag name: ${name}. Use letters, digits, _ . - and start with a letter or _.`;
}
export function invalidAttributeNameMessage(name: string): string {
  return `Invalid signal XML attribute name: ${name}. Use letters, digits, _ . - and start with a letter or _.`;
}

export const activeBehaviors = ['deliver', 'persist', 'discard', 'interrupt'] as const;
export const idleBehaviors = ['wake', 'persist', 'discard'] as const;
export type ActiveBehavior = (typeof activeBehaviors)[number];
export type IdleBehavior = (typeof idleBehaviors)[number];

export const signalTypes = ['user', 'reactive', 'notification', 'state'] as const;
export type SignalType = (typeof signalTypes)[number];

export const stateModes = ['snapshot', 'delta'] as const;
export type StateMode = (typeof stateModes)[number];

export const notificationPriorities = ['urgent', 'high', 'medium', 'low'] as const;
export type NotificationPriority = (typeof notificationPriorities)[number];
export const notificationStatuses = [
  'pending',
  'delivered',
  'seen',
  'dismissed',
  'archived',
  'discarded',
  'failed',
] as const;
export type NotificationStatus = (typeof notificationStatuses)[number];

/** At most this many notifications in one send. */
export const MAX_NOTIFICATIONS_PER_SEND = 100;

export const notificationStatusChanges = ['seen', 'dismiss', 'archive'] as const;

/** The inbox tool's actions (behaviour §4.4). */
export const inboxToolActions = ['list', 'read', 'markSeen', 'dismiss', 'archive', 'search'] as const;

/** The JSON size of a value in UTF-8 bytes, without Node's Buffer (the workflow sandbox has none). */
export function jsonByteLength(value: unknown): number {
  const json = JSON.stringify(value) ?? '';
  let bytes = 0;
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
