/**
 * protocol/validate.ts (the workflow's zod-free validation) agrees with the zod schemas in protocol/schemas.ts: the
 * same accept/reject decision and, on accept, the same output (deep and strict: defaults, dropped keys, keys present
 * as `undefined`). Payloads are generated near-valid, then mutated anywhere in their tree: a field dropped, retyped or
 * set to `undefined`, an extra key (`__proto__`, `constructor`, …), strings at their limits in code points.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  MAX_NOTIFICATIONS_PER_SEND,
  XML_NAME,
  abortRequestSchema,
  activeBehaviors,
  cancelQueuedRequestSchema,
  defaultLimits,
  idleBehaviors,
  inboxToolInputSchema,
  notificationBatchSchema,
  notificationPriorities,
  notificationQuerySchema,
  notificationStatusChanges,
  notificationStatuses,
  notificationStatusRequestSchema,
  signalTypes,
  stateModes,
  threadInputSchema,
  toolApprovalSchema,
} from '../../protocol/schemas';
import {
  describeIssues,
  validateAbortRequest,
  validateCancelQueuedRequest,
  validateInboxToolInput,
  validateNotificationBatch,
  validateNotificationQuery,
  validateNotificationStatusRequest,
  validateThreadInput,
  validateToolApproval,
  type Parsed,
} from '../../protocol/validate';

const numRuns = 400;

// ---------------------------------------------------------------------------------------------------------------
// Leaves

/** Characters that count differently in UTF-16 units and code points; lone surrogates may pair up when joined. */
const unitChar = fc.constantFrom('a', 'Z', '_', '-', '.', '0', ' ', 'é', '中', '😀', '\uD800', '\uDC00', '\u0000', '<');

/** A string of exactly `n` pieces (each one or two UTF-16 units). */
const piecesOf = (n: number) => fc.array(unitChar, { minLength: n, maxLength: n }).map((cs) => cs.join(''));

/**
 * Strings around a limit of `max` characters: max-1, max or max+1 pieces, one piece repeated and a mixed tail (a lone
 * surrogate may pair up with its neighbour, one character fewer).
 */
const aroundLimit = (max: number) =>
  fc.tuple(fc.constantFrom(max - 4, max - 3, max - 2), unitChar, piecesOf(3)).map(([n, c, tail]) => c.repeat(n) + tail);

const shortString = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('', ' ', '\uD83D', 'a\uDE00'),
);

/** A string with at most `max` characters, often at or just past the limit. */
const text = (max?: number) => (max === undefined ? shortString : fc.oneof(shortString, aroundLimit(max)));

/** Non-empty text of at most `max`, sometimes empty or too long. */
const boundedText = (max: number) =>
  fc.oneof({ weight: 8, arbitrary: fc.string({ minLength: 1, maxLength: 10 }) }, text(max));

const idString = boundedText(defaultLimits.maxIdLength);

const xmlName = fc.stringMatching(XML_NAME).filter((name) => name.length <= 24);

/** Keys that trip up naive copying or checks. */
const trickyKey = fc.constantFrom(
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'isPrototypeOf',
  '',
  '0',
  '1e3',
  'a b',
  'ünï',
  '😀',
);

/** Anything a JSON payload can carry, plus `undefined` and a few numbers JSON cannot (NaN, ±Infinity). */
const junk = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  fc.constantFrom(undefined, null, true, false, 0, -1, 1.5, 2 ** 53, -0, NaN, Infinity, -Infinity, '', 'x', [], {}),
);

const enumOf = <T extends string>(values: readonly T[]) =>
  fc.oneof({ weight: 10, arbitrary: fc.constantFrom(...values) }, fc.constantFrom('', 'nope', values[0].toUpperCase()));

const numberish = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -3, max: 300 }) },
  { weight: 3, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 3, arbitrary: fc.constantFrom(0, -0, 0.5, 1, 20, 100, 101, 200, 201, 2 ** 53 - 1, 2 ** 53, -(2 ** 53)) },
  // Not JSON (the wire makes them null), but a caller in the same process could pass them.
  fc.constantFrom(NaN, Infinity, -Infinity),
);

