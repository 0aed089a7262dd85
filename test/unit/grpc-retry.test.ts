/**
 * The Temporal client's resend policy (client/grpc-retry.ts): a thread that is continuing as new is asked again soon,
 * every other refusal keeps the SDK's backoff. Delays are computed, not waited for.
 */
import { defaultGrpcRetryOptions } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { CLOSING_RETRY_INITIAL_MS, threadlineGrpcRetryOptions } from '../../client/grpc-retry';

const status = (code: number, details: string) => ({ code, details, metadata: undefined as never });
const closing = status(8, 'workflow operation can not be applied because workflow is closing');
const rateLimited = status(8, 'namespace rate limit exceeded');
const unavailable = status(14, 'connect ECONNREFUSED 127.0.0.1:7233');

describe('resending refused Temporal calls', () => {
  const options = threadlineGrpcRetryOptions();

  it('resends a refusal of a workflow that is closing from 50 ms, not the 1.7 s the SDK waits for RESOURCE_EXHAUSTED', () => {
    // Jitter is ±20 %: the first resend waits 1.7 × 50 ms × (0.8 … 1.2).
    for (let i = 0; i < 50; i++) {
      expect(options.delayFunction(1, closing)).toBeLessThanOrEqual(1.7 * CLOSING_RETRY_INITIAL_MS * 1.2);
      expect(defaultGrpcRetryOptions().delayFunction(1, closing)).toBeGreaterThanOrEqual(1.7 * 1000 * 0.8);
    }
    // It still backs off: the tenth wait is far longer than the first, at most the SDK's 5 s.
    expect(options.delayFunction(9, closing)).toBeGreaterThan(options.delayFunction(1, closing));
    expect(options.delayFunction(20, closing)).toBeLessThanOrEqual(5_000 * 1.2);
  });

  it("keeps the SDK's waits for a rate limit and for an unreachable server", () => {
    for (let i = 0; i < 50; i++) {
      expect(options.delayFunction(1, rateLimited)).toBeGreaterThanOrEqual(1.7 * 1000 * 0.8);
      const wait = options.delayFunction(1, unavailable);
      expect(wait).toBeGreaterThanOrEqual(1.7 * 100 * 0.8);
      expect(wait).toBeLessThanOrEqual(1.7 * 100 * 1.2);
    }
  });

  it('resends exactly what the SDK resends, as many times', () => {
    const sdk = defaultGrpcRetryOptions();
    for (const s of [closing, rateLimited, unavailable, status(3, 'invalid argument'), status(5, 'not found')]) {
      for (const attempt of [1, 5, 9, 10]) {
        expect(options.retryableDecider(attempt, s)).toBe(sdk.retryableDecider(attempt, s));
      }
    }
  });
});
