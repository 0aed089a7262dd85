/**
 * How the Temporal client resends an RPC the server refused for a passing reason: the SDK's defaults (10 attempts,
 * backoff ×1.7 from 100 ms, from 1 s for RESOURCE_EXHAUSTED, at most 5 s apart), except for the refusal a thread
 * answers while it continues as new. The server then turns inputs away with RESOURCE_EXHAUSTED "workflow is closing"
 * until the next execution runs, which takes about 100 ms; the SDK's 1.7 s first wait for that status (meant for rate
 * limits) made every send that met a hand-over wait 1.7 s or more. Those are resent from 50 ms, like UNAVAILABLE.
 */
import {
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
  type GrpcRetryOptions,
} from '@temporalio/client';
import type { TemporalConnectionOptions } from '../config/temporal';
import { GrpcStatus } from './grpc-status';

/** The server's words while a workflow's close (continue-as-new) is being committed. */
const closingWorkflow = /workflow is closing/i;

/** First wait before resending a refusal of a workflow that is continuing as new, in milliseconds. */
export const CLOSING_RETRY_INITIAL_MS = 50;

/** The SDK's retry options, with a short first wait for a workflow that is continuing as new. */
export function threadlineGrpcRetryOptions(): GrpcRetryOptions {
  const sdk = defaultGrpcRetryOptions();
  const closing = defaultGrpcRetryOptions({ initialIntervalMs: () => CLOSING_RETRY_INITIAL_MS });
  return {
    retryableDecider: sdk.retryableDecider,
    delayFunction: (attempt, status) =>
      status.code === GrpcStatus.RESOURCE_EXHAUSTED && closingWorkflow.test(status.details ?? '')
        ? closing.delayFunction(attempt, status)
        : sdk.delayFunction(attempt, status),
  };
}

/** Connection options for a Threadline process's Temporal client: the settings, and the retry policy above. */
export function threadlineConnectionOptions(settings: TemporalConnectionOptions): ConnectionOptions {
  return { ...settings, interceptors: [makeGrpcRetryInterceptor(threadlineGrpcRetryOptions())] };
}
