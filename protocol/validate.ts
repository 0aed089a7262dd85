/**
 * The thread workflow's payload validation, without zod. Temporal evaluates every module of the workflow bundle once
 * per workflow context (each new thread, each thread replayed after eviction), and zod with our schemas costs tens
 * of milliseconds there; this module is a few plain functions and small field tables.
 *
 * Each `validate*` gives the same decision and, on success, the same output as the zod schema of the same name in
 * schemas.ts (defaults filled in, unknown keys refused on strict objects and dropped on the others), for every JSON
 * payload Temporal can deliver; test/unit/validate.property.test.ts holds the two to that. The messages are our own.
 * The gateway and the clients keep zod: OpenAPI and ingress errors are built from it.
 */
import type {
  Attributes,
  InboxToolInput,
  NotificationBatch,
  NotificationQuery,
  NotificationStatusRequest,
  ThreadInput,
  ToolApprovalInput,
} from './schemas';
import {
  MAX_NOTIFICATIONS_PER_SEND,
  XML_NAME,
  activeBehaviors,
  defaultLimits,
  idleBehaviors,
  inboxToolActions,
  invalidAttributeNameMessage,
  invalidTagNameMessage,
  notificationPriorities,
  notificationStatusChanges,
  notificationStatuses,
  signalTypes,
  stateModes,
} from './vocabulary';

/** What is wrong and where: `path` names the field (`notifications.3.summary`). */
export interface PayloadIssue {
  path: (string | number)[];
  message: string;
}

export type Parsed<T> = { success: true; data: T } | { success: false; issues: PayloadIssue[] };

export type PayloadValidator<T> = (raw: unknown) => Parsed<T>;

