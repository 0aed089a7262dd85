/**
 * Which Temporal failures are transient: the gRPC codes Temporal's own client retries (it has given up by the time the
 * error reaches us) and a passed deadline. The dev server's visibility store, for one, answers a listing with
 * `2 UNKNOWN: something went wrong, please retry`; a server that does not answer is `14 UNAVAILABLE`. Such a failure
 * is not the caller's fault and not the gateway's: it is a 503 with `Retry-After`, like `/ready` when Temporal does
 * not answer, and the HTTP SDK resends it (with the same id for a send).
 */
import { isGrpcServiceError } from '@temporalio/client';
import { ThreadlineError, UnavailableError } from '../protocol/errors';

const TRANSIENT_CODES: ReadonlyMap<number, string> = new Map([
  [2, 'UNKNOWN'],
  [4, 'DEADLINE_EXCEEDED'],
  [8, 'RESOURCE_EXHAUSTED'],
  [10, 'ABORTED'],
  [14, 'UNAVAILABLE'],
]);

/** The wait a 503 for a transient Temporal failure asks for (`Retry-After`). */
export const TEMPORAL_RETRY_AFTER_SECONDS = 1;

/**
 * `err` as an `UnavailableError` when it is (or wraps) a transient Temporal failure, else null. An error that already
 * says what was wrong (a `ThreadlineError` with a status of its own) stays itself. The message names the gRPC code,
 * not Temporal's details (they may name internal addresses); log `err` for those.
 */
export function temporalUnavailable(err: unknown): UnavailableError | null {
  if (err instanceof ThreadlineError && err.status !== 500) return null;
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 5; depth++) {
    const code = isGrpcServiceError(e) ? TRANSIENT_CODES.get(e.code) : undefined;
    if (code) {
      return new UnavailableError(
        `Temporal did not complete the request (gRPC ${code}), a transient failure: retry after ` +
          `${TEMPORAL_RETRY_AFTER_SECONDS} s. A send resent with the same id is applied once.`,
        { cause: err, retryAfterSeconds: TEMPORAL_RETRY_AFTER_SECONDS },
      );
    }
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}
