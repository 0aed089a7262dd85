/**
 * Metrics, health and readiness as an operator sees them, with a real worker process (its own `/health` and
 * `/metrics` listener, the Temporal SDK's metrics) and a gateway sharing Redis: scrape both, run a turn over HTTP
 * and SSE, scrape again and see the counters move. `/ready` answers 200 while Temporal and Redis answer, and 503
 * naming Redis once it is stopped.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import { RedisBus } from '../../bus/redis';
import { connect } from '../../client/connect';
import { createGateway } from '../../gateway/app';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { startHarness, testAgent, type Harness } from '../support/harness';
import { startWorkerProcess, workerEnvFor, type WorkerProcess } from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';
import { openSse } from '../support/sse';

let redis: RedisServer;
let h: Harness;
let worker: WorkerProcess;
let workerUrl: string;
let gateway: ServedGateway;

beforeAll(async () => {
  redis = await startRedis();
  h = await startHarness({ noWorker: true, bus: new RedisBus(redis.url) });
  worker = await startWorkerProcess({ ...workerEnvFor(h, redis.url), THREADLINE_WORKER_HTTP_PORT: '0' });
  workerUrl = worker.output().match(/^HTTP (http:\/\/\S+)$/m)![1];
  gateway = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0 });
});

afterAll(async () => {
  await gateway?.close();
  await worker?.kill('SIGKILL');
  await h?.close();
  await h?.bus.close();
  await redis?.stop();
});

/** One scrape: the text, and the value of a sample by name and labels (0 when the series does not exist yet). */
async function scrape(baseUrl: string): Promise<{ text: string; value(name: string, labels?: object): number }> {
  const response = await fetch(`${baseUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  const text = await response.text();
  return {
    text,
    value(name, labels = {}) {
      const wanted = Object.entries(labels).map(([k, v]) => `${k}="${String(v)}"`);
      let sum = 0;
      for (const line of text.split('\n')) {
        const match = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/);
        if (!match || match[1] !== name) continue;
        const have = match[2] ? match[2].split(/,(?=[a-zA-Z_]+=")/) : [];
        if (wanted.every((label) => have.includes(label))) sum += Number(match[3]);
      }
      return sum;
    },
  };
}

describe('metrics', () => {
  it('counts a turn: steps and first-token latency on the worker, the request and the SSE stream on the gateway', async () => {
    const { resourceId, threadId } = h.thread();
    const sendRoute = { method: 'POST', route: '/api/agents/:agentId/send-message', status: '200' };
    const gatewayBefore = await scrape(gateway.url);
    const workerBefore = await scrape(workerUrl);

    const sse = await openSse(`${gateway.url}/api/threads/${resourceId}/${threadId}/events`);
    const subscribed = await scrape(gateway.url);
    const response = await fetch(`${gateway.url}/api/agents/tester/send-message`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Hello', resourceId, threadId }),
    });
    expect(response.status).toBe(200);
    await sse.untilEvent((event) => event.type === 'finish');
    sse.close();

    expect(subscribed.value('threadline_sse_subscribers')).toBe(gatewayBefore.value('threadline_sse_subscribers') + 1);
    await vi.waitFor(
      async () => {
        const after = await scrape(gateway.url);
        expect(after.value('threadline_sse_subscribers')).toBe(gatewayBefore.value('threadline_sse_subscribers'));
      },
      { timeout: 10_000, interval: 50 },
    );
    const gatewayAfter = await scrape(gateway.url);
    expect(gatewayAfter.value('threadline_http_requests_total', sendRoute)).toBe(
      gatewayBefore.value('threadline_http_requests_total', sendRoute) + 1,
    );
    expect(gatewayAfter.value('threadline_inputs_total', { kind: 'message', action: 'wake' })).toBe(
      gatewayBefore.value('threadline_inputs_total', { kind: 'message', action: 'wake' }) + 1,
    );
    // Route templates, never the thread's ids.
    expect(gatewayAfter.text).not.toContain(threadId);

    const workerAfter = await scrape(workerUrl);
    const completed = { agent: 'tester', outcome: 'completed' };
    expect(workerAfter.value('threadline_steps_total', completed)).toBe(
      workerBefore.value('threadline_steps_total', completed) + 1,
    );
    expect(workerAfter.value('threadline_step_first_token_seconds_count', { agent: 'tester' })).toBe(
      workerBefore.value('threadline_step_first_token_seconds_count', { agent: 'tester' }) + 1,
    );
    expect(workerAfter.value('threadline_bus_publish_lag_seconds_count', { source: 'step' })).toBeGreaterThan(
      workerBefore.value('threadline_bus_publish_lag_seconds_count', { source: 'step' }),
    );
    // The Temporal SDK's own metrics, from its exporter, in the same scrape.
    expect(workerAfter.text).toMatch(/^temporal_\w+/m);
    expect(workerAfter.text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });
});

describe('health and readiness', () => {
  it("the worker's /health answers 200 with the Temporal worker RUNNING", async () => {
    const response = await fetch(`${workerUrl}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true, worker: 'RUNNING' });
  });

  it("the gateway's /ready answers 200 with Temporal and Redis checked", async () => {
    const response = await fetch(`${gateway.url}/ready`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { ready: boolean; checks: { name: string; ok: boolean }[] };
    expect(body.ready).toBe(true);
    expect(body.checks.map(({ name, ok }) => ({ name, ok }))).toEqual([
      { name: 'temporal', ok: true },
      { name: 'redis', ok: true },
    ]);
  });

  it('answers 503 naming Redis once its Redis is stopped, while /health stays 200', async () => {
    const ownRedis = await startRedis();
    const bus = new RedisBus(ownRedis.url);
    const client = await connect({ bus, client: h.temporal, taskQueue: h.taskQueue });
    const app = createGateway({ client, agents: summarizeAgents([testAgent]) });
    try {
      await vi.waitFor(async () => expect((await app.request('/ready')).status).toBe(200), { timeout: 10_000 });

      await ownRedis.stop();

      await vi.waitFor(
        async () => {
          const response = await app.request('/ready');
          expect(response.status).toBe(503);
          const body = (await response.json()) as {
            ready: boolean;
            error: { type: string; message: string };
            checks: { name: string; ok: boolean }[];
          };
          expect(body.ready).toBe(false);
          expect(body.error.type).toBe('NotReady');
          expect(body.error.message).toMatch(/^Not ready: redis: /);
          expect(body.checks.map(({ name, ok }) => ({ name, ok }))).toEqual([
            { name: 'temporal', ok: true },
            { name: 'redis', ok: false },
          ]);
        },
        { timeout: 10_000, interval: 50 },
      );
      expect((await app.request('/health')).status).toBe(200);
    } finally {
      await bus.close();
    }
  });
});
