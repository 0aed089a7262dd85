/**
 * behaviour §8 limits at the gateway, over real HTTP on the real dev server: the per-caller token bucket (429 with
 * Retry-After; per API key, per client address without keys, failed key attempts included) and open subscriptions
 * per thread (429). Rejected requests change nothing. The buckets refill so slowly here that no test depends on time.
 */
import { summarizeAgents } from '../../agents/summary';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TokenBuckets } from '../../gateway/limits';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import type { ThreadTarget } from '../../protocol/schemas';
import { defaultGatewaySettings, gatewaySettingsFromEnv } from '../../config/settings';
import { startHarness, testAgent, type Harness } from '../support/harness';
import { openSse, type SseStream } from '../support/sse';

interface ErrorBody {
  error: { type: string; message: string };
}

const run = randomUUID();
const tenant = `tenant-${run}`;
const KEY_A = `key-a-${run}`;
const KEY_B = `key-b-${run}`;
const apiKeys = { [KEY_A]: [tenant], [KEY_B]: [tenant] };
/** Two requests at once, then one per 1000 s: the third request in a test is surely refused. */
const tinyRate = { perSecond: 0.001, burst: 2 };

let h: Harness;
const gateways: ServedGateway[] = [];
const streams: SseStream[] = [];
beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const g of gateways.splice(0)) await g.close();
});
afterAll(async () => {
  await h?.close();
});

async function gateway(options: Partial<Parameters<typeof serveGateway>[0]> = {}): Promise<ServedGateway> {
  const served = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0, ...options });
  gateways.push(served);
  return served;
}

async function call<T = unknown>(
  g: ServedGateway,
  method: string,
  path: string,
  options: { body?: unknown; key?: string } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const headers: Record<string, string> = options.key ? { authorization: `Bearer ${options.key}` } : {};
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${g.url}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

const threadPath = (t: ThreadTarget) =>
  `/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`;
const threadOf = (): ThreadTarget => ({ resourceId: tenant, threadId: `thr-${randomUUID()}` });

function expectRateLimited(res: { status: number; body: unknown; headers: Headers }): void {
  expect(res.status, JSON.stringify(res.body)).toBe(429);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect((res.body as ErrorBody).error).toEqual({
    type: 'RateLimitedError',
    message: expect.stringMatching(
      /^Rate limit exceeded: 0\.001 requests per second with bursts of 2 .*Retry after \d+ s.*THREADLINE_RATE_LIMIT_PER_SECOND/,
    ),
  });
}

describe('rate limit (token bucket per caller)', () => {
  it('answers 429 with Retry-After once a key has spent its burst; other keys are unaffected', async () => {
    const g = await gateway({ apiKeys, rateLimit: tinyRate });
    for (let i = 0; i < tinyRate.burst; i++) {
      expect((await call(g, 'GET', '/api/agents', { key: KEY_A })).status).toBe(200);
    }
    expectRateLimited(await call(g, 'GET', '/api/agents', { key: KEY_A }));
    expect((await call(g, 'GET', '/api/agents', { key: KEY_B })).status).toBe(200);
    expect((await call(g, 'GET', '/health')).status).toBe(200);
  });

  it('changes nothing when it refuses a send', async () => {
    const g = await gateway({ apiKeys, rateLimit: tinyRate });
    await call(g, 'GET', '/api/agents', { key: KEY_A });
    await call(g, 'GET', '/api/agents', { key: KEY_A });
    const t = threadOf();
    const requestsBefore = h.model.requests.length;
    expectRateLimited(
      await call(g, 'POST', '/api/agents/tester/send-message', { body: { message: 'hi', ...t }, key: KEY_A }),
    );
    expect(await h.client.getThread(t)).toBeNull();
    expect(h.model.requests.length).toBe(requestsBefore);
  });

  it('limits by client address in development mode', async () => {
    const g = await gateway({ rateLimit: tinyRate });
    expect((await call(g, 'GET', '/api/agents')).status).toBe(200);
    expect((await call(g, 'GET', '/api/threads/r/t/messages')).status).toBe(404);
    expectRateLimited(await call(g, 'GET', '/api/agents'));
  });

  it('throttles failed key attempts by client address, before a valid key is ever found', async () => {
    const g = await gateway({ apiKeys, rateLimit: tinyRate });
    for (let i = 0; i < tinyRate.burst; i++) {
      expect((await call(g, 'GET', '/api/agents', { key: `guess-${i}` })).status).toBe(401);
    }
    expectRateLimited(await call(g, 'GET', '/api/agents', { key: 'guess-again' }));
    expect((await call(g, 'GET', '/api/agents', { key: KEY_A })).status).toBe(200);
  });

  it('is off at 0 requests per second', async () => {
    const g = await gateway({ rateLimit: { perSecond: 0, burst: 0 } });
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(g, 'GET', '/api/agents')));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
  });

  it('refills at the configured rate (bucket arithmetic, on a fake clock)', () => {
    let now = 0;
    const buckets = new TokenBuckets({ perSecond: 2, burst: 3 }, () => now);
    for (let i = 0; i < 3; i++) buckets.take('k');
    expect(() => buckets.take('k')).toThrow(expect.objectContaining({ status: 429, retryAfterSeconds: 1 }));
    now += 500;
    buckets.take('k');
    expect(() => buckets.take('k')).toThrow(/Rate limit exceeded/);
    buckets.take('another caller');
    now += 60_000;
    for (let i = 0; i < 3; i++) buckets.take('k');
    expect(() => buckets.take('k')).toThrow(/Rate limit exceeded/);
  });
});

