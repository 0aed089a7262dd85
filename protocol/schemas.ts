/**
 * The wire schemas shared by the gateway, the clients and the thread workflow.
 * This module runs inside the workflow sandbox too: no Node imports, no clock, no randomness.
 */
import { z } from 'zod';
import { MAX_WORKFLOW_ID_BYTES, encodeIdPart, isWellFormedUnicode, threadKey } from './ids';
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
  type SignalType,
} from './vocabulary';

// The names and limits live in vocabulary.ts (no zod: the workflow sandbox loads them); exported from here as before.
export {
  MAX_NOTIFICATIONS_PER_SEND,
  XML_NAME,
  activeBehaviors,
  defaultLimits,
  idleBehaviors,
  inboxToolActions,
  invalidAttributeNameMessage,
  invalidTagNameMessage,
  jsonByteLength,
  nestedDeeperThan,
  notificationPriorities,
  notificationStatusChanges,
  notificationStatuses,
  signalTypes,
  stateModes,
  type ActiveBehavior,
  type IdleBehavior,
  type NotificationPriority,
  type NotificationStatus,
  type SignalType,
  type StateMode,
} from './vocabulary';

const idString = z.string().min(1, 'must not be empty').max(defaultLimits.maxIdLength);

export const attributeValueSchema = z.union([z.string(), z.number(), z.boolean(), z.null(), z.undefined()]);
// A record drops `__proto__` while copying (assigning it sets the prototype): reject it before, never lose it silently.
const noProtoKey = z.unknown().superRefine((raw, ctx) => {
  if (raw !== null && typeof raw === 'object' && Object.prototype.hasOwnProperty.call(raw, '__proto__')) {
    ctx.addIssue({ code: 'custom', message: `${invalidAttributeNameMessage('__proto__')} (reserved)` });
  }
});
const attributeRecord = z.record(z.string(), attributeValueSchema).superRefine((attrs, ctx) => {
  const names = Object.keys(attrs);
  if (names.length > defaultLimits.maxAttributes) {
    ctx.addIssue({ code: 'custom', message: `at most ${defaultLimits.maxAttributes} attributes are allowed` });
  }
  for (const name of names) {
    if (!XML_NAME.test(name))
      ctx.addIssue({ code: 'custom', message: invalidAttributeNameMessage(name), path: [name] });
  }
});
export const attributesSchema = noProtoKey.pipe(attributeRecord);
export type Attributes = z.infer<typeof attributeRecord>;

export const textPartSchema = z.object({ type: z.literal('text'), text: z.string() });
/**
 * A file: inline bytes (`data`: base64 or a `data:` URL) or a `url`. Ingress (`client/inputs.ts`) accepts only
 * `https:`, `http:` and `data:` URLs, since a part stays in the context window and one the worker cannot load would
 * fail every later step. An `http(s)` URL goes to the model provider as is when it takes URLs for that media type
 * (the provider fetches it); otherwise the worker downloads it with the AI SDK, which refuses private, loopback and
 * link-local addresses, within Threadline's size and time bound (`activities/download.ts`). The workflow keeps
 * this schema unchanged, so histories recorded before the ingress check still replay.
 */
export const filePartSchema = z
  .object({
    type: z.literal('file'),
    data: z.string().optional(),
    url: z.string().optional(),
    mediaType: z.string().min(1),
    filename: z.string().optional(),
  })
  .refine((p) => p.data !== undefined || p.url !== undefined, { message: 'a file part needs data or url' });
export const partSchema = z.discriminatedUnion('type', [textPartSchema, filePartSchema]);
export type TextPart = z.infer<typeof textPartSchema>;
export type FilePart = z.infer<typeof filePartSchema>;
export type Part = z.infer<typeof partSchema>;

export const contentsSchema = z.union([z.string(), z.array(partSchema)]);
export type Contents = z.infer<typeof contentsSchema>;

const jsonRecord = z.record(z.string(), z.unknown());
export const providerOptionsSchema = z.record(z.string(), jsonRecord);

/** `sendMessage` accepts a string, parts, or an object with contents and attributes. */
export const messageSchema = z.union([
  z.string(),
  z.array(partSchema),
  z.object({
    id: idString.optional(),
    contents: contentsSchema,
    attributes: attributesSchema.optional(),
    metadata: jsonRecord.optional(),
    providerOptions: providerOptionsSchema.optional(),
  }),
]);
export type MessageInput = z.infer<typeof messageSchema>;

