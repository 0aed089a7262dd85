/**
 * Requests written for Mastra's server (`@mastra/client-js`), mapped onto Threadline's routes before they are
 * validated, and the answers Mastra's client expects (docs/mastra-compat.md, G4 and G5). A Mastra field is either
 * mapped, ignored because it means nothing here (listed), or refused with a 400 that names it: never dropped unseen.
 * Threadline's own clients never send these fields, so for them nothing changes.
 */
import { ValidationError } from '../protocol/errors';
import { legacySignalTypes, type InputResult } from '../protocol/schemas';

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Mastra `streamOptions` keys with no meaning in Threadline: accepted and ignored. */
const IGNORED_STREAM_OPTIONS = [
  'memory', // the thread is the target's (resourceId, threadId)
  'tracingOptions',
  'savePerStep', // every step is recorded in the thread's history
  'versions',
  'scorers',
  'returnScorerData',
  'requestContextKeys',
];

/** Mastra `streamOptions` keys that would change the run if honoured: refused, with what to do instead. */
const UNSUPPORTED_STREAM_OPTIONS: Record<string, string> = {
  clientTools: 'tools run on the worker: define them on the agent (defineAgent({ tools }))',
  instructions: "the agent's instructions are set on the worker (defineAgent({ instructions }))",
  system: "the agent's instructions are set on the worker (defineAgent({ instructions }))",
  toolsets: 'tools run on the worker: define them on the agent (defineAgent({ tools }))',
  activeTools: 'every tool of the agent is available to the model',
  model: 'the model is set on the worker (defineAgent({ model }))',
  structuredOutput: 'runs answer text',
  output: 'runs answer text',
  untilIdle: 'a subscription already streams every run of the thread',
  stopWhen: 'use maxSteps',
  requireToolApproval: 'set requireApproval on the tool (defineAgent({ tools }))',
  providerOptions: "set providerOptions on the message ({ contents, providerOptions }) or on the agent's model",
};

/** `modelSettings` keys dropped: Temporal retries model calls, the provider does not. */
const IGNORED_MODEL_SETTINGS = ['maxRetries'];

/**
 * The body of `send-message`, `queue-message` and `signals` in Threadline's terms: a `runId` target still needs the
 * thread; `ifIdle.streamOptions` mapped (`requestContext` → `runtimeContext`, meaningless keys dropped, run-changing
 * keys refused); part-level `providerOptions` refused (the model gets them per message, not per part).
 */
export function fromMastraSendBody(raw: unknown): unknown {
  if (!isRecord(raw)) return raw;
  if (raw.runId !== undefined && raw.threadId === undefined && raw.resourceId === undefined) {
    throw new ValidationError('Threadline addresses threads by resourceId and threadId; send them along with runId.');
  }
  checkParts(raw.message, 'message');
  if (isRecord(raw.signal)) checkParts(raw.signal.contents, 'signal.contents');
  if (!isRecord(raw.ifIdle) || !isRecord(raw.ifIdle.streamOptions)) return raw;
  return { ...raw, ifIdle: { ...raw.ifIdle, streamOptions: fromMastraStreamOptions(raw.ifIdle.streamOptions) } };
}

function fromMastraStreamOptions(options: Json): Json {
  const field = (key: string) => `ifIdle.streamOptions.${key}`;
  const mapped: Json = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || IGNORED_STREAM_OPTIONS.includes(key)) continue;
    // Own keys only: `constructor` or `toString` must not find Object's.
    const reason = Object.hasOwn(UNSUPPORTED_STREAM_OPTIONS, key) ? UNSUPPORTED_STREAM_OPTIONS[key] : undefined;
    if (reason) throw new ValidationError(`${field(key)} is not supported by Threadline: ${reason}.`);
    mapped[key] = value;
  }
  if (mapped.requestContext !== undefined) {
    if (mapped.runtimeContext !== undefined) {
      throw new ValidationError(
        `Send ${field('requestContext')} or ${field('runtimeContext')}, not both: they are the same field.`,
      );
    }
    mapped.runtimeContext = mapped.requestContext;
    delete mapped.requestContext;
  }
  if (isRecord(mapped.modelSettings)) {
    mapped.modelSettings = Object.fromEntries(
      Object.entries(mapped.modelSettings).filter(([key]) => !IGNORED_MODEL_SETTINGS.includes(key)),
    );
  }
  return mapped;
}

