/**
 * Rate limits shared across gateways (gateway/shared-limits.ts): two real gateway processes on one real Redis allow a
 * caller one bucket between them, spent atomically (concurrent requests through both get exactly the burst), in keys
 * that expire; with Redis not answering (paused) or down, each gateway decides with its own bucket (never all traffic
 * blocked, never unlimited), says so in its log and its metrics, and shares again once Redis is back. The buckets refill so slowly (one token per
 * 1,000 s) that no assertion depends on time.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness';
import { gatewayEnvFor, startGatewayProcess, type GatewayProcess } from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';

const run = randomUUID();
const BURST = 6;
const keys = Object.fromEntries(
  ['together', 'concurrent', 'hung', 'down', 'back', 'probe'].map((name) => [name, `${name}-${run}`]),
);
const apiKeys = Object.fromEntries(Object.values(keys).map((key) => [key, [`tenant-${run}`]]));

let redis: RedisServer;
let h: Harness;
let gateways: GatewayProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  h = await startHarness({ noWorker: true });
  const env = {
    ...gatewayEnvFor(h, redis.url),
    THREADLINE_API_KEYS: JSON.stringify(apiKeys),
    THREADLINE_RATE_LIMIT_PER_SECOND: '0.001',
    THREADLINE_RATE_LIMIT_BURST: String(BURST),
    THREADLINE_RATE_LIMIT_SHARED: 'true',
    // Request lines would push the fallback warning out of the kept output.
    LOG_LEVEL: 'warn',
  };
  gateways = [await startGatewayProcess(env), await startGatewayProcess(env)];
});
afterAll(async () => {
  for (const g of gateways) await g.kill('SIGKILL');
  await h?.close();
  await redis?.stop();
});

async function get(g: GatewayProcess, key: string): Promise<{ status: number; retryAfter: string | null }> {
  const res = await fetch(`${g.url}/api/agents`, { headers: { authorization: `Bearer ${key}` } });
  await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

/** The caller id the gateway gives a key (gateway/auth.ts), which names its bucket. */
const bucketKey = (key: string) =>
  `threadline:rate:key:${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 12)}`;

const count = (text: string, pattern: RegExp) => text.match(pattern)?.length ?? 0;
/** How many times each gateway had said Redis answers again, before Redis went down. */
const recoveries = new Map<GatewayProcess, number>();

/** Sends requests until the gateway has logged Redis answering again more often than `before` times. */
async function untilRecovered(g: GatewayProcess, before: number): Promise<void> {
  await expect
    .poll(
      async () => {
        await get(g, keys.probe);
        return count(g.output(), /Redis answers again/g);
      },
      { timeout: 60_000, interval: 500 },
    )
    .toBeGreaterThan(before);
}

async function fallbacks(g: GatewayProcess): Promise<number> {
  const text = await (await fetch(`${g.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('threadline_rate_limit_fallbacks_total '));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe('rate limits shared in Redis', () => {
  it('lets two gateways together allow one burst per key, then refuses on both with Retry-After', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < BURST; i++) statuses.push((await get(gateways[i % 2], keys.together)).status);
    expect(statuses).toEqual(Array(BURST).fill(200));
    for (const g of gateways) {
      const refused = await get(g, keys.together);
      expect(refused.status).toBe(429);
      // One token per 1,000 s, none left: the next comes in (almost) 1,000 s.
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(900);
      expect(Number(refused.retryAfter)).toBeLessThanOrEqual(1000);
    }
    // Other keys have buckets of their own.
    expect((await get(gateways[1], keys.back)).status).toBe(200);

    const client = new Redis(redis.url);
    try {
      const ttl = await client.pttl(bucketKey(keys.together));
      // Expires once it would be full again: BURST tokens at 0.001/s, plus a second.
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(BURST * 1_000_000 + 1_000);
    } finally {
      client.disconnect();
    }
    for (const g of gateways) expect(await fallbacks(g)).toBe(0);
  });

  it('spends atomically: concurrent requests through both gateways get exactly the burst', async () => {
    const answers = await Promise.all(
      Array.from({ length: BURST * 4 }, (_, i) => get(gateways[i % 2], keys.concurrent)),
    );
    const counts = { ok: 0, limited: 0 };
    for (const a of answers) {
      if (a.status === 200) counts.ok++;
      else if (a.status === 429) counts.limited++;
    }
    expect(counts).toEqual({ ok: BURST, limited: BURST * 3 });
  });

  it('with Redis not answering (paused writes), a request waits at most the timeout and the local bucket decides', async () => {
    const [g] = gateways;
    const recoveredBefore = count(g.output(), /Redis answers again/g);
    const fallbacksBefore = await fallbacks(g);
    const client = new Redis(redis.url);
    try {
      // Scripts may write, so Redis holds them for 3 s; the gateway gives up after 250 ms (its timeout).
      await client.call('CLIENT', 'PAUSE', '3000', 'WRITE');
      expect((await get(g, keys.hung)).status).toBe(200);
      expect(await fallbacks(g)).toBeGreaterThan(fallbacksBefore);
      expect(g.output()).toMatch(/rate limits: Redis does not answer, so this gateway counts requests alone/);
    } finally {
      client.disconnect();
    }
    // Once the pause ends, the next request after the retry interval goes to Redis again.
    await untilRecovered(g, recoveredBefore);
  });

  it('with Redis down, each gateway decides with its own bucket: a burst each, then 429; a warning and a metric', async () => {
    for (const g of gateways) recoveries.set(g, count(g.output(), /Redis answers again/g));
    await redis.down();
    try {
      for (const g of gateways) {
        const statuses: number[] = [];
        for (let i = 0; i < BURST + 2; i++) statuses.push((await get(g, keys.down)).status);
        // Not blocked (the first BURST pass), not unlimited (the rest are refused).
        expect(statuses).toEqual([...Array(BURST).fill(200), 429, 429]);
        const refused = await get(g, keys.down);
        expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(900);
        expect(await fallbacks(g)).toBeGreaterThanOrEqual(BURST + 3);
        expect(g.output()).toMatch(/rate limits: Redis does not answer, so this gateway counts requests alone/);
        const health = await fetch(`${g.url}/health`);
        expect(health.status).toBe(200);
      }
    } finally {
      await redis.up();
    }
  });

  it('shares again once Redis is back', async () => {
    for (const g of gateways) {
      // ioredis reconnects with a backoff of up to 2 s; each gateway notices on a request.
      await untilRecovered(g, recoveries.get(g) ?? 0);
    }
    const statuses: number[] = [];
    for (let i = 0; i < BURST + 2; i++) statuses.push((await get(gateways[i % 2], keys.back)).status);
    // `back` spent one token before Redis went down, but the new Redis is empty: a full bucket, shared.
    expect(statuses).toEqual([...Array(BURST).fill(200), 429, 429]);
  });
});
