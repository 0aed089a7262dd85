/**
 * Ids and file parts the gateway must refuse with a 400 naming the field, over real HTTP on the real dev server
 * (behaviour §8): a thread id that is not well-formed Unicode, one whose percent-encoded workflow id is over Temporal's
 * limit although it is under the per-field 256 characters, and file parts the worker could never load. The limit
 * itself is checked against the server: exactly 1,000 encoded bytes start a thread, 1,001 Temporal refuses.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { MAX_WORKFLOW_ID_BYTES, encodeIdPart, threadKey } from '../../protocol/ids';
import { THREAD_WORKFLOW_TYPE } from '../../protocol/thread-config';
import { startHarness, testAgent, type Harness } from '../support/harness';

interface ErrorBody {
  error: { type: string; message: string };
}

let h: Harness;
let g: ServedGateway;
beforeAll(async () => {
  h = await startHarness();
  g = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0 });
});
afterAll(async () => {
  await g?.close();
  await h?.close();
});

async function post(path: string, body: unknown): Promise<{ status: number; body: ErrorBody }> {
  const res = await fetch(`${g.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // JSON.stringify writes a lone surrogate as the escape `\ud800`, which JSON.parse turns back into one.
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as ErrorBody };
}

/** Every route that names its thread in the body, with an otherwise valid body. */
const bodyRoutes: [string, Record<string, unknown>][] = [
  ['send-message', { message: 'hi' }],
  ['queue-message', { message: 'hi' }],
  ['signals', { signal: { type: 'user', contents: 'hi' } }],
  ['state-signals', { signal: { id: 'lane', cacheKey: 'k1', contents: 'state' } }],
  ['notifications', { notification: { source: 'ci', kind: 'build', summary: 'green' } }],
  ['send-tool-approval', { toolCallId: 'call-1', approved: true }],
  ['threads/abort', {}],
  ['threads/cancel-queued', { signalIds: ['s1'] }],
  ['threads/subscribe', {}],
];

const emoji100 = '😀'.repeat(100);

describe('thread ids', () => {
  it.each(bodyRoutes)(
    'POST %s: a lone surrogate in threadId or resourceId is a 400 naming the field',
    async (route, rest) => {
      for (const field of ['threadId', 'resourceId'] as const) {
        const target = { resourceId: `res-${randomUUID()}`, threadId: `thr-${randomUUID()}`, [field]: 'a\ud800b' };
        const res = await post(`/api/agents/tester/${route}`, { ...rest, ...target });
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error.type).toBe('ValidationError');
        expect(res.body.error.message).toContain(`${field}: must be well-formed Unicode`);
      }
    },
  );

  it.each(bodyRoutes)(
    'POST %s: 100 emoji (200 characters) make a workflow id over the limit: 400 naming threadId and the sizes',
    async (route, rest) => {
      const res = await post(`/api/agents/tester/${route}`, { ...rest, resourceId: 'tenant', threadId: emoji100 });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.type).toBe('ValidationError');
      const bytes = threadKey('tenant', emoji100).length;
      expect(res.body.error.message).toContain(
        `threadId: makes a workflow id of ${bytes} bytes once percent-encoded (resourceId 6, threadId 1200`,
      );
      expect(res.body.error.message).toContain(`Temporal accepts at most ${MAX_WORKFLOW_ID_BYTES}`);
    },
  );

  it('refuses an over-long encoded id on the path routes too', async () => {
    const path = `/api/threads/tenant/${encodeURIComponent(emoji100)}`;
    for (const suffix of ['', '/messages', '/events', '/notifications']) {
      const res = await fetch(`${g.url}${path}${suffix}`);
      const body = (await res.json()) as ErrorBody;
      expect(res.status, `${suffix}: ${JSON.stringify(body)}`).toBe(400);
      expect(body.error.message).toContain('threadId: makes a workflow id of');
    }
  });

  it("matches Temporal's limit: 1,000 encoded bytes start a thread, 1,001 are refused by us and by Temporal", async () => {
    // '~' and ':' are encoded as 3 bytes each: a 256-character id (the per-field limit) can take 768.
    const threadId = `${randomUUID().slice(0, 8)}${'~'.repeat(248)}`;
    const budget = MAX_WORKFLOW_ID_BYTES - 'thread::'.length - encodeIdPart(threadId).length;
    const fits = (extra: number) => `${':'.repeat(Math.floor(budget / 3))}${'x'.repeat((budget % 3) + extra)}`;
    const resourceId = fits(0);
    expect(threadKey(resourceId, threadId).length).toBe(MAX_WORKFLOW_ID_BYTES);
    const sent = await post('/api/agents/tester/send-message', { message: 'hi', resourceId, threadId });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await h.client.getThread({ resourceId, threadId })).not.toBeNull();

    const over = { resourceId: fits(1), threadId };
    expect(threadKey(over.resourceId, over.threadId).length).toBe(MAX_WORKFLOW_ID_BYTES + 1);
    const refused = await post('/api/agents/tester/send-message', { message: 'hi', ...over });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('threadId: makes a workflow id of 1001 bytes');
    const temporalRefusal = await h.temporal.workflow
      .start(THREAD_WORKFLOW_TYPE, {
        workflowId: threadKey(over.resourceId, over.threadId),
        taskQueue: h.taskQueue,
        args: [{ resourceId: over.resourceId, threadId: over.threadId }],
      })
      .then(
        () => 'started',
        (err: Error) => `${err.message}: ${(err.cause as Error | undefined)?.message}`,
      );
    expect(temporalRefusal).toMatch(/WorkflowId length exceeds limit/);
  });
});