describe('subscribers per thread', () => {
  const events = async (g: ServedGateway, t: ThreadTarget): Promise<SseStream> => {
    const s = await openSse(`${g.url}${threadPath(t)}/events`);
    streams.push(s);
    return s;
  };
  const subscribe = async (g: ServedGateway, t: ThreadTarget): Promise<SseStream> => {
    const s = await openSse(`${g.url}/api/agents/tester/threads/subscribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(t),
    });
    streams.push(s);
    return s;
  };

  it('answers 429 past the limit on both stream routes, per thread, and frees a place when one leaves', async () => {
    const g = await gateway({ maxSubscribersPerThread: 2 });
    const t = threadOf();
    const first = await events(g, t);
    const second = await subscribe(g, t);
    expect([first.response.status, second.response.status]).toEqual([200, 200]);

    for (const refused of [await events(g, t), await subscribe(g, t)]) {
      expect(refused.response.status).toBe(429);
      expect(refused.response.headers.get('retry-after')).toBeNull();
      const body = (await refused.response.json()) as ErrorBody;
      expect(body.error).toEqual({
        type: 'RateLimitedError',
        message: `Thread ${t.resourceId}/${t.threadId} already has 2 subscribers on this gateway, the limit. Close one, or raise THREADLINE_MAX_SUBSCRIBERS_PER_THREAD.`,
      });
    }
    expect((await events(g, threadOf())).response.status).toBe(200);

    // The place frees once the gateway sees the client leave.
    first.close();
    const deadline = Date.now() + 15_000;
    let again = await events(g, t);
    while (again.response.status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = await events(g, t);
    }
    expect(again.response.status).toBe(200);
  });

  it('still delivers to the subscribers it admitted', async () => {
    const g = await gateway({ maxSubscribersPerThread: 1 });
    const t = threadOf();
    const admitted = await events(g, t);
    expect((await events(g, t)).response.status).toBe(429);
    const sent = await call<{ runId: string }>(g, 'POST', '/api/agents/tester/send-message', {
      body: { message: 'hello', ...t },
    });
    const seen = await admitted.untilEvent((e) => e.type === 'finish' && e.runId === sent.body.runId);
    expect(seen.map((e) => e.type)).toContain('text-delta');
  });
});

describe('limit settings', () => {
  it('has generous defaults, each configurable', () => {
    expect(gatewaySettingsFromEnv({})).toEqual({ ...defaultGatewaySettings });
    expect(defaultGatewaySettings).toEqual({
      rateLimit: { perSecond: 200, burst: 400 },
      sharedRateLimit: { enabled: true, timeoutMs: 250 },
      maxSubscribersPerThread: 1000,
      maxSubscriberBufferBytes: 1024 * 1024,
      subscriberStallMs: 60_000,
      corsOrigins: [],
    });
    expect(
      gatewaySettingsFromEnv({
        THREADLINE_RATE_LIMIT_PER_SECOND: '5',
        THREADLINE_MAX_SUBSCRIBERS_PER_THREAD: '3',
        THREADLINE_MAX_SUBSCRIBER_BUFFER_BYTES: '65536',
        THREADLINE_SUBSCRIBER_STALL_MS: '5000',
        THREADLINE_CORS_ORIGINS: 'https://a.example, http://localhost:5173',
        THREADLINE_RATE_LIMIT_SHARED: 'false',
        THREADLINE_RATE_LIMIT_REDIS_TIMEOUT_MS: '100',
      }),
    ).toEqual({
      rateLimit: { perSecond: 5, burst: 10 },
      sharedRateLimit: { enabled: false, timeoutMs: 100 },
      maxSubscribersPerThread: 3,
      maxSubscriberBufferBytes: 65536,
      subscriberStallMs: 5000,
      corsOrigins: ['https://a.example', 'http://localhost:5173'],
    });
    expect(gatewaySettingsFromEnv({ THREADLINE_RATE_LIMIT_PER_SECOND: '0' }).rateLimit.perSecond).toBe(0);
    expect(gatewaySettingsFromEnv({ THREADLINE_RATE_LIMIT_BURST: '7' }).rateLimit).toEqual({
      perSecond: 200,
      burst: 7,
    });
  });

  it('refuses values it cannot use, naming the variable', () => {
    const bad: [NodeJS.ProcessEnv, RegExp][] = [
      [{ THREADLINE_RATE_LIMIT_PER_SECOND: '-1' }, /THREADLINE_RATE_LIMIT_PER_SECOND must be a number of at least 0/],
      [{ THREADLINE_RATE_LIMIT_PER_SECOND: 'lots' }, /THREADLINE_RATE_LIMIT_PER_SECOND/],
      [
        { THREADLINE_RATE_LIMIT_BURST: '0' },
        /THREADLINE_RATE_LIMIT_BURST must be at least 1 while the rate limit is on/,
      ],
      [{ THREADLINE_MAX_SUBSCRIBERS_PER_THREAD: '0' }, /THREADLINE_MAX_SUBSCRIBERS_PER_THREAD must be at least 1/],
      [{ THREADLINE_RATE_LIMIT_SHARED: 'yes' }, /THREADLINE_RATE_LIMIT_SHARED must be true or false/],
      [{ THREADLINE_RATE_LIMIT_REDIS_TIMEOUT_MS: '0' }, /THREADLINE_RATE_LIMIT_REDIS_TIMEOUT_MS must be at least 1/],
      [{ THREADLINE_CORS_ORIGINS: 'https://a.example/app' }, /"https:\/\/a.example\/app" is not an origin/],
    ];
    for (const [env, message] of bad) expect(() => gatewaySettingsFromEnv(env), JSON.stringify(env)).toThrow(message);
  });
});
