/**
 * Rate limits shared by every gateway on one Redis (`REDIS_URL`): the token bucket of `./limits`, kept in Redis and
 * spent by one Lua script per request, so that N gateways together allow a caller the configured rate once, not N
 * times. The script reads, refills, spends and writes the bucket atomically, on the Redis server's clock (gateways
 * with skewed clocks agree), and sets the key to expire once the bucket would be full again: an absent key is a
 * full bucket, so idle callers cost Redis nothing.
 *
 * Redis unreachable: the gateway decides with its own per-process bucket (as without Redis), so traffic is never
 * blocked because Redis is down, and never unlimited either; a caller then gets up to N times the rate across N
 * gateways until Redis answers again. The switch is logged (a warning when it starts, a line when it ends) and every
 * local decision counts in `threadline_rate_limit_fallbacks_total`. A request waits for Redis at most `timeoutMs`;
 * while the connection is down, or for `retryMs` after a command failed, requests do not wait for it at all.
 *
 * @example
 * const limiter = new SharedTokenBuckets({ perSecond: 200, burst: 400 }, { redisUrl, timeoutMs: 250, log });
 * await limiter.take(caller.id); // throws RateLimitedError (429) with retryAfterSeconds
 */
import { Redis, type Result } from 'ioredis';
import { metrics, type Logger } from '../observability';
import { rateLimitedError, TokenBuckets, type RateLimit, type RateLimiter } from './limits';

/*
 * KEYS[1]: the caller's bucket, a hash of `t` (tokens) and `a` (when they were counted, Redis ms).
 * ARGV: tokens per second, bucket size. Returns { 1 | 0 (spent | refused), tokens left as a string }: Lua numbers
 * become integers in a reply, and Retry-After needs the fraction.
 */
const takeScript = `
local key = KEYS[1]
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local tokens, at = burst, now
local state = redis.call('HMGET', key, 't', 'a')
if state[1] and state[2] then
  tokens, at = tonumber(state[1]), tonumber(state[2])
  if now > at then
    tokens = math.min(burst, tokens + (now - at) / 1000 * rate)
    at = now
  end
end
local spent = 0
if tokens >= 1 then
  tokens = tokens - 1
  spent = 1
end
redis.call('HSET', key, 't', tostring(tokens), 'a', tostring(at))
redis.call('PEXPIRE', key, math.ceil((burst - tokens) / rate * 1000) + 1000)
return { spent, tostring(tokens) }
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    threadlineTakeToken(key: string, perSecond: string, burst: string): Result<[number, string], Context>;
  }
}

export interface SharedRateLimitOptions {
  redisUrl: string;
  /** Longest wait for Redis on one request; past it the gateway decides with its own bucket. */
  timeoutMs: number;
  /** Where the switch to and from local buckets is reported. */
  log: Logger;
  /** Key prefix, as the bus's (`threadline`): buckets are `<prefix>:rate:<caller id>`. */
  prefix?: string;
  /** After a failed command, requests skip Redis for this long (default 1 s); ioredis reconnects meanwhile. */
  retryMs?: number;
}

/** Token buckets in Redis, shared by every gateway on it; this gateway's own while Redis does not answer. */
export class SharedTokenBuckets implements RateLimiter {
  private readonly redis: Redis;
  private readonly local: TokenBuckets;
  private readonly prefix: string;
  private readonly retryMs: number;
  /** Set while decisions are local: since when, and why (for the recovery line). */
  private fallback: { since: number; reason: string } | null = null;
  private skipUntil = 0;

  constructor(
    readonly limit: RateLimit,
    private readonly options: SharedRateLimitOptions,
  ) {
    this.local = new TokenBuckets(limit);
    this.prefix = options.prefix ?? 'threadline';
    this.retryMs = options.retryMs ?? 1_000;
    this.redis = new Redis(options.redisUrl, {
      // A command while disconnected fails at once (and is decided locally) instead of queueing behind a dead server.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.timeoutMs,
    });
    // Connection errors reach `take` as failed commands; without a listener ioredis also logs each retry.
    this.redis.on('error', () => {});
    this.redis.defineCommand('threadlineTakeToken', { numberOfKeys: 1, lua: takeScript });
  }

  /** Resolves once Redis answers, or after `ms` (then requests are decided locally until it does). */
  async connected(ms: number): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.redis.on('ready', onReady);
    });
  }

  async take(id: string): Promise<void> {
    const { perSecond, burst } = this.limit;
    if (perSecond <= 0) return;
    if (this.redis.status === 'ready' && Date.now() >= this.skipUntil) {
      let answer: [number, string] | undefined;
      try {
        answer = await this.redis.threadlineTakeToken(`${this.prefix}:rate:${id}`, String(perSecond), String(burst));
      } catch (err) {
        this.skipUntil = Date.now() + this.retryMs;
        this.fellBack((err as Error).message);
      }
      if (answer) {
        this.recovered();
        const [spent, tokens] = answer;
        if (spent === 1) return;
        throw rateLimitedError(this.limit, Number(tokens));
      }
    } else {
      this.fellBack(`the connection is ${this.redis.status}`);
    }
    metrics.rateLimitFallbacks.inc();
    this.local.take(id);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }

  private fellBack(reason: string): void {
    if (this.fallback) return;
    this.fallback = { since: Date.now(), reason };
    this.options.log.warn(
      { reason },
      'rate limits: Redis does not answer, so this gateway counts requests alone (each gateway allows the full rate) until it does',
    );
  }

  private recovered(): void {
    if (!this.fallback) return;
    const { since, reason } = this.fallback;
    this.fallback = null;
    this.options.log.warn(
      { localForMs: Date.now() - since, reason },
      'rate limits: Redis answers again; the gateways share their buckets again',
    );
  }
}
