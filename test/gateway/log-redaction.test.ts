/**
 * No API key and no message content in the logs at info level (observability/logger.ts; issue 14 part 4), as a
 * property over random keys and contents through a real gateway process and a real worker process (the Temporal
 * SDK's log lines bridged in, as `worker/main.ts` runs it), both logging at `info`. Contents go in messages, queued
 * messages, signals, state signals and notifications, accepted or refused (a bad part type, an unknown agent), and
 * keys are sent right and wrong; the model's answers quote the contents back. Every line both processes printed is
 * kept and searched.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThreadTarget } from '../../protocol/schemas';
import { startHarness, type Harness } from '../support/harness';
import {
  gatewayEnvFor,
  startGatewayProcess,
  startWorkerProcess,
  workerEnvFor,
  type GatewayProcess,
  type WorkerProcess,
} from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';

const NUM_RUNS = 40;
const KEEP_OUTPUT = 20_000_000;

/** Keys as THREADLINE_API_KEYS takes them (visible ASCII, no spaces), long enough to be unmistakable. */
const apiKey = fc.stringMatching(/^[\x21-\x7e]{24,64}$/);
const keys = fc.sample(apiKey, 4).map((key, i) => `${key}${i}`);
const resourceOf = (i: number) => `logs-tenant-${i}`;

let redis: RedisServer;
let h: Harness;
let worker: WorkerProcess;
let gateway: GatewayProcess;
const sentKeys = new Set<string>(keys);
const sentContents: string[] = [];
const threads = new Map<string, ThreadTarget>();
const statuses: string[] = [];

beforeAll(async () => {
  redis = await startRedis();
  h = await startHarness({ noWorker: true });
  worker = await startWorkerProcess(
    { ...workerEnvFor(h, redis.url), THREADLINE_WORKER_HTTP_PORT: '0', LOG_LEVEL: 'info' },
    60_000,
    KEEP_OUTPUT,
  );
  gateway = await startGatewayProcess(
    {
      ...gatewayEnvFor(h, redis.url),
      THREADLINE_API_KEYS: JSON.stringify(Object.fromEntries(keys.map((key, i) => [key, [resourceOf(i)]]))),
      THREADLINE_RATE_LIMIT_PER_SECOND: '0',
      LOG_LEVEL: 'info',
    },
    60_000,
    KEEP_OUTPUT,
  );
}, 180_000);

afterAll(async () => {
  await gateway?.kill('SIGKILL');
  await worker?.kill('SIGKILL');
  await h?.close();
  await redis?.stop();
});

type Route = 'send-message' | 'queue-message' | 'signal' | 'state' | 'notification' | 'bad-part' | 'unknown-agent';

function request(route: Route, content: string, t: ThreadTarget): { path: string; body: unknown } {
  switch (route) {
    case 'send-message':
    case 'queue-message':
      return { path: `/api/agents/tester/${route}`, body: { message: content, ...t } };
    case 'signal':
      return { path: '/api/agents/tester/signals', body: { signal: { type: 'user', contents: content }, ...t } };
    case 'state':
      return {
        path: '/api/agents/tester/state-signals',
        body: { signal: { id: 'lane', cacheKey: randomUUID(), contents: content }, ...t },
      };
    case 'notification':
      return {
        path: '/api/agents/tester/notifications',
        body: { notification: { source: 'ci', kind: 'build', summary: content, payload: { content } }, ...t },
      };
    case 'bad-part':
      return {
        path: '/api/agents/tester/send-message',
        body: { message: { role: 'user', content: [{ type: 'nonsense', text: content }] }, ...t },
      };
    case 'unknown-agent':
      return { path: '/api/agents/no-such-agent/send-message', body: { message: content, ...t } };
  }
}

describe('logs at info level', () => {
  it('never carry an API key or message content, through a real gateway and worker', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          key: fc.nat({ max: keys.length - 1 }),
          // One request in five with a key the gateway does not know.
          wrongKey: fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, { arbitrary: apiKey, weight: 1 }),
          // Any text: quotes, newlines, JSON and log-looking fragments, emoji, other scripts.
          text: fc.oneof(
            fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
            fc.constantFrom('{"level":"info","msg":"request"}', 'line one\nline two', 'Bearer sk-abc', '"quoted"'),
          ),
          route: fc.constantFrom<Route>(
            'send-message',
            'queue-message',
            'signal',
            'state',
            'notification',
            'bad-part',
            'unknown-agent',
          ),
          thread: fc.nat({ max: 2 }),
        }),
        async ({ key, wrongKey, text, route, thread }) => {
          // A unique word inside every content, so that any copy of it in a log line is found.
          const content = `${text} zq${randomUUID().replace(/-/g, '')}`;
          sentContents.push(content);
          const t = { resourceId: resourceOf(key), threadId: `thr-${thread}` };
          threads.set(`${t.resourceId}/${t.threadId}`, t);
          const used = wrongKey ?? keys[key];
          sentKeys.add(used);
          const { path, body } = request(route, content, t);
          const res = await fetch(`${gateway.url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${used}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          const answer = await res.text();
          statuses.push(`${wrongKey ? 'wrong key' : route} ${res.status}`);
          expect(res.status, `${route} with ${wrongKey ? 'a wrong' : 'its'} key: ${answer}`).toBeLessThan(500);
        },
      ),
      { numRuns: NUM_RUNS },
    );

    // Let every run the property started finish, so the worker has logged all it will about them.
    for (const t of threads.values()) {
      await expect
        .poll(async () => (await h.client.getThread(t))?.status ?? 'idle', { timeout: 120_000, interval: 500 })
        .toBe('idle');
    }
    const logs = `${gateway.output()}\n${worker.output()}`;
    // The contents went through the worker to the model (the control: they were there to leak)...
    const prompts = h.model.requests.map((r) => r.rawBody).join('\n');
    const tally = new Map<string, number>();
    for (const s of statuses) tally.set(s, (tally.get(s) ?? 0) + 1);
    console.log(
      `log redaction: ${statuses.length} requests, ${h.model.requests.length} model requests, ` +
        `${logs.split('\n').length} log lines searched; answers ${[...tally].map(([s, n]) => `${s}×${n}`).join(', ')}`,
    );
    expect(sentContents.filter((c) => prompts.includes(c.slice(c.lastIndexOf(' zq') + 1))).length).toBeGreaterThan(0);
    // ...and the logs are there: one request line per request at info, and the worker's own at info.
    expect(logs.match(/"msg":"request"/g)?.length ?? 0).toBeGreaterThanOrEqual(NUM_RUNS);
    expect(worker.output()).toMatch(/"level":"info"/);
    for (const key of sentKeys) {
      for (const form of [key, JSON.stringify(key).slice(1, -1)]) {
        expect(logs.includes(form), `the key ${key} is in the logs`).toBe(false);
      }
    }
    for (const content of sentContents) {
      const unique = content.slice(content.lastIndexOf(' zq') + 1);
      for (const form of [unique, content, JSON.stringify(content).slice(1, -1)]) {
        expect(logs.includes(form), `the content ${JSON.stringify(content)} is in the logs`).toBe(false);
      }
    }
  }, 600_000);
});
