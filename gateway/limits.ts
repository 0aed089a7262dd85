/**
 * The gateway's own limits (behaviour §8): requests per caller (a token bucket each) and open subscriptions per thread.
 * Both answer 429 when exceeded; neither ever drops or delays a request silently. `TokenBuckets` count per gateway
 * process: with N gateways behind a load balancer, a caller gets up to N times the rate, unless the gateways share
 * their buckets in Redis (`./shared-limits`, with `REDIS_URL`). Subscriptions are always counted per gateway.
 */
import { RateLimitedError } from '../protocol/errors';
import { metrics } from '../observability';

export interface RateLimit {
  /** Tokens added per second; 0 turns the limit off. */
  perSecond: number;
  /** Bucket size: how many requests may arrive at once after a quiet period. */
  burst: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** What the gateway spends a caller's request from: this process's `TokenBuckets`, or the buckets shared in Redis. */
export interface RateLimiter {
  readonly limit: RateLimit;
  /** Spends one token of `id`'s bucket, or throws 429 (`RateLimitedError` with `retryAfterSeconds`). */
  take(id: string): void | Promise<void>;
}

/** The 429 for a bucket holding `tokens` (< 1): Retry-After is the wait until it holds one again. */
export function rateLimitedError(limit: RateLimit, tokens: number): RateLimitedError {
  const { perSecond, burst } = limit;
  const retryAfterSeconds = Math.max(1, Math.ceil((1 - tokens) / perSecond));
  return new RateLimitedError(
    `Rate limit exceeded: ${perSecond} requests per second with bursts of ${burst} per API key (per client address ` +
      `without keys). Retry after ${retryAfterSeconds} s, or raise THREADLINE_RATE_LIMIT_PER_SECOND / THREADLINE_RATE_LIMIT_BURST.`,
    { retryAfterSeconds },
  );
}

/** Buckets idle this long are full again and can be forgotten; bounds memory under many distinct callers. */
const SWEEP_EVERY_MS = 10_000;

/** One token bucket per caller id. `take` spends a token or throws 429 with the wait until the next one. */
export class TokenBuckets implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep: number;

  constructor(
    readonly limit: RateLimit,
    private readonly now: () => number = Date.now,
  ) {
    this.lastSweep = now();
  }

  take(id: string): void {
    const { perSecond, burst } = this.limit;
    if (perSecond <= 0) return;
    const now = this.now();
    this.sweep(now);
    const bucket = this.buckets.get(id) ?? { tokens: burst, updatedAt: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * perSecond);
    bucket.updatedAt = now;
    this.buckets.set(id, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    throw rateLimitedError(this.limit, bucket.tokens);
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    const { perSecond, burst } = this.limit;
    for (const [id, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.updatedAt) / 1000) * perSecond >= burst) this.buckets.delete(id);
    }
  }
}

/** Counts open subscriptions per thread on this gateway (and all of them in `threadline_sse_subscribers`). */
export class SubscriberLimit {
  private readonly open = new Map<string, number>();

  constructor(readonly maxPerThread: number) {}

  /** Reserves a place for one subscriber of `threadKey`, or throws 429; call the returned function exactly once. */
  acquire(threadKey: string, describe: string): () => void {
    const count = this.open.get(threadKey) ?? 0;
    if (count >= this.maxPerThread) {
      throw new RateLimitedError(
        `Thread ${describe} already has ${count} subscribers on this gateway, the limit. Close one, or raise ` +
          'THREADLINE_MAX_SUBSCRIBERS_PER_THREAD.',
      );
    }
    this.open.set(threadKey, count + 1);
    metrics.sseSubscribers.inc();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      metrics.sseSubscribers.dec();
      const left = (this.open.get(threadKey) ?? 1) - 1;
      if (left > 0) this.open.set(threadKey, left);
      else this.open.delete(threadKey);
    };
  }

  count(threadKey: string): number {
    return this.open.get(threadKey) ?? 0;
  }
}