/** An object with exactly these own keys, `__proto__` included (as JSON.parse makes it: an own data property). */
function objectOf(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    Object.defineProperty(out, key, { value, enumerable: true, configurable: true, writable: true });
  }
  return out;
}

const jsonRecord = fc
  .array(fc.tuple(fc.oneof(fc.string({ maxLength: 6 }), trickyKey), fc.jsonValue({ maxDepth: 2 })), { maxLength: 4 })
  .map(objectOf);

const attributeValue = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
);

/** Attribute maps: usually valid names, sometimes a bad or reserved one; sometimes 32 or 33 of them. */
const attributes = fc
  .oneof(
    { weight: 8, arbitrary: fc.uniqueArray(fc.tuple(xmlName, attributeValue), { selector: ([k]) => k, maxLength: 4 }) },
    fc.uniqueArray(fc.tuple(fc.oneof(xmlName, trickyKey), attributeValue), { selector: ([k]) => k, maxLength: 4 }),
    fc
      .constantFrom(defaultLimits.maxAttributes, defaultLimits.maxAttributes + 1)
      .map((n) => Array.from({ length: n }, (_, i) => [`a${i}`, i] as const)),
  )
  .map(objectOf);

/** Sometimes one key more: a non-strict object drops it, a strict one refuses it. */
const withExtraKey = <T extends object>(arb: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 3, arbitrary: arb },
    fc
      .tuple(arb, fc.oneof(trickyKey, fc.string({ maxLength: 5 })), junk)
      .map(([value, key, extra]) => objectOf([...Object.entries(value), [key, extra]])),
  );

const textPart = withExtraKey(fc.record({ type: fc.constant('text'), text: text() }));
const filePart = withExtraKey(
  fc.record(
    {
      type: fc.constant('file'),
      data: text(),
      url: text(),
      mediaType: boundedText(40),
      filename: text(),
    },
    { requiredKeys: ['type', 'mediaType'] },
  ),
);
const contents = fc.oneof(text(), fc.array(fc.oneof(textPart, filePart), { maxLength: 3 }));

const streamOptions = fc.record(
  {
    modelSettings: fc.record(
      {
        temperature: numberish,
        topP: numberish,
        maxOutputTokens: numberish,
        seed: numberish,
        stopSequences: fc.array(text(), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    ),
    toolChoice: fc.oneof(
      enumOf(['auto', 'none', 'required'] as const),
      withExtraKey(fc.record({ type: fc.constantFrom('tool', 'auto'), toolName: text() })),
    ),
    runtimeContext: jsonRecord,
    maxSteps: numberish,
  },
  { requiredKeys: [] },
);

// ---------------------------------------------------------------------------------------------------------------
// The eight payloads, near-valid

const stateInfo = fc.record(
  {
    laneId: idString,
    mode: enumOf(stateModes),
    cacheKey: boundedText(1_024),
    value: fc.jsonValue({ maxDepth: 2 }),
    delta: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: ['laneId', 'mode', 'cacheKey'] },
);

const threadInput = fc
  .record(
    {
      id: idString,
      agentId: idString,
      delivery: enumOf(['send', 'queue'] as const),
      type: enumOf(signalTypes),
      tagName: fc.oneof({ weight: 5, arbitrary: xmlName }, text()),
      contents,
      attributes,
      metadata: jsonRecord,
      providerOptions: fc.array(fc.tuple(fc.oneof(fc.string({ maxLength: 6 }), trickyKey), jsonRecord)).map(objectOf),
      transient: fc.boolean(),
      ifActive: withExtraKey(fc.record({ behavior: enumOf(activeBehaviors), attributes }, { requiredKeys: [] })),
      ifIdle: withExtraKey(
        fc.record({ behavior: enumOf(idleBehaviors), attributes, streamOptions }, { requiredKeys: [] }),
      ),
      runId: idString,
      sentAt: numberish,
      state: stateInfo,
    },
    { requiredKeys: ['id', 'agentId', 'delivery', 'type', 'contents'] },
  )
  // A state input usually has its state and others usually not, so the refinements are reached both ways.
  .map((input) => {
    const { state, ...rest } = input;
    return (input.type === 'state') === (state !== undefined) || input.id.length % 3 === 0 ? input : rest;
  });

const notification = fc.record(
  {
    source: boundedText(128),
    kind: boundedText(128),
    summary: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), aroundLimit(16 * 1024)),
    priority: enumOf(notificationPriorities),
    payload: fc.jsonValue({ maxDepth: 2 }),
    sourceId: boundedText(512),
    dedupeKey: boundedText(512),
    coalesceKey: boundedText(512),
    attributes,
    metadata: jsonRecord,
  },
  { requiredKeys: ['source', 'kind', 'summary'] },
);