/** Per-run options a woken run is started with (whatever the step activity accepts). */
export const streamOptionsSchema = z
  .object({
    modelSettings: z
      .object({
        temperature: z.number().optional(),
        topP: z.number().optional(),
        maxOutputTokens: z.number().int().positive().optional(),
        seed: z.number().int().optional(),
        stopSequences: z.array(z.string()).optional(),
      })
      .strict()
      .optional(),
    toolChoice: z
      .union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('tool'), toolName: z.string() })])
      .optional(),
    runtimeContext: jsonRecord.optional(),
    maxSteps: z.number().int().positive().optional(),
  })
  .strict();
export type StreamOptions = z.infer<typeof streamOptionsSchema>;

export const ifActiveSchema = z.object({
  behavior: z.enum(activeBehaviors).optional(),
  attributes: attributesSchema.optional(),
});
export const ifIdleSchema = z.object({
  behavior: z.enum(idleBehaviors).optional(),
  attributes: attributesSchema.optional(),
  streamOptions: streamOptionsSchema.optional(),
});
export type IfActive = z.infer<typeof ifActiveSchema>;
export type IfIdle = z.infer<typeof ifIdleSchema>;

/** A part of the workflow id: a non-empty id of at most `maxIdLength` characters, in well-formed Unicode. */
const threadIdPart = idString.refine(isWellFormedUnicode, {
  message: 'must be well-formed Unicode (it contains a lone UTF-16 surrogate, \\uD800-\\uDFFF)',
});

/**
 * The thread a request names. Besides each id's own limit, the workflow id they make (`threadKey`: both ids
 * percent-encoded) must fit Temporal's limit, which counts bytes after encoding: a non-ASCII character takes 6 to 12
 * of them, so 100 emoji (200 characters) already make a 1,200-byte id.
 */
export const threadTargetSchema = z
  .object({
    resourceId: threadIdPart,
    threadId: threadIdPart,
  })
  .superRefine(({ resourceId, threadId }, ctx) => {
    if (!isWellFormedUnicode(resourceId) || !isWellFormedUnicode(threadId)) return;
    const bytes = threadKey(resourceId, threadId).length;
    if (bytes <= MAX_WORKFLOW_ID_BYTES) return;
    const resourceBytes = encodeIdPart(resourceId).length;
    const threadBytes = encodeIdPart(threadId).length;
    const field = threadBytes >= resourceBytes ? 'threadId' : 'resourceId';
    ctx.addIssue({
      code: 'custom',
      path: [field],
      message:
        `makes a workflow id of ${bytes} bytes once percent-encoded (resourceId ${resourceBytes}, threadId ` +
        `${threadBytes}, plus ${bytes - resourceBytes - threadBytes} of prefix); Temporal accepts at most ` +
        `${MAX_WORKFLOW_ID_BYTES}. Use a shorter ${field}: characters other than ASCII letters, digits and - _ . ` +
        'take 3 to 12 bytes each once encoded.',
    });
  });
export type ThreadTarget = z.infer<typeof threadTargetSchema>;

/** Signal types a caller may send, with the legacy names older clients use (behaviour §2.2). */
export const legacySignalTypes: Record<string, SignalType> = {
  user: 'user',
  reactive: 'reactive',
  notification: 'notification',
  state: 'state',
  'user-message': 'user',
  'system-reminder': 'reactive',
};

export function invalidSignalTypeMessage(type: string): string {
  return `Invalid signal type: ${type}. Use a supported signal type and set tagName for custom XML tags.`;
}

/** A custom XML tag for a signal's wrapper. */
const tagNameSchema = z.string().superRefine((name, ctx) => {
  if (!XML_NAME.test(name)) ctx.addIssue({ code: 'custom', message: invalidTagNameMessage(name) });
});

/** `sendSignal`'s signal, as callers send it (legacy type names accepted, normalised at ingress). */
export const signalSchema = z
  .object({
    id: idString.optional(),
    type: z.string().superRefine((type, ctx) => {
      if (!Object.hasOwn(legacySignalTypes, type)) {
        ctx.addIssue({ code: 'custom', message: invalidSignalTypeMessage(type) });
      } else if (legacySignalTypes[type] === 'state') {
        ctx.addIssue({
          code: 'custom',
          message: 'State signals are sent with sendStateSignal (they need a lane id and cacheKey).',
        });
      }
    }),
    contents: contentsSchema,
    tagName: tagNameSchema.optional(),
    attributes: attributesSchema.optional(),
    metadata: jsonRecord.optional(),
    providerOptions: providerOptionsSchema.optional(),
    transient: z.boolean().optional(),
  })
  .strict();
