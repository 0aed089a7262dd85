/**
 * Which Temporal failures are transient: the gRPC codes Temporal's own client retries (it has given up by the time the
 * error reaches us) and a passed deadline. The dev server's visibility store, for one, answers a listing with
 * `2 UNKNOWN: something went wrong, please retry`; a server that does not answer is `14 UNAVAILABLE`. Such a failure
 * is not the caller's fault and not the gateway's: it is a 503 with `Retry-After`, like `/ready` when Temporal does
 * not answer, and the HTTP SDK resends it (with the same id for a send).
 */
import { isGrpcServiceError } from '@temporalio/client';
import { ThreadlineError, UnavailableError } from '../protocol/errors';
import { grpcStatusName, type GrpcStatusName } from './grpc-status';

const TRANSIENT: ReadonlySet<GrpcStatusName> = new Set([
  'UNKNOWN',
  'DEADLINE_EXCEEDED',
  'RESOURCE_EXHAUSTED',
  'ABORTED',
  'UNAVAILABLE',
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
    const code = isGrpcServiceError(e) ? grpcStatusName(e.code) : undefined;
    if (code && TRANSIENT.has(code)) {
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

/**
 * The wait a 503 asks for while a thread's workflow task is on a retry attempt: the next attempt comes when its
 * start-to-close timeout (10 s) ends or a live worker takes it.
 */
export const TASK_RETRY_AFTER_SECONDS = 5;

/** An error's message with its causes' (a gRPC refusal arrives wrapped). */
export function messagesOf(err: unknown): string {
  const messages: string[] = [];
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; depth++) {
    if (typeof e.message === 'string') messages.push(e.message);
    e = e.cause as typeof e;
  }
  return messages.join(' | ');
}

/**
 * Temporal refuses updates and queries while the workflow's task is on its third attempt or later (a worker died
 * holding it, or it keeps failing): `FAILED_PRECONDITION` with `WorkflowNotReadyFailure` ("Workflow Task in failed
 * state"; server `service/history/api/updateworkflow` and `api/queryworkflow`), until a worker completes that task.
 * Signals and signal-with-start are still taken.
 */
export function workflowTaskFailing(err: unknown): boolean {
  return /Workflow Task in failed state/i.test(messagesOf(err));
}

/**
 * A read (a query) refused because the thread's workflow task is failing, as a 503 to retry; else null. The thread's
 * state is there, Temporal only cannot run a query until a worker completes the task: not an internal error.
 */
export function unreadableWhileTaskFails(err: unknown): UnavailableError | null {
  if (!workflowTaskFailing(err)) return null;
  return new UnavailableError(
    "The thread's workflow task is being retried (a worker died holding it, or it keeps failing) and Temporal " +
      `answers no read until a worker completes it: retry after ${TASK_RETRY_AFTER_SECONDS} s.`,
    { cause: err, retryAfterSeconds: TASK_RETRY_AFTER_SECONDS },
  );
}