/** Usually a few items; sometimes exactly at or one past `max` (copies of one `copied` item), or none. */
const listOf = <T>(item: fc.Arbitrary<T>, max: number, copied = item) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.array(item, { minLength: 1, maxLength: 3 }) },
    fc.tuple(copied, fc.constantFrom(0, max, max + 1)).map(([one, n]) => Array.from({ length: n }, () => one)),
  );

const notificationBatch = fc.record(
  {
    id: idString,
    agentId: idString,
    // A hundred 16 KiB summaries would make the JSON round trip the slowest part of the test.
    notifications: listOf(
      notification,
      MAX_NOTIFICATIONS_PER_SEND,
      notification.filter((n) => n.summary.length < 100),
    ),
    sentAt: numberish,
  },
  { requiredKeys: ['id', 'agentId', 'notifications'] },
);

const notificationQuery = fc.record(
  {
    status: fc.array(enumOf(notificationStatuses), { maxLength: 3 }),
    priority: fc.array(enumOf(notificationPriorities), { maxLength: 3 }),
    source: fc.array(text(), { maxLength: 3 }),
    q: text(1_000),
    limit: fc.oneof(fc.integer({ min: 1, max: 200 }), numberish),
    cursor: text(256),
  },
  { requiredKeys: [] },
);

const statusRequest = fc.record({
  ids: listOf(idString, 1_000),
  change: enumOf(notificationStatusChanges),
});

const inboxToolInput = withExtraKey(
  fc.record(
    {
      action: enumOf(['list', 'read', 'markSeen', 'dismiss', 'archive', 'search'] as const),
      id: text(),
      status: enumOf(notificationStatuses),
      priority: enumOf(notificationPriorities),
      source: text(),
      query: text(),
      limit: fc.oneof(fc.integer({ min: 1, max: 100 }), numberish),
    },
    { requiredKeys: ['action'] },
  ),
);

const toolApproval = fc.record(
  {
    toolCallId: idString,
    approved: fc.boolean(),
    resumeData: fc.jsonValue({ maxDepth: 2 }),
    declineReason: boundedText(4_000),
  },
  { requiredKeys: ['toolCallId', 'approved'] },
);

const abortRequest = fc.record({ clearPendingSignals: fc.boolean() }, { requiredKeys: [] });

const cancelQueued = fc.record({ signalIds: listOf(idString, 1_000) });

// ---------------------------------------------------------------------------------------------------------------
// Mutations anywhere in the tree

type Tree = Record<string, unknown> | unknown[];

/** Every object and array in `value`, outermost first (for arrays of 1,000 copies: the array and its first item). */
function containers(value: unknown, out: Tree[] = []): Tree[] {
  if (value === null || typeof value !== 'object') return out;
  out.push(value as Tree);
  const children = Array.isArray(value) ? value.slice(0, 2) : Object.values(value);
  for (const child of children) containers(child, out);
  return out;
}

