/**
 * Generated payloads for the thread workflow's signals and updates, as any Temporal client may send them: valid
 * ones (rich but within the schema), valid ones with one field broken (type-confused, hostile, removed, added,
 * nested deep, huge), and arbitrary values; with one argument, none, or two.
 *
 * Each definition of `protocol/definitions.ts` that takes a payload has its zod schema here (the documented wire
 * format the workflow's validators mirror, `protocol/validate.ts`): it tells the fuzzer whether a payload is valid.
 */
import fc from 'fast-check';
import type { z } from 'zod';
import {
  abortRequestSchema,
  cancelQueuedRequestSchema,
  notificationBatchSchema,
  notificationStatusRequestSchema,
  threadInputSchema,
  toolApprovalSchema,
} from '../../../protocol/schemas';
import { defaultThreadConfig } from '../../../protocol/thread-config';
import { nestedDeeperThan } from '../../../protocol/vocabulary';
import { PROTO_KEYS, hostileString, protoObject, typeConfused, withOwnKey } from './values';

/** A value nested `depth` levels deep, built only when it is sent (and printed short in a counterexample). */
export class Deep {
  constructor(
    readonly depth: number,
    readonly shape: 'array' | 'object',
  ) {}

  toJSON(): unknown {
    let value: unknown = 'bottom';
    for (let i = 0; i < this.depth; i++) value = this.shape === 'array' ? [value] : { k: value };
    return value;
  }

  [fc.toStringMethod](): string {
    return `Deep(${this.depth} ${this.shape}s)`;
  }
}

/** A string too long for some limit, printed short. */
export class Huge {
  constructor(readonly length: number) {}

  toJSON(): string {
    return 'x'.repeat(this.length);
  }

  [fc.toStringMethod](): string {
    return `Huge(${this.length} chars)`;
  }
}

// 10 levels are within the thread's maxInputDepth (64), the others past it (refused: `tooDeep` below).
const deep = fc
  .tuple(fc.constantFrom(10, 100, 1_000, 3_000), fc.constantFrom<'array' | 'object'>('array', 'object'))
  .map(([depth, shape]) => new Deep(depth, shape));
// Past the input limit (256 KiB). Not larger: a valid input of 1.2 MB, or any update over Temporal's 2 MB, ends the
// thread today (docs/fuzzing.md, "Not fixed").
const huge = fc.constantFrom(300 * 1024).map((n) => new Huge(n));

const id = (prefix: string) => fc.uuid().map((u) => `${prefix}-${u}`);
const text = fc.oneof(hostileString, fc.lorem({ maxCount: 6 }));
const xmlName = fc.constantFrom('name', 'source', 'x.y', '_a-b');
const attributes = fc.dictionary(xmlName, fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null)), {
  maxKeys: 3,
});
const jsonRecord = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
  protoObject as fc.Arbitrary<unknown>,
);
const contents = fc.oneof(
  text,
  fc.array(fc.record({ type: fc.constant('text'), text }), { minLength: 1, maxLength: 3 }),
);
const ifIdle = fc.record(
  { behavior: fc.constantFrom('persist', 'persist', 'discard', 'wake'), attributes },
  { requiredKeys: ['behavior'] },
);
const ifActive = fc.record(
  { behavior: fc.constantFrom('deliver', 'persist', 'discard', 'interrupt'), attributes },
  { requiredKeys: [] },
);

const threadInput = fc.oneof(
  fc.record(
    {
      id: id('in'),
      agentId: fc.constantFrom('tester', 'tester', 'tester', 'tester', 'tester', 'tester', 'tester', 'ghost-agent'),
      delivery: fc.constantFrom('send', 'queue'),
      type: fc.constantFrom('user', 'reactive', 'notification'),
      tagName: xmlName,
      contents,
      attributes,
      metadata: jsonRecord,
      transient: fc.boolean(),
      ifActive,
      ifIdle,
      runId: id('run'),
      sentAt: fc.integer({ min: 0 }),
    },
    { requiredKeys: ['id', 'agentId', 'delivery', 'type', 'contents', 'ifIdle'] },
  ),
  fc.record(
    {
      id: id('in'),
      agentId: fc.constant('tester'),
      delivery: fc.constant('send'),
      type: fc.constant('state'),
      contents,
      ifIdle,
      state: fc.record(
        {
          laneId: fc.constantFrom('browser', 'lane-1'),
          mode: fc.constantFrom('snapshot', 'delta'),
          cacheKey: id('k'),
          value: fc.jsonValue({ maxDepth: 2 }),
        },
        { requiredKeys: ['laneId', 'mode', 'cacheKey'] },
      ),
    },
    { requiredKeys: ['id', 'agentId', 'delivery', 'type', 'contents', 'ifIdle', 'state'] },
  ),
);

const notificationInput = fc.record(
  {
    source: fc.constantFrom('ci', 'github'),
    kind: fc.constantFrom('build', 'review'),
    summary: text.filter((s) => s.length > 0),
    priority: fc.constantFrom('urgent', 'high', 'medium', 'low'),
    payload: fc.jsonValue({ maxDepth: 3 }),
    dedupeKey: id('d'),
    coalesceKey: id('c'),
    attributes,
    metadata: jsonRecord,
  },
  { requiredKeys: ['source', 'kind', 'summary'] },
);
const notificationBatch = fc.record(
  {
    id: id('batch'),
    agentId: fc.constant('tester'),
    notifications: fc.array(notificationInput, { minLength: 1, maxLength: 3 }),
    sentAt: fc.integer({ min: 0 }),
  },
  { requiredKeys: ['id', 'agentId', 'notifications'] },
);

