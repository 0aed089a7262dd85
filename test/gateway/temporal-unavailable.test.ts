/**
 * A transient Temporal failure is a 503 with Retry-After, not a 500 (docs/fuzzing.md: `GET /api/threads` once
 * answered 500 when the dev server's visibility store answered `2 UNKNOWN: something went wrong, please retry`).
 * The gateway's client reaches the real dev server through a gRPC proxy on loopback that answers chosen methods with
 * the error instead (`test/support/temporal-fault-proxy.ts`). The gateway's Temporal client makes 2 attempts instead of
 * its default 10, so each refused call takes well under a second instead of ~15 s of the client's own retries.
 */
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import { connect, type ThreadlineClient } from '../../client/connect';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { sendAndWaitForAnswer, startHarness, testAgent, type Harness } from '../support/harness';
import { startTemporalFaultProxy, type TemporalFaultProxy } from '../support/temporal-fault-proxy';

const PLEASE_RETRY = { code: 2, message: 'something went wrong, please retry' };
const UNAVAILABLE = { code: 14, message: 'connection refused' };

let h: Harness;
let proxy: TemporalFaultProxy;
let connection: Connection;
let client: ThreadlineClient;
let g: ServedGateway;

beforeAll(async () => {
  h = await startHarness();
  proxy = await startTemporalFaultProxy(h.address);
  connection = await Connection.connect({
    address: proxy.address,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 2 }))],
  });
  client = await connect({ bus: h.bus, client: new Client({ connection }), taskQueue: h.taskQueue });
  g = await serveGateway({ client, agents: summarizeAgents([testAgent]), port: 0 });
}, 180_000);

afterAll(async () => {
  await g?.close();
  await connection?.close();
  await proxy?.close();
  await h?.close();
});

/** An answer's body: an error, or a send's result. */
interface Answer {
  error: { type: string; message: string };
  duplicate?: boolean;
}

async function call(path: string, init?: RequestInit) {
  const res = await fetch(`${g.url}${path}`, { ...init, signal: AbortSignal.timeout(120_000) });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Answer };
}

const send = (thread: { resourceId: string; threadId: string }, id: string) =>
  call(`/api/agents/${testAgent.id}/send-message`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': id },
    body: JSON.stringify({ ...thread, message: 'Hello.' }),
  });

describe('a transient Temporal failure', () => {
  it("is a 503 with Retry-After on the thread list when visibility answers UNKNOWN 'please retry'", async () => {
    const thread = h.thread();
    await sendAndWaitForAnswer(h, thread, 'Hello.');
    proxy.fail(/\/ListWorkflowExecutions$/, PLEASE_RETRY);
    const refused = await call('/api/threads');
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.retryAfter).toBe('1');
    expect(refused.body.error.type).toBe('UnavailableError');
    expect(refused.body.error.message).toMatch(
      /Temporal did not complete the request \(gRPC UNKNOWN\).*retry after 1 s/,
    );
    expect(proxy.failed.size).toBe(1);

    proxy.heal();
    const listed = await call(`/api/threads?resourceId=${thread.resourceId}`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
  }, 180_000);

  it('is a 503 on reads and sends while Temporal does not answer; the send resent afterwards is applied once', async () => {
    const thread = h.thread();
    proxy.fail(/./, UNAVAILABLE);
    const read = await call(`/api/threads/${thread.resourceId}/${thread.threadId}`);
    expect(read.status, JSON.stringify(read.body)).toBe(503);
    expect(read.retryAfter).toBe('1');
    const refused = await send(thread, 'send-1');
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.error).toMatchObject({ type: 'UnavailableError' });
    expect(refused.body.error.message).toMatch(/gRPC UNAVAILABLE/);
    expect(await h.client.getThread(thread)).toBeNull(); // nothing reached Temporal

    proxy.heal();
    const accepted = await send(thread, 'send-1');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const again = await send(thread, 'send-1');
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.duplicate).toBe(true);
  }, 300_000);

  it('a refusal that is not transient keeps its status: INVALID_ARGUMENT is a 400, INTERNAL a 500', async () => {
    proxy.fail(/\/ListWorkflowExecutions$/, { code: 3, message: 'invalid query' });
    const invalid = await call('/api/threads');
    expect(invalid.status, JSON.stringify(invalid.body)).toBe(400);
    proxy.heal();
    proxy.fail(/\/ListWorkflowExecutions$/, { code: 13, message: 'internal' });
    const internal = await call('/api/threads');
    expect(internal.status, JSON.stringify(internal.body)).toBe(500);
    expect(internal.retryAfter).toBeNull();
    proxy.heal();
  }, 180_000);
});