/** A deep copy that keeps own `__proto__` keys and `undefined` values. */
function clone<T>(value: T): T {
  if (Array.isArray(value)) return Array.from(value, clone) as T;
  if (value !== null && typeof value === 'object') {
    return objectOf(Object.entries(value).map(([k, v]) => [k, clone(v)] as const)) as T;
  }
  return value;
}

type Mutation =
  | { kind: 'drop'; pick: number }
  | { kind: 'set'; pick: number; value: unknown }
  | { kind: 'add'; key: string; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('set' as const), pick: fc.nat(), value: junk }),
  fc.record({ kind: fc.constant('add' as const), key: fc.oneof(trickyKey, fc.string({ maxLength: 5 })), value: junk }),
);

function mutate(payload: unknown, target: number, change: Mutation): unknown {
  const copy = clone(payload);
  const all = containers(copy);
  if (all.length === 0) return change.kind === 'set' ? change.value : copy;
  const node = all[target % all.length];
  const keys = Array.isArray(node) ? node.map((_, i) => String(i)) : Object.keys(node);
  if (change.kind === 'add' && Array.isArray(node)) node.push(change.value);
  else if (change.kind === 'add') {
    Object.defineProperty(node, change.key, {
      value: change.value,
      enumerable: true,
      configurable: true,
      writable: true,
    });
  } else if (keys.length > 0) {
    const key = keys[change.pick % keys.length];
    if (change.kind === 'drop') {
      if (Array.isArray(node)) node.splice(Number(key), 1);
      else delete (node as Record<string, unknown>)[key];
    } else (node as Record<string, unknown>)[key] = change.value;
  }
  return copy;
}

/** One key somewhere in the tree set to `undefined` (present, unlike an absent key: zod keeps it in the output). */
function undefinedAt(payload: unknown, target: number, pick: number): unknown {
  const copy = clone(payload);
  const objects = containers(copy).filter((node): node is Record<string, unknown> => !Array.isArray(node));
  if (objects.length === 0) return copy;
  const node = objects[target % objects.length];
  const keys = Object.keys(node);
  if (keys.length > 0) node[keys[pick % keys.length]] = undefined;
  return copy;
}

/** The payload as generated, with a key set to `undefined`, after 1–3 mutations, or anything at all. */
const variants = (valid: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 3, arbitrary: valid },
    fc.tuple(valid, fc.nat(), fc.nat()).map(([payload, target, pick]) => undefinedAt(payload, target, pick)),
    fc
      .tuple(valid, fc.array(fc.tuple(fc.nat(), mutation), { minLength: 1, maxLength: 3 }))
      .map(([payload, changes]) => changes.reduce((p, [target, change]) => mutate(p, target, change), payload)),
    junk,
  );

/** What Temporal's JSON payload converter delivers: `undefined` values dropped, NaN/Infinity as null. */
const overTheWire = (value: unknown): unknown => {
  const json = JSON.stringify(value);
  return json === undefined ? undefined : JSON.parse(json);
};

function expectAgreement(schema: z.ZodType, validate: (raw: unknown) => Parsed<unknown>, raw: unknown): boolean {
  const expected = schema.safeParse(raw);
  const actual = validate(raw);
  expect({ success: actual.success, why: actual.success ? '' : describeIssues(actual.issues) }).toMatchObject({
    success: expected.success,
  });
  // Node's strict deep equality: own keys (`undefined` values too) and prototypes. Vitest's toStrictEqual alone
  // would also compare an own `constructor` key's values by identity.
  if (actual.success && expected.success && !isDeepStrictEqual(actual.data, expected.data)) {
    expect(actual.data).toStrictEqual(expected.data);
  }
  return expected.success;
}