export interface PayloadSpec {
  /** The documented wire format: a payload it refuses is invalid. */
  schema: z.ZodType;
  valid: fc.Arbitrary<Record<string, unknown>>;
  /**
   * Whether a payload the schema takes nests deeper than the thread's `maxInputDepth` (the schemas do not count
   * levels; the clients and the thread do): such a payload is invalid too.
   */
  tooDeep?: (payload: unknown) => boolean;
}

/** The thread's bound, as it applies it: to an input, to each notification of a send, to an approval's resumeData. */
const maxDepth = defaultThreadConfig.maxInputDepth;
const inputSpec: PayloadSpec = {
  schema: threadInputSchema,
  valid: threadInput as fc.Arbitrary<Record<string, unknown>>,
  tooDeep: (payload) => nestedDeeperThan(payload, maxDepth),
};
const batchSpec: PayloadSpec = {
  schema: notificationBatchSchema,
  valid: notificationBatch,
  tooDeep: (payload) =>
    (payload as { notifications: unknown[] }).notifications.some((notification) =>
      nestedDeeperThan(notification, maxDepth),
    ),
};

/** Every signal and update of the thread workflow that takes a payload, by wire name. */
export const payloadSpecs: Record<string, PayloadSpec> = {
  sendMessage: inputSpec,
  queueMessage: inputSpec,
  sendSignal: inputSpec,
  submitInput: inputSpec,
  sendNotification: batchSpec,
  submitNotifications: batchSpec,
  abortThread: {
    schema: abortRequestSchema,
    valid: fc.record({ clearPendingSignals: fc.boolean() }, { requiredKeys: [] }),
  },
  cancelQueued: {
    schema: cancelQueuedRequestSchema,
    valid: fc.record({ signalIds: fc.array(id('s'), { minLength: 1, maxLength: 4 }) }),
  },
  approveTool: {
    schema: toolApprovalSchema,
    valid: fc.record(
      {
        toolCallId: id('call'),
        approved: fc.boolean(),
        resumeData: fc.jsonValue({ maxDepth: 2 }),
        declineReason: fc.string({ minLength: 1, maxLength: 50 }),
      },
      { requiredKeys: ['toolCallId', 'approved'] },
    ),
    tooDeep: (payload) => nestedDeeperThan((payload as { resumeData?: unknown }).resumeData, maxDepth),
  },
  changeNotificationStatus: {
    schema: notificationStatusRequestSchema,
    valid: fc.record({
      ids: fc.array(id('n'), { minLength: 1, maxLength: 3 }),
      change: fc.constantFrom('seen', 'dismiss', 'archive'),
    }),
  },
};

/** A valid payload with one field broken (or not: a replacement may happen to fit). */
function broken(valid: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<unknown> {
  return fc
    .tuple(
      valid,
      fc.nat(),
      fc.constantFrom('confuse', 'hostile', 'remove', 'add', 'deep', 'huge', 'proto'),
      fc.oneof(typeConfused, hostileString),
      fc.constantFrom(...PROTO_KEYS, 'unknown', 'state', 'delivery'),
      deep,
      huge,
    )
    .map(([payload, n, how, replacement, key, deepValue, hugeValue]) => {
      const keys = Object.keys(payload);
      const field = keys[n % Math.max(1, keys.length)] ?? 'id';
      switch (how) {
        case 'remove': {
          const { [field]: _removed, ...rest } = payload;
          return rest;
        }
        case 'add':
          return withOwnKey(payload, key, replacement);
        case 'deep': {
          // In a send, half the time inside its first notification: the thread bounds each notification's depth.
          const [first, ...others] = Array.isArray(payload.notifications) ? (payload.notifications as unknown[]) : [];
          if (first && typeof first === 'object' && n % 2 === 0) {
            const deepest = withOwnKey(first as Record<string, unknown>, 'payload', deepValue);
            return withOwnKey(payload, 'notifications', [deepest, ...others]);
          }
          return withOwnKey(payload, field, deepValue);
        }
        case 'huge':
          return withOwnKey(payload, field, hugeValue);
        case 'proto':
          return withOwnKey(payload, field, JSON.parse('{"__proto__": {"polluted": "yes"}}'));
        default:
          return withOwnKey(payload, field, replacement);
      }
    });
}

/** The arguments of one signal or update call: mostly one payload, sometimes none or two. */
export function argsArbitrary(spec: PayloadSpec): fc.Arbitrary<unknown[]> {
  const payload = fc.oneof(
    { weight: 3, arbitrary: spec.valid as fc.Arbitrary<unknown> },
    { weight: 5, arbitrary: broken(spec.valid) },
    { weight: 1, arbitrary: fc.oneof(typeConfused, protoObject, fc.jsonValue({ maxDepth: 3 }), deep) },
  );
  return fc.oneof(
    { weight: 10, arbitrary: payload.map((p) => [p]) },
    { weight: 1, arbitrary: fc.constant<unknown[]>([]) },
    { weight: 1, arbitrary: fc.tuple(payload, payload).map(([a, b]) => [a, b]) },
  );
}
