/**
 * Caller-facing input shapes → the workflow's `ThreadInput`, validated at ingress with the same schemas the
 * workflow uses.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { PayloadTooLargeError, ValidationError } from '../protocol/errors';
import {
  defaultLimits,
  describeZodError,
  ifActiveSchema,
  ifIdleSchema,
  jsonByteLength,
  legacySignalTypes,
  messageSchema,
  notificationBatchSchema,
  signalSchema,
  stateSignalSchema,
  threadInputSchema,
  threadTargetSchema,
  type MessageInput,
  type NotificationBatch,
  type NotificationInput,
  type SignalInput,
  type StateSignalInput,
  type ThreadInput,
} from '../protocol/schemas';
import type { SendTarget } from '../protocol/api';

export interface IngressLimits {
  maxInputBytes: number;
}

function parse<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(`Invalid ${field}: ${describeZodError(result.error)}`);
  return result.data;
}

/** A message (string, parts or `{ contents, attributes }`) addressed to a thread, as the workflow receives it. */
export function messageInput(
  agentId: string,
  delivery: 'send' | 'queue',
  message: MessageInput,
  target: SendTarget,
  options: { id?: string; limits?: IngressLimits } = {},
): ThreadInput {
  const parsedMessage = parse(messageSchema, message, 'message');
  const base = targetFields(target);
  const body =
    typeof parsedMessage === 'string' || Array.isArray(parsedMessage) ? { contents: parsedMessage } : parsedMessage;
  const input: ThreadInput = {
    id: ('id' in body && body.id) || options.id || randomUUID(),
    agentId,
    delivery,
    type: 'user',
    contents: body.contents,
    ...('attributes' in body && body.attributes ? { attributes: body.attributes } : {}),
    ...('metadata' in body && body.metadata ? { metadata: body.metadata } : {}),
    ...('providerOptions' in body && body.providerOptions ? { providerOptions: body.providerOptions } : {}),
    ...base,
    sentAt: Date.now(),
  };
  return checkInput(input, options.limits);
}

/** A signal (SPEC §2.2) addressed to a thread: legacy types normalised, names checked here, never first in a prompt. */
export function signalInput(
  agentId: string,
  signal: SignalInput,
  target: SendTarget,
  options: { id?: string; limits?: IngressLimits } = {},
): ThreadInput {
  const parsed = parse(signalSchema, signal, 'signal');
  const base = targetFields(target);
  const input: ThreadInput = {
    id: parsed.id || options.id || randomUUID(),
    agentId,
    delivery: 'send',
    type: legacySignalTypes[parsed.type],
    contents: parsed.contents,
    ...(parsed.tagName ? { tagName: parsed.tagName } : {}),
    ...(parsed.attributes ? { attributes: parsed.attributes } : {}),
    ...(parsed.metadata ? { metadata: parsed.metadata } : {}),
    ...(parsed.providerOptions ? { providerOptions: parsed.providerOptions } : {}),
    ...(parsed.transient ? { transient: true } : {}),
    ...base,
    sentAt: Date.now(),
  };
  return checkInput(input, options.limits);
}

/**
 * A state signal (SPEC §3.1) addressed to a thread: `id` is the lane, `signalId` (or the Idempotency-Key) the input's
 * idempotency key. Routed like any signal; the thread skips it when the lane's latest state has the same cacheKey
 * and mode.
 */
export function stateInput(
  agentId: string,
  signal: StateSignalInput,
  target: SendTarget,
  options: { id?: string; limits?: IngressLimits } = {},
): ThreadInput {
  const parsed = parse(stateSignalSchema, signal, 'state signal');
  const base = targetFields(target);
  const input: ThreadInput = {
    id: parsed.signalId || options.id || randomUUID(),
    agentId,
    delivery: 'send',
    type: 'state',
    contents: parsed.contents,
    state: {
      laneId: parsed.id,
      mode: parsed.mode,
      cacheKey: parsed.cacheKey,
      ...(parsed.value !== undefined ? { value: parsed.value } : {}),
      ...(parsed.delta !== undefined ? { delta: parsed.delta } : {}),
    },
    ...(parsed.tagName ? { tagName: parsed.tagName } : {}),
    ...(parsed.attributes ? { attributes: parsed.attributes } : {}),
    ...(parsed.metadata ? { metadata: parsed.metadata } : {}),
    ...(parsed.providerOptions ? { providerOptions: parsed.providerOptions } : {}),
    ...base,
    sentAt: Date.now(),
  };
  return checkInput(input, options.limits);
}

/** Notifications (one or many) as the workflow receives them: one batch, one idempotency key. */
export function notificationBatch(
  agentId: string,
  notifications: NotificationInput | NotificationInput[],
  target: { resourceId: string; threadId: string },
  options: { id?: string; limits?: IngressLimits } = {},
): NotificationBatch {
  parse(threadTargetSchema, { resourceId: target.resourceId, threadId: target.threadId }, 'target');
  const batch = parse(
    notificationBatchSchema,
    {
      id: options.id || randomUUID(),
      agentId,
      notifications: Array.isArray(notifications) ? notifications : [notifications],
      sentAt: Date.now(),
    },
    'notifications',
  );
  const limits = options.limits ?? defaultLimits;
  for (const [i, n] of batch.notifications.entries()) {
    const bytes = jsonByteLength(n);
    if (bytes > limits.maxInputBytes) {
      throw new PayloadTooLargeError(
        `Notification ${i} is ${bytes} bytes; the limit is ${limits.maxInputBytes}. Send less, or raise THREADLINE_MAX_INPUT_BYTES.`,
      );
    }
  }
  return batch;
}

function targetFields(target: SendTarget): Pick<ThreadInput, 'ifActive' | 'ifIdle' | 'runId'> {
  parse(threadTargetSchema, { resourceId: target.resourceId, threadId: target.threadId }, 'target');
  const ifActive = target.ifActive === undefined ? undefined : parse(ifActiveSchema, target.ifActive, 'ifActive');
  const ifIdle = target.ifIdle === undefined ? undefined : parse(ifIdleSchema, target.ifIdle, 'ifIdle');
  return {
    ...(ifActive ? { ifActive } : {}),
    ...(ifIdle ? { ifIdle } : {}),
    ...(target.runId ? { runId: target.runId } : {}),
  };
}

/** Validates a complete workflow input (also what raw Temporal clients must send) and its size. */
export function checkInput(input: unknown, limits: IngressLimits = defaultLimits): ThreadInput {
  const parsed = parse(threadInputSchema, input, 'input');
  const bytes = jsonByteLength(parsed);
  if (bytes > limits.maxInputBytes) {
    throw new PayloadTooLargeError(
      `The input is ${bytes} bytes; the limit is ${limits.maxInputBytes}. Send less, or raise THREADLINE_MAX_INPUT_BYTES.`,
    );
  }
  return parsed;
}
