/**
 * What the HTTP SDK throws when the gateway answers with a non-2xx status (or something that is not the answer the
 * route promises).
 */
import { ThreadlineError } from '../protocol/errors';

/** The gateway's error body: `{ error: { type, message } }`. */
export interface ErrorBody {
  error: { type: string; message: string };
}

/**
 * A non-2xx answer: `status` is the HTTP status, `type` and `message` come from the gateway's
 * `{ error: { type, message } }` body (`ValidationError`, `NotFoundError`, `ConflictError`, …).
 * `body` keeps the parsed body, e.g. the send result of a `409` whose `action` is `blocked`.
 *
 * @example
 * try { await agent.sendMessage('hi', thread); } catch (err) { if (isThreadlineHttpError(err) && err.status === 404) … }
 */
export class ThreadlineHttpError extends ThreadlineError {
  override name = 'ThreadlineHttpError';
  override readonly status: number;
  readonly type: string;
  readonly body: unknown;
  /** From a `Retry-After` header (429, 503): how long the gateway asks callers to wait. */
  readonly retryAfterMs?: number;

  constructor(
    status: number,
    type: string,
    message: string,
    body?: unknown,
    options: { cause?: unknown; retryAfterMs?: number } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = status;
    this.type = type;
    this.body = body;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

export const isThreadlineHttpError = (e: unknown): e is ThreadlineHttpError => e instanceof ThreadlineHttpError;

/** Builds the error for a non-2xx response, reading (and so consuming) its body. */
export async function errorFromResponse(response: Response): Promise<ThreadlineHttpError> {
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (a proxy's HTML page, say): keep the text.
  }
  const { type, message } = describeBody(response, body, text);
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
  return new ThreadlineHttpError(response.status, type, message, body, { retryAfterMs });
}

/** `Retry-After` is seconds or an HTTP date. */
function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1_000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** How long to wait before sending again: the gateway's `Retry-After` when it gave one (capped), else `backoffMs`. */
export function retryDelay(err: unknown, backoffMs: number, capMs: number): number {
  const asked = isThreadlineHttpError(err) ? err.retryAfterMs : undefined;
  return asked === undefined ? backoffMs : Math.min(capMs, Math.max(backoffMs, asked));
}

function describeBody(response: Response, body: unknown, text: string): { type: string; message: string } {
  if (isRecord(body)) {
    const error = body.error;
    if (isRecord(error) && typeof error.message === 'string') {
      return { type: typeof error.type === 'string' ? error.type : 'HttpError', message: error.message };
    }
    if (typeof error === 'string') return { type: 'HttpError', message: error };
    if (body.action === 'blocked') {
      return {
        type: 'BlockedError',
        message:
          'The thread is waiting for a tool approval and this input cannot wake it (action "blocked"). ' +
          'Approve or decline the pending tool call first.',
      };
    }
  }
  const detail = text && !isRecord(body) ? `: ${text.slice(0, 200)}` : '';
  return { type: 'HttpError', message: `HTTP ${response.status} ${response.statusText}${detail}`.trim() };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether a failed request may succeed when sent again: network failures and 5xx/408/429 answers. Any other 4xx
 * (bad input, unknown thread, no access) and a response that is not what the route promises are final.
 */
export function isRetryable(err: unknown): boolean {
  if (isThreadlineHttpError(err)) return err.status >= 500 || err.status === 408 || err.status === 429;
  return !isAbortError(err);
}

export function isAbortError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';
}