const cases = [
  ['threadInputSchema', threadInputSchema, validateThreadInput, threadInput],
  ['notificationBatchSchema', notificationBatchSchema, validateNotificationBatch, notificationBatch],
  ['notificationQuerySchema', notificationQuerySchema, validateNotificationQuery, notificationQuery],
  [
    'notificationStatusRequestSchema',
    notificationStatusRequestSchema,
    validateNotificationStatusRequest,
    statusRequest,
  ],
  ['inboxToolInputSchema', inboxToolInputSchema, validateInboxToolInput, inboxToolInput],
  ['toolApprovalSchema', toolApprovalSchema, validateToolApproval, toolApproval],
  ['abortRequestSchema', abortRequestSchema, validateAbortRequest, abortRequest],
  ['cancelQueuedRequestSchema', cancelQueuedRequestSchema, validateCancelQueuedRequest, cancelQueued],
] as const satisfies readonly (readonly [
  string,
  z.ZodType,
  (raw: unknown) => Parsed<unknown>,
  fc.Arbitrary<unknown>,
])[];

describe('the workflow validator agrees with the zod schemas', () => {
  it.each(cases)('%s: same decision and output, as sent and as delivered over JSON', (_, schema, validate, valid) => {
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(variants(valid), (raw) => {
        for (const payload of [raw, overTheWire(raw)]) {
          if (expectAgreement(schema, validate, payload)) accepted++;
          else rejected++;
        }
      }),
      { numRuns },
    );
    // Both sides of the decision were exercised, not just one.
    expect(accepted).toBeGreaterThan(numRuns / 20);
    expect(rejected).toBeGreaterThan(numRuns / 20);
  });
});

describe('the workflow validator names the field', () => {
  const input = { id: 'in-1', agentId: 'agent', delivery: 'send', type: 'user', contents: 'hi' };
  const why = (parsed: Parsed<unknown>) => (parsed.success ? 'accepted' : describeIssues(parsed.issues));

  it('a field of the wrong type', () => {
    expect(why(validateThreadInput({ ...input, agentId: 5 }))).toBe('agentId: expected a string, got number');
  });

  it('a missing field and an empty one', () => {
    const { agentId: _, ...withoutAgent } = input;
    expect(why(validateThreadInput({ ...withoutAgent, id: '' }))).toBe('id: must not be empty; agentId: is required');
  });

  it('a bad value deep in a list', () => {
    const notifications = [
      { source: 'ci', kind: 'build', summary: 'ok' },
      { source: 'ci', kind: 'build', summary: '' },
    ];
    expect(why(validateNotificationBatch({ id: 'b1', agentId: 'agent', notifications }))).toBe(
      'notifications.1.summary: must not be empty',
    );
  });

  it('an unknown field, `__proto__` included', () => {
    const raw = JSON.parse(
      '{"id":"in-1","agentId":"a","delivery":"send","type":"user","contents":"hi","__proto__":{}}',
    );
    expect(why(validateThreadInput(raw))).toMatch(/^__proto__: unknown field \(allowed: id, agentId, /);
  });

  it('a bad enum value and a string too long in code points', () => {
    expect(why(validateThreadInput({ ...input, delivery: 'later' }))).toBe(
      'delivery: expected one of "send", "queue", got "later"',
    );
    expect(why(validateThreadInput({ ...input, runId: '😀'.repeat(257) }))).toBe(
      'runId: must be at most 256 characters',
    );
    expect(why(validateThreadInput({ ...input, runId: '😀'.repeat(256) }))).toBe('accepted');
  });

  it('attribute names and the state rules', () => {
    expect(why(validateThreadInput({ ...input, attributes: { 'bad name': 1 } }))).toBe(
      'attributes.bad name: Invalid signal XML attribute name: bad name. Use letters, digits, _ . - and start with a letter or _.',
    );
    expect(why(validateThreadInput({ ...input, type: 'state' }))).toBe(
      'state: a state input needs state { laneId, mode, cacheKey }',
    );
  });

  it('fills in defaults like the schema', () => {
    expect(validateNotificationQuery({})).toEqual({ success: true, data: { limit: 20 } });
    expect(why(validateInboxToolInput({ action: 'dismiss' }))).toBe('id: dismiss needs an id');
  });
});