function checkParts(contents: unknown, field: string): void {
  const parts = isRecord(contents) ? contents.contents : contents;
  const path = isRecord(contents) ? `${field}.contents` : field;
  if (!Array.isArray(parts)) return;
  parts.forEach((part, i) => {
    if (isRecord(part) && part.providerOptions !== undefined) {
      throw new ValidationError(
        `${path}[${i}].providerOptions: Threadline does not support providerOptions on a part; set them on the ` +
          'message or signal ({ contents, providerOptions }), where they apply to the whole input.',
      );
    }
  });
}

/** The body of `send-tool-approval`: Mastra's client-tool continuation (`messages`, `streamOptions`) is refused. */
export function fromMastraApprovalBody(raw: unknown): unknown {
  if (!isRecord(raw)) return raw;
  if (raw.messages !== undefined) {
    throw new ValidationError(
      'messages: client tools are not supported by Threadline; tools run on the worker (defineAgent({ tools })).',
    );
  }
  if (raw.streamOptions !== undefined) {
    throw new ValidationError(
      'streamOptions: a parked run keeps the options it was woken with; Threadline does not change them on approval.',
    );
  }
  return raw;
}

/**
 * Splits Mastra's `signal.createdAt` (an ISO string; a `Date` arrives as one) off the signal, which Threadline's
 * schema does not know: the thread stamps an input when it accepts it.
 */
export function takeCreatedAt(signal: unknown): { signal: unknown; createdAt?: string } {
  if (!isRecord(signal) || signal.createdAt === undefined) return { signal };
  const { createdAt, ...rest } = signal;
  if (typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt))) {
    throw new ValidationError('Invalid signal: createdAt: must be an ISO 8601 date string.');
  }
  return { signal: rest, createdAt: new Date(createdAt).toISOString() };
}

/** The input a send carried, as Mastra's answer echoes it (`CreatedAgentSignal`). */
export interface SignalEcho {
  type: string;
  contents: unknown;
  tagName?: string;
  attributes?: unknown;
  metadata?: unknown;
  providerOptions?: unknown;
  createdAt?: string;
}

/** What a message (a string, parts, or `{ contents, … }`) or a signal carries, for the answer. */
export function echoOf(kind: 'message' | 'signal', input: unknown, createdAt?: string): SignalEcho {
  const body = isRecord(input) ? input : { contents: input };
  const named = String(body.type);
  const type = kind === 'message' ? 'user' : Object.hasOwn(legacySignalTypes, named) ? legacySignalTypes[named] : named;
  const echo: SignalEcho = { type, contents: body.contents };
  for (const key of ['tagName', 'attributes', 'metadata', 'providerOptions'] as const) {
    if (body[key] !== undefined) echo[key] = body[key] as never;
  }
  if (createdAt !== undefined) echo.createdAt = createdAt;
  return echo;
}

/**
 * Threadline's send result with Mastra's answer fields added: `runId` on every answer (the signal's id when no run
 * is involved, as Mastra's server answers; `action` says which) and `signal`, the input as accepted.
 */
export function mastraSendAnswer(
  result: InputResult,
  echo: SignalEcho,
  now: Date,
): InputResult & { runId: string; signal: Json } {
  const { createdAt, ...fields } = echo;
  return {
    ...result,
    runId: result.runId ?? result.signalId,
    signal: { id: result.signalId, ...fields, createdAt: createdAt ?? now.toISOString() },
  };
}