export type SignalInput = z.input<typeof signalSchema>;

/** A required string whose absence gets the documented message (not zod's generic one). */
const requiredString = (message: string) =>
  z.string({ error: (issue) => (issue.input === undefined ? message : 'must be a string') }).min(1, message);

/**
 * `sendStateSignal`'s state (behaviour §3.1): `id` names the lane, `cacheKey` is the producer's key for "this exact
 * state". `cacheKey` and `mode` are tracking data, never XML attributes; `value`/`delta` travel in the stored
 * message's metadata for processors and the API.
 */
export const stateSignalSchema = z
  .object({
    id: requiredString('state signal id is required').max(defaultLimits.maxIdLength),
    mode: z.enum(stateModes).default('snapshot'),
    cacheKey: requiredString('state signal cacheKey is required').max(1_024),
    contents: contentsSchema,
    value: z.unknown().optional(),
    delta: z.unknown().optional(),
    /** The input's idempotency key (the lane is `id`). */
    signalId: idString.optional(),
    tagName: tagNameSchema.optional(),
    attributes: attributesSchema.optional(),
    metadata: jsonRecord.optional(),
    providerOptions: providerOptionsSchema.optional(),
  })
  .strict();
export type StateSignalInput = z.input<typeof stateSignalSchema>;

/** The lane part of a state input, as the workflow receives it. */
export const stateInfoSchema = z
  .object({
    laneId: idString,
    mode: z.enum(stateModes),
    cacheKey: z.string().min(1).max(1_024),
    value: z.unknown().optional(),
    delta: z.unknown().optional(),
  })
  .strict();
export type StateInfo = z.infer<typeof stateInfoSchema>;

/**
 * One input as the thread workflow receives it (signal `sendMessage` / `queueMessage` / `sendSignal`, or the
 * `submitInput` update). This is the versioned, documented payload any Temporal client may send.
 */
export const threadInputSchema = z
  .object({
    /** Idempotency key: the same id accepted twice is applied once. */
    id: idString,
    agentId: idString,
    /** `send` joins an active run at the next step boundary; `queue` waits for the active run to finish. */
    delivery: z.enum(['send', 'queue']),
    type: z.enum(signalTypes),
    tagName: z
      .string()
      .regex(XML_NAME, {
        message: 'Invalid signal XML tag name. Use letters, digits, _ . - and start with a letter or _.',
      })
      .optional(),
    contents: contentsSchema,
    attributes: attributesSchema.optional(),
    metadata: jsonRecord.optional(),
    providerOptions: providerOptionsSchema.optional(),
    transient: z.boolean().optional(),
    ifActive: ifActiveSchema.optional(),
    ifIdle: ifIdleSchema.optional(),
    /** Address one run: the input is only delivered while that run is active. */
    runId: idString.optional(),
    /** Milliseconds since the epoch, set by the sender. Informational only. */
    sentAt: z.number().optional(),
    /** The lane of a `state` input (required for, and only allowed on, type `state`). */
    state: stateInfoSchema.optional(),
  })
  .strict()
  .superRefine((input, ctx) => {
    if (input.type === 'state' && !input.state)
      ctx.addIssue({
        code: 'custom',
        path: ['state'],
        message: 'a state input needs state { laneId, mode, cacheKey }',
      });
    if (input.type !== 'state' && input.state)
      ctx.addIssue({ code: 'custom', path: ['state'], message: 'only a state input carries state' });
    if (input.type === 'state' && input.transient)
      ctx.addIssue({ code: 'custom', path: ['transient'], message: 'state signals are never transient' });
  });
export type ThreadInput = z.infer<typeof threadInputSchema>;

export const deliveryActions = ['deliver', 'queue', 'defer', 'summarize', 'persist', 'discard'] as const;
export type DeliveryAction = (typeof deliveryActions)[number];

const shortText = (max: number) => z.string().min(1, 'must not be empty').max(max);