/** `path: message; path: message`, `(root)` for the payload itself (the format of `describeZodError`). */
export function describeIssues(issues: readonly PayloadIssue[]): string {
  return issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`).join('; ');
}

export const validateThreadInput: PayloadValidator<ThreadInput> = (raw) =>
  run(raw, (value, ctx) => {
    const input = object(value, ctx, threadInputFields, true);
    if (input === BAD) return BAD;
    if (input.type === 'state' && !input.state)
      return ctx.fail('a state input needs state { laneId, mode, cacheKey }', 'state');
    if (input.type !== 'state' && input.state) return ctx.fail('only a state input carries state', 'state');
    if (input.type === 'state' && input.transient) return ctx.fail('state signals are never transient', 'transient');
    return input;
  });

export const validateNotificationBatch: PayloadValidator<NotificationBatch> = (raw) =>
  run(raw, (value, ctx) => object(value, ctx, notificationBatchFields, true));

export const validateNotificationQuery: PayloadValidator<
  Required<Pick<NotificationQuery, 'limit'>> & NotificationQuery
> = (raw) => run(raw, (value, ctx) => object(value, ctx, notificationQueryFields, true));

export const validateNotificationStatusRequest: PayloadValidator<NotificationStatusRequest> = (raw) =>
  run(raw, (value, ctx) => object(value, ctx, statusRequestFields, true));

export const validateInboxToolInput: PayloadValidator<InboxToolInput> = (raw) =>
  run(raw, (value, ctx) => {
    const input = object(value, ctx, inboxToolFields, false);
    if (input === BAD) return BAD;
    if (input.action === 'search' && !input.query) return ctx.fail('search needs a query', 'query');
    if ((input.action === 'markSeen' || input.action === 'dismiss' || input.action === 'archive') && !input.id)
      return ctx.fail(`${input.action as string} needs an id`, 'id');
    return input;
  });

export const validateToolApproval: PayloadValidator<ToolApprovalInput> = (raw) =>
  run(raw, (value, ctx) => object(value, ctx, toolApprovalFields, true));

export const validateAbortRequest: PayloadValidator<{ clearPendingSignals?: boolean }> = (raw) =>
  run(raw, (value, ctx) => object(value, ctx, abortRequestFields, true));

export const validateCancelQueuedRequest: PayloadValidator<{ signalIds: string[] }> = (raw) =>
  run(raw, (value, ctx) => object(value, ctx, cancelQueuedFields, true));

// ---------------------------------------------------------------------------------------------------------------
// Readers: each returns the parsed value, or BAD after recording an issue at the current path.

const BAD = Symbol('invalid');
type Reader<T = unknown> = (value: unknown, ctx: Context) => T | typeof BAD;

class Context {
  readonly issues: PayloadIssue[] = [];
  readonly path: (string | number)[] = [];

  fail(message: string, key?: string | number): typeof BAD {
    const path = [...this.path];
    if (key !== undefined) path.push(key);
    this.issues.push({ path, message });
    return BAD;
  }

  read<T>(key: string | number, value: unknown, reader: Reader<T>): T | typeof BAD {
    this.path.push(key);
    const result = reader(value, this);
    this.path.pop();
    return result;
  }
}

function run<T>(raw: unknown, reader: Reader): Parsed<T> {
  const ctx = new Context();
  const data = reader(raw, ctx);
  // A reader records an issue whenever it answers BAD; issues without BAD (a bad element among good ones) fail too.
  if (data === BAD || ctx.issues.length > 0) return { success: false, issues: ctx.issues };
  return { success: true, data: data as T };
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return typeof value;
}

/** Characters as zod counts them: Unicode code points (a surrogate pair is one). */
function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

interface StringRule {
  /** Minimum characters; 1 answers "must not be empty". */
  min?: number;
  max?: number;
  pattern?: RegExp;
  patternMessage?: (text: string) => string;
}

function string(rule: StringRule = {}): Reader<string> {
  return (value, ctx) => {
    if (typeof value !== 'string') return ctx.fail(`expected a string, got ${typeName(value)}`);
    const { min, max } = rule;
    // Only a string near a limit needs counting: a code point is one or two UTF-16 units.
    if (min !== undefined && (value.length < min || (value.length < 2 * min && codePoints(value) < min)))
      return ctx.fail(min === 1 ? 'must not be empty' : `must be at least ${min} characters`);
    if (max !== undefined && value.length > max && codePoints(value) > max)
      return ctx.fail(`must be at most ${max} characters`);
    if (rule.pattern && !rule.pattern.test(value))
      return ctx.fail(rule.patternMessage?.(value) ?? `does not match ${String(rule.pattern)}`);
    return value;
  };
}

interface NumberRule {
  int?: boolean;
  /** Greater than zero. */
  positive?: boolean;
  min?: number;
  max?: number;
}

function number(rule: NumberRule = {}): Reader<number> {
  return (value, ctx) => {
    if (typeof value !== 'number' || !Number.isFinite(value))
      return ctx.fail(`expected a number, got ${typeName(value)}`);
    if (rule.int && !Number.isSafeInteger(value))
      return ctx.fail(Number.isInteger(value) ? 'must be a safe integer' : `expected an integer, got ${value}`);
    if (rule.positive && !(value > 0)) return ctx.fail(`must be greater than 0, got ${value}`);
    if (rule.min !== undefined && value < rule.min) return ctx.fail(`must be at least ${rule.min}, got ${value}`);
    if (rule.max !== undefined && value > rule.max) return ctx.fail(`must be at most ${rule.max}, got ${value}`);
    return value;
  };
}

const boolean: Reader<boolean> = (value, ctx) =>
  typeof value === 'boolean' ? value : ctx.fail(`expected true or false, got ${typeName(value)}`);

const unknownValue: Reader = (value) => value;

function oneOf<T extends string>(values: readonly T[]): Reader<T> {
  return (value, ctx) => {
    if ((values as readonly unknown[]).includes(value)) return value as T;
    const got =
      typeof value === 'string'
        ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
        : typeName(value);
    return ctx.fail(`expected one of ${values.map((v) => JSON.stringify(v)).join(', ')}, got ${got}`);
  };
}

interface ArrayRule {
  min?: number;
  max?: number;
  minMessage?: string;
  maxMessage?: string;
}

function array<T>(item: Reader<T>, rule: ArrayRule = {}): Reader<T[]> {
  return (value, ctx) => {
    if (!Array.isArray(value)) return ctx.fail(`expected an array, got ${typeName(value)}`);
    // An oversized array is refused before any element is read.
    if (rule.max !== undefined && value.length > rule.max)
      return ctx.fail(rule.maxMessage ?? `must have at most ${rule.max} items`);
    if (rule.min !== undefined && value.length < rule.min)
      return ctx.fail(rule.minMessage ?? `must have at least ${rule.min} item${rule.min === 1 ? '' : 's'}`);
    const out: T[] = new Array<T>(value.length);
    let ok = true;
    for (let i = 0; i < value.length; i++) {
      const parsed = ctx.read(i, value[i], item);
      if (parsed === BAD) ok = false;
      else out[i] = parsed;
    }
    return ok ? out : BAD;
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** zod's test for a record: an object whose constructor, if it has a callable one, is `Object`-like. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const ctor = (value as { constructor?: unknown }).constructor;
  if (ctor === undefined || typeof ctor !== 'function') return true;
  const proto = (ctor as { prototype?: unknown }).prototype;
  return isObject(proto) && Object.prototype.hasOwnProperty.call(proto, 'isPrototypeOf');
}

/**
 * A string-keyed record. `__proto__` is skipped, never copied: assigning it would set the copy's prototype (zod
 * skips it the same way; attributes refuse it first).
 */
function record(value: unknown, ctx: Context, item: Reader = unknownValue): Record<string, unknown> | typeof BAD {
  if (!isPlainObject(value)) return ctx.fail(`expected an object, got ${typeName(value)}`);
  const out: Record<string, unknown> = {};
  let ok = true;
  for (const key of Reflect.ownKeys(value)) {
    if (key === '__proto__' || !Object.prototype.propertyIsEnumerable.call(value, key)) continue;
    if (typeof key !== 'string') {
      ok = false;
      ctx.fail('keys must be strings');
      continue;
    }
    const parsed = item === unknownValue ? value[key] : ctx.read(key, value[key], item);
    if (parsed === BAD) ok = false;
    else out[key] = parsed;
  }
  return ok ? out : BAD;
}

const jsonRecord: Reader<Record<string, unknown>> = (value, ctx) => record(value, ctx);

const providerOptions: Reader<Record<string, Record<string, unknown>>> = (value, ctx) =>
  record(value, ctx, jsonRecord) as Record<string, Record<string, unknown>> | typeof BAD;

const attributeValue: Reader = (value, ctx) =>
  value === undefined ||
  value === null ||
  typeof value === 'string' ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value))
    ? value
    : ctx.fail(`expected a string, number, boolean or null, got ${typeName(value)}`);

const attributes: Reader<Attributes> = (value, ctx) => {
  // Refused, never dropped: a sender who set `__proto__` would lose it silently.
  if (value !== null && typeof value === 'object' && Object.prototype.hasOwnProperty.call(value, '__proto__'))
    return ctx.fail(`${invalidAttributeNameMessage('__proto__')} (reserved)`);
  const attrs = record(value, ctx, attributeValue);
  if (attrs === BAD) return BAD;
  const names = Object.keys(attrs);
  let ok = true;
  if (names.length > defaultLimits.maxAttributes) {
    ok = false;
    ctx.fail(`at most ${defaultLimits.maxAttributes} attributes are allowed`);
  }
  for (const name of names) {
    if (!XML_NAME.test(name)) {
      ok = false;
      ctx.fail(invalidAttributeNameMessage(name), name);
    }
  }
  return ok ? (attrs as Attributes) : BAD;
};

/** How an object field treats absence: required, optional (absent stays absent), or a default. */
type Field = [key: string, reader: Reader, presence: 'required' | 'optional' | { default: unknown }];

/**
 * An object of `fields`. A field that is present with `undefined` stays in the output as `undefined`, like zod's
 * output; a strict object refuses any other key (`__proto__` too), a non-strict one drops it.
 */
function object(
  value: unknown,
  ctx: Context,
  fields: readonly Field[],
  strict: boolean,
): Record<string, unknown> | typeof BAD {
  if (!isObject(value)) return ctx.fail(`expected an object, got ${typeName(value)}`);
  const out: Record<string, unknown> = {};
  let ok = true;
  for (const [key, reader, presence] of fields) {
    const field = value[key];
    if (field === undefined) {
      if (presence === 'required') {
        ok = false;
        ctx.fail('is required', key);
      } else if (presence !== 'optional') out[key] = presence.default;
      else if (key in value) out[key] = undefined;
      continue;
    }
    const parsed = ctx.read(key, field, reader);
    if (parsed === BAD) ok = false;
    else out[key] = parsed;
  }
  if (strict) {
    for (const key in value) {
      if (!fields.some(([name]) => name === key)) {
        ok = false;
        ctx.fail(`unknown field (allowed: ${fields.map(([name]) => name).join(', ')})`, key);
      }
    }
  }
  return ok ? out : BAD;
}

function fieldsOf(fields: readonly Field[], strict: boolean): Reader<Record<string, unknown>> {
  return (value, ctx) => object(value, ctx, fields, strict);
}

const idString = string({ min: 1, max: defaultLimits.maxIdLength });
const shortText = (max: number) => string({ min: 1, max });

const textPartFields: Field[] = [
  ['type', oneOf(['text']), 'required'],
  ['text', string(), 'required'],
];
const filePartFields: Field[] = [
  ['type', oneOf(['file']), 'required'],
  ['data', string(), 'optional'],
  ['url', string(), 'optional'],
  ['mediaType', string({ min: 1 }), 'required'],
  ['filename', string(), 'optional'],
];

const part: Reader = (value, ctx) => {
  if (!isObject(value)) return ctx.fail(`expected a part object, got ${typeName(value)}`);
  if (value.type === 'text') return object(value, ctx, textPartFields, false);
  if (value.type !== 'file') return ctx.fail('expected "text" or "file"', 'type');
  const file = object(value, ctx, filePartFields, false);
  if (file === BAD) return BAD;
  return file.data !== undefined || file.url !== undefined ? file : ctx.fail('a file part needs data or url');
};
const parts = array(part);

const contents: Reader = (value, ctx) => {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return parts(value, ctx);
  return ctx.fail(`expected a string or an array of parts, got ${typeName(value)}`);
};

const modelSettings = fieldsOf(
  [
    ['temperature', number(), 'optional'],
    ['topP', number(), 'optional'],
    ['maxOutputTokens', number({ int: true, positive: true }), 'optional'],
    ['seed', number({ int: true }), 'optional'],
    ['stopSequences', array(string()), 'optional'],
  ],
  true,
);
const toolChoiceMode = oneOf(['auto', 'none', 'required']);
const toolChoiceTool = fieldsOf(
  [
    ['type', oneOf(['tool']), 'required'],
    ['toolName', string(), 'required'],
  ],
  false,
);
const toolChoice: Reader = (value, ctx) =>
  typeof value === 'string' ? toolChoiceMode(value, ctx) : toolChoiceTool(value, ctx);

const streamOptions = fieldsOf(
  [
    ['modelSettings', modelSettings, 'optional'],
    ['toolChoice', toolChoice, 'optional'],
    ['runtimeContext', jsonRecord, 'optional'],
    ['maxSteps', number({ int: true, positive: true }), 'optional'],
  ],
  true,
);

const ifActive = fieldsOf(
  [
    ['behavior', oneOf(activeBehaviors), 'optional'],
    ['attributes', attributes, 'optional'],
  ],
  false,
);
const ifIdle = fieldsOf(
  [
    ['behavior', oneOf(idleBehaviors), 'optional'],
    ['attributes', attributes, 'optional'],
    ['streamOptions', streamOptions, 'optional'],
  ],
  false,
);

const stateInfo = fieldsOf(
  [
    ['laneId', idString, 'required'],
    ['mode', oneOf(stateModes), 'required'],
    ['cacheKey', string({ min: 1, max: 1_024 }), 'required'],
    ['value', unknownValue, 'optional'],
    ['delta', unknownValue, 'optional'],
  ],
  true,
);

const threadInputFields: Field[] = [
  ['id', idString, 'required'],
  ['agentId', idString, 'required'],
  ['delivery', oneOf(['send', 'queue']), 'required'],
  ['type', oneOf(signalTypes), 'required'],
  ['tagName', string({ pattern: XML_NAME, patternMessage: (name) => invalidTagNameMessage(name) }), 'optional'],
  ['contents', contents, 'required'],
  ['attributes', attributes, 'optional'],
  ['metadata', jsonRecord, 'optional'],
  ['providerOptions', providerOptions, 'optional'],
  ['transient', boolean, 'optional'],
  ['ifActive', ifActive, 'optional'],
  ['ifIdle', ifIdle, 'optional'],
  ['runId', idString, 'optional'],
  ['sentAt', number(), 'optional'],
  ['state', stateInfo, 'optional'],
];

const notificationInput = fieldsOf(
  [
    ['source', shortText(128), 'required'],
    ['kind', shortText(128), 'required'],
    ['summary', shortText(16 * 1024), 'required'],
    ['priority', oneOf(notificationPriorities), 'optional'],
    ['payload', unknownValue, 'optional'],
    ['sourceId', shortText(512), 'optional'],
    ['dedupeKey', shortText(512), 'optional'],
    ['coalesceKey', shortText(512), 'optional'],
    ['attributes', attributes, 'optional'],
    ['metadata', jsonRecord, 'optional'],
  ],
  true,
);

const notificationBatchFields: Field[] = [
  ['id', idString, 'required'],
  ['agentId', idString, 'required'],
  [
    'notifications',
    array(notificationInput, {
      min: 1,
      max: MAX_NOTIFICATIONS_PER_SEND,
      minMessage: 'send at least one notification',
      maxMessage: `send at most ${MAX_NOTIFICATIONS_PER_SEND} notifications at once`,
    }),
    'required',
  ],
  ['sentAt', number(), 'optional'],
];

const notificationQueryFields: Field[] = [
  ['status', array(oneOf(notificationStatuses)), 'optional'],
  ['priority', array(oneOf(notificationPriorities)), 'optional'],
  ['source', array(string()), 'optional'],
  ['q', string({ max: 1_000 }), 'optional'],
  ['limit', number({ int: true, min: 1, max: 200 }), { default: 20 }],
  ['cursor', string({ max: 256 }), 'optional'],
];

const statusRequestFields: Field[] = [
  ['ids', array(idString, { min: 1, max: 1_000 }), 'required'],
  ['change', oneOf(notificationStatusChanges), 'required'],
];

const inboxToolFields: Field[] = [
  ['action', oneOf(inboxToolActions), 'required'],
  ['id', string(), 'optional'],
  ['status', oneOf(notificationStatuses), 'optional'],
  ['priority', oneOf(notificationPriorities), 'optional'],
  ['source', string(), 'optional'],
  ['query', string(), 'optional'],
  ['limit', number({ int: true, min: 1, max: 100 }), { default: 20 }],
];

const toolApprovalFields: Field[] = [
  ['toolCallId', idString, 'required'],
  ['approved', boolean, 'required'],
  ['resumeData', unknownValue, 'optional'],
  ['declineReason', string({ min: 1, max: 4_000 }), 'optional'],
];

const abortRequestFields: Field[] = [['clearPendingSignals', boolean, 'optional']];

const cancelQueuedFields: Field[] = [
  ['signalIds', array(idString, { min: 1, max: 1_000, minMessage: 'name at least one signal id' }), 'required'],
];