describe('file parts', () => {
  const target = () => ({ resourceId: 'tenant', threadId: `thr-${randomUUID()}` });

  it.each<[string, string, unknown]>([
    ['message.0.url', 'a file: URL', [{ type: 'file', url: 'file:///etc/passwd', mediaType: 'text/plain' }]],
    ['message.0.url', 'an ftp: URL', [{ type: 'file', url: 'ftp://example.com/x', mediaType: 'text/plain' }]],
    ['message.0.url', 'a path', [{ type: 'file', url: '/etc/passwd', mediaType: 'text/plain' }]],
    [
      'message.contents.1.data',
      'a file: URL as data',
      {
        contents: [
          { type: 'text', text: 'see' },
          { type: 'file', data: 'file:///etc/passwd', mediaType: 'text/plain' },
        ],
      },
    ],
  ])('refuses %s holding %s with a 400 naming the field; no thread is created', async (field, _what, message) => {
    const t = target();
    const res = await post('/api/agents/tester/send-message', { message, ...t });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.message).toContain(`Invalid ${field}:`);
    expect(await h.client.getThread(t)).toBeNull();
  });

  it('refuses unsupported schemes in signals too', async () => {
    const res = await post('/api/agents/tester/signals', {
      signal: { type: 'user', contents: [{ type: 'file', url: 'file:///etc/passwd', mediaType: 'text/plain' }] },
      ...target(),
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('Invalid signal.contents.0.url: the file: scheme is not supported');
  });

  it('accepts https, http and data URLs and base64 data', async () => {
    const message = [
      { type: 'text', text: 'look' },
      { type: 'file', url: 'https://example.com/cat.png', mediaType: 'image/png' },
      { type: 'file', url: 'http://example.com/dog.png', mediaType: 'image/png' },
      { type: 'file', url: 'data:text/plain;base64,aGk=', mediaType: 'text/plain' },
      { type: 'file', data: 'aGk=', mediaType: 'text/plain' },
    ];
    // Queued behind nothing on a fresh thread: accepted (the ingress checks passed); the run itself is not the point.
    const res = await post('/api/agents/tester/send-message', {
      message,
      ...target(),
      ifIdle: { behavior: 'persist' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});
