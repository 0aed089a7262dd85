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
  jsonByteLength,
  nestedDeeperThan,
  ifIdleSchema,
  legacySignalTypes,
  messageSchema,
  notificationBatchSchema,
  signalSchema,
  stateSignalSchema,
  threadInputSchema,
  threadTargetSchema,
  type Contents,
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
  /** Levels of arrays and objects inside one input (default 64, at most `MAX_INPUT_DEPTH_CEILING`). */
  maxInputDepth: number;
}

/**
 * The most a `maxInputDepth` may be raised to: serializing an input (`JSON.stringify`, in the client and in the thread)
 * overflows the stack some thousands of levels down, and a thread whose own step fails that way fails every workflow
 * task.
 */
export const MAX_INPUT_DEPTH_CEILING = 1_000;

/** Throws a `ValidationError` naming `where` unless `depth` is a whole number from 1 to the ceiling. */
export function checkInputDepthBound(depth: unknown, where: string): void {
  if (depth === undefined) return;
  if (typeof depth !== 'number' || !Number.isInteger(depth) || depth < 1 || depth > MAX_INPUT_DEPTH_CEILING) {
    throw new ValidationError(
      `Invalid ${where}: ${String(depth)}. Use a whole number of levels from 1 to ${MAX_INPUT_DEPTH_CEILING}.`,
    );
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(`Invalid ${field}: ${describeZodError(result.error)}`);
  return result.data;
}

/**
 * A message by its shape (text, parts, or an object), so an error names the field inside it: the union of the three
 * would only say "invalid input". File parts are checked for what the worker can load (`checkFileSources`).
 */
function parseMessage(message: unknown): MessageInput {
  const [text, parts, object] = messageSchema.options;
  if (typeof message === 'string') return parse(text, message, 'message');
  if (Array.isArray(message)) return checkFileSources(parse(parts, message, 'message'), 'message');
  const parsed = parse(object, message, 'message');
  checkFileSources(parsed.contents, 'message.contents');
  return parsed;
}

/** Where a file part's bytes may come from: the provider or the worker loads `http(s)` URLs; `data:` is inline. */
const FILE_URL_SCHEMES = ['https:', 'http:', 'data:'];

/**
 * Refuses file parts the worker could never load, before they enter the thread: a part stays in the context window,
 * so one that fails to load would fail every later step of the thread. `url` must be an `https:`, `http:` or
 * `data:` URL (`file:`, `ftp:` and the like are refused); `data` holds base64 or a `data:` URL (the AI SDK reads any
 * other URL there as a URL to download).
 *
 * Server-side requests: an `http(s)` URL reaches the model provider as the URL when the provider takes URLs for
 * that media type (OpenAI: images, and PDFs on the Responses API), and the provider fetches it. Otherwise the
 * worker downloads it (`activities/download.ts`): the AI SDK's download refuses private, loopback and link-local
 * addresses (checked on the resolved address, on every redirect), and Threadline bounds its size and time.
 */
function checkFileSources<C extends Contents>(contents: C, field: string): C {
  if (typeof contents === 'string') return contents;
  for (const [i, part] of contents.entries()) {
    if (part.type !== 'file') continue;
    if (part.url !== undefined) {
      const scheme = urlScheme(part.url);
      if (scheme === null) {
        throw new ValidationError(`Invalid ${field}.${i}.url: not a URL. Send an https:, http: or data: URL.`);
      }
      if (!FILE_URL_SCHEMES.includes(scheme)) {
        throw new ValidationError(
          `Invalid ${field}.${i}.url: the ${scheme} scheme is not supported. Send an https:, http: or data: URL, ` +
            'or the bytes in data (base64).',
        );
      }
    }
    if (part.data !== undefined) {
      const scheme = urlScheme(part.data);
      if (scheme !== null && scheme !== 'data:') {
        throw new ValidationError(
          `Invalid ${field}.${i}.data: data holds base64 or a data: URL, not a ${scheme} URL. Send URLs in url.`,
        );
      }
    }
  }
  return contents;
}

/** The scheme of an absolute URL (`"https:"`), or null when `value` is not one. */
function urlScheme(value: string): string | null {
  try {
    return new URL(value).protocol;
  } catch {
    return null;
  }
}

/** A message (string, parts or `{ contents, attributes }`) addressed to a thread, as the workflow receives it. */
export function messageInput(
  agentId: string,
  delivery: 'send' | 'queue',
  message: MessageInput,
  target: SendTarget,
  options: { id?: string; limits?: IngressLimits } = {},
): ThreadInput {
  const parsedMessage = parseMessage(message);
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

/** A signal (behaviour §2.2) addressed to a thread: legacy types normalised, names checked here, never first in a prompt. */
export function signalInput(
  agentId: string,
  signal: SignalInput,
  target: SendTarget,
  options: { id?: string; limits?: IngressLimits } = {},
): ThreadInput {
  const parsed = parse(signalSchema, signal, 'signal');
  checkFileSources(parsed.contents, 'signal.contents');
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
 * A state signal (behaviour §3.1) addressed to a thread: `id` is the lane, `signalId` (or the Idempotency-Key) the input's
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
  checkFileSources(parsed.contents, 'signal.contents');
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
  for (const [i, n] of batch.notifications.entries()) checkBounds(n, `Notification ${i}`, options.limits);
  return batch;
}

/** A value nested deep enough overflows the stack of whatever serializes it next (the gateway's answer, a step). */
function checkDepth(value: unknown, what: string, limits: IngressLimits = defaultLimits): void {
  const maxDepth = limits.maxInputDepth ?? defaultLimits.maxInputDepth;
  if (nestedDeeperThan(value, maxDepth)) {
    throw new ValidationError(
      `${what} nests arrays and objects deeper than ${maxDepth} levels (maxInputDepth). Send a flatter value.`,
    );
  }
}

/** An input within the ingress limits: nested at most `maxInputDepth` levels, at most `maxInputBytes` as JSON. */
function checkBounds(value: unknown, what: string, limits: IngressLimits = defaultLimits): void {
  checkDepth(value, what, limits);
  const bytes = jsonByteLength(value);
  if (bytes > limits.maxInputBytes) {
    throw new PayloadTooLargeError(
      `${what} is ${bytes} bytes; the limit is ${limits.maxInputBytes}. Send less, or raise THREADLINE_MAX_INPUT_BYTES.`,
    );
  }
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
  checkDepth(input, 'The input', limits);
  const parsed = parse(threadInputSchema, input, 'input');
  checkBounds(parsed, 'The input', limits);
  return parsed;
}