/** One notification as an integration sends it (behaviour §4.1). */
export const notificationInputSchema = z
  .object({
    source: shortText(128),
    kind: shortText(128),
    summary: shortText(16 * 1024),
    /** Default `medium` for a new record; on a coalesced one, replaced only when given. */
    priority: z.enum(notificationPriorities).optional(),
    payload: z.unknown().optional(),
    sourceId: shortText(512).optional(),
    dedupeKey: shortText(512).optional(),
    coalesceKey: shortText(512).optional(),
    attributes: attributesSchema.optional(),
    metadata: jsonRecord.optional(),
  })
  .strict();
export type NotificationInput = z.input<typeof notificationInputSchema>;
export type ParsedNotification = z.output<typeof notificationInputSchema>;

/**
 * A batch of notifications as the thread workflow receives it (signal `sendNotification`, update
 * `submitNotifications`): the versioned payload any Temporal client may send.
 */
export const notificationBatchSchema = z
  .object({
    /** Idempotency key of the batch: the same id accepted twice is applied once. */
    id: idString,
    agentId: idString,
    notifications: z
      .array(notificationInputSchema)
      .min(1, 'send at least one notification')
      .max(MAX_NOTIFICATIONS_PER_SEND, `send at most ${MAX_NOTIFICATIONS_PER_SEND} notifications at once`),
    sentAt: z.number().optional(),
  })
  .strict();
export type NotificationBatch = z.output<typeof notificationBatchSchema>;

/** Filters of `listNotifications` and the inbox tool's `list`/`search`. */
export const notificationQuerySchema = z
  .object({
    status: z.array(z.enum(notificationStatuses)).optional(),
    priority: z.array(z.enum(notificationPriorities)).optional(),
    source: z.array(z.string()).optional(),
    /** Case-insensitive text in summary, kind, source or payload. */
    q: z.string().max(1_000).optional(),
    limit: z.number().int().min(1).max(200).default(20),
    /** Opaque: the `nextCursor` of the previous page. */
    cursor: z.string().max(256).optional(),
  })
  .strict();
export type NotificationQuery = z.input<typeof notificationQuerySchema>;

export const notificationStatusRequestSchema = z
  .object({ ids: z.array(idString).min(1).max(1_000), change: z.enum(notificationStatusChanges) })
  .strict();
export type NotificationStatusRequest = z.infer<typeof notificationStatusRequestSchema>;

/** The inbox tool's input (behaviour §4.4). */
export const inboxToolInputSchema = z
  .object({
    action: z.enum(inboxToolActions),
    id: z.string().optional(),
    status: z.enum(notificationStatuses).optional(),
    priority: z.enum(notificationPriorities).optional(),
    source: z.string().optional(),
    query: z.string().optional(),
    limit: z.number().int().min(1).max(100).default(20),
  })
  .superRefine((input, ctx) => {
    if (input.action === 'search' && !input.query)
      ctx.addIssue({ code: 'custom', path: ['query'], message: 'search needs a query' });
    if (['markSeen', 'dismiss', 'archive'].includes(input.action) && !input.id)
      ctx.addIssue({ code: 'custom', path: ['id'], message: `${input.action} needs an id` });
  });
export type InboxToolInput = z.output<typeof inboxToolInputSchema>;

/** `sendToolApproval` (behaviour §2.4), as the workflow's `approveTool` update receives it. */
export const toolApprovalSchema = z
  .object({
    toolCallId: idString,
    approved: z.boolean(),
    resumeData: z.unknown().optional(),
    declineReason: z.string().min(1).max(4_000).optional(),
  })
  .strict();
export type ToolApprovalInput = z.infer<typeof toolApprovalSchema>;

export const abortRequestSchema = z.object({ clearPendingSignals: z.boolean().optional() }).strict();
export const cancelQueuedRequestSchema = z
  .object({ signalIds: z.array(idString).min(1, 'name at least one signal id').max(1_000) })
  .strict();

export const inputActions = [
  'wake',
  'deliver',
  'queued',
  'persist',
  'discard',
  'interrupt',
  'blocked',
  'skipped',
] as const;
export type InputAction = (typeof inputActions)[number];

/** What the thread did with an input. */
export interface InputResult {
  accepted: true;
  action: InputAction;
  runId?: string;
  signalId: string;
  duplicate?: true;
  /** Why nothing was done (`skipped`): `unchanged` = the lane's latest state has this cacheKey and mode. */
  reason?: 'unchanged';
  /** The lane's version after this input (state signals). */
  version?: number;
}

/** A workflow-level rejection of an input (never thrown by signal handlers; logged and dropped there). */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length ? issue.path.join('.') : '(root)';
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}
