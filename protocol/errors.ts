/**
 * One error class per concept, under `ThreadlineError`. The gateway maps them to HTTP statuses in one place.
 */

export class ThreadlineError extends Error {
  override name = 'ThreadlineError';
  readonly status: number = 500;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Bad input: names the field and says how to fix it. HTTP 400. */
export class ValidationError extends ThreadlineError {
  override name = 'ValidationError';
  override readonly status = 400;
}

/** Unknown agent, thread or tool call. HTTP 404. */
export class NotFoundError extends ThreadlineError {
  override name = 'NotFoundError';
  override readonly status = 404;
}

/** The thread's state does not allow the request (queue full, tool call already decided). HTTP 409. */
export class ConflictError extends ThreadlineError {
  override name = 'ConflictError';
  override readonly status = 409;
}

/** An input over the configured size limit. HTTP 413. */
export class PayloadTooLargeError extends ThreadlineError {
  override name = 'PayloadTooLargeError';
  override readonly status = 413;
}

/** A body in a media type the route does not read (its JSON body sent as anything but JSON). HTTP 415. */
export class UnsupportedMediaTypeError extends ThreadlineError {
  override name = 'UnsupportedMediaTypeError';
  override readonly status = 415;
}

/** No API key, or one the gateway does not know. HTTP 401. */
export class UnauthorizedError extends ThreadlineError {
  override name = 'UnauthorizedError';
  override readonly status = 401;
}

/** The caller may not act on this resource. HTTP 403. */
export class ForbiddenError extends ThreadlineError {
  override name = 'ForbiddenError';
  override readonly status = 403;
}

/** An error a retry can get past: its wait, sent as `Retry-After`. */
export abstract class RetryLaterError extends ThreadlineError {
  /** Seconds after which a retry can succeed, sent as `Retry-After`; undefined when no wait is known to help. */
  readonly retryAfterSeconds?: number;

  constructor(message: string, options?: { cause?: unknown; retryAfterSeconds?: number }) {
    super(message, options);
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
}

/** Too many requests (rate limit) or too many of something at once (subscribers per thread). HTTP 429. */
export class RateLimitedError extends RetryLaterError {
  override name = 'RateLimitedError';
  override readonly status = 429;
}

/**
 * Temporal failed the request for a passing reason (it does not answer, is overloaded, or answered "please retry"),
 * after its client's own retries. Nothing says the request was wrong: send it again after `retryAfterSeconds` (a send
 * resent with the same id is applied once). HTTP 503 with `Retry-After`.
 */
export class UnavailableError extends RetryLaterError {
  override name = 'UnavailableError';
  override readonly status = 503;
}

export const isThreadlineError = (e: unknown): e is ThreadlineError => e instanceof ThreadlineError;
export const isValidationError = (e: unknown): e is ValidationError => e instanceof ValidationError;
export const isNotFoundError = (e: unknown): e is NotFoundError => e instanceof NotFoundError;
export const isConflictError = (e: unknown): e is ConflictError => e instanceof ConflictError;
export const isUnauthorizedError = (e: unknown): e is UnauthorizedError => e instanceof UnauthorizedError;
export const isForbiddenError = (e: unknown): e is ForbiddenError => e instanceof ForbiddenError;
export const isRateLimitedError = (e: unknown): e is RateLimitedError => e instanceof RateLimitedError;
export const isUnavailableError = (e: unknown): e is UnavailableError => e instanceof UnavailableError;
export const isRetryLaterError = (e: unknown): e is RetryLaterError => e instanceof RetryLaterError;
