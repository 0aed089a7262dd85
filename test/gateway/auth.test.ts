/**
 * behaviour §6 Auth over real HTTP on the real dev server: API keys bound to resourceIds, 401 without a known key, 403 on
 * every route that names another resource's thread (streams included) with nothing changed, `*` keys, local
 * development mode, key settings from the environment or a file, and CORS for the browser SDK.
 */
import { AgentCatalog } from '../../client/agent-catalog';
import { summarizeAgents } from '../../agents/summary';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiKeyRing, describeAccess } from '../../gateway/auth';
import { defineRoute, registerRoute } from '../../gateway/route';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { threadTargetSchema, type InputResult, type ThreadTarget } from '../../protocol/schemas';
import { gatewaySettingsFromEnv } from '../../config/settings';
import type { MessagesPage } from '../../protocol/views';
import type { ThreadView } from '../../protocol/views';
import { startHarness, testAgent, textByRun, type Harness } from '../support/harness';
import { openSse } from '../support/sse';

interface ErrorBody {
  error: { type: string; message: string };
}

interface Answer<T> {
  status: number;
  body: T;
  headers: Headers;
}

// Unique per run, so keys of this file never reach another file's threads.
const run = randomUUID();
const tenantA = `tenant-a-${run}`;
const tenantB = `tenant-b-${run}`;
const KEY_A = `key-a-${run}`;
const KEY_B = `key-b-${run}`;
const OPS_KEY = `ops-${run}`;
const apiKeys = { [KEY_A]: [tenantA], [KEY_B]: [tenantB], [OPS_KEY]: ['*'] };

let h: Harness;
let keyed: ServedGateway;
let open: ServedGateway;
beforeAll(async () => {
  h = await startHarness();
  keyed = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0, apiKeys });
  open = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0 });
});
afterAll(async () => {
  await keyed?.close();
  await open?.close();
  await h?.close();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function call<T = unknown>(
  gateway: ServedGateway,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer<T>> {
  const res = await fetch(`${gateway.url}${path}`, {
    method,
    headers: options.body === undefined ? options.headers : { 'content-type': 'application/json', ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

const threadPath = (t: ThreadTarget) =>
  `/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`;
const threadOf = (resourceId: string): ThreadTarget => ({ resourceId, threadId: `thr-${randomUUID()}` });

/** Sends a message with `key` and waits for its run to finish; returns the send result. */
async function converse(gateway: ServedGateway, key: string | undefined, t: ThreadTarget, text: string) {
  const headers = key ? bearer(key) : {};
  const sse = await openSse(`${gateway.url}${threadPath(t)}/events`, { headers });
  expect(sse.response.status).toBe(200);
  const sent = await call<InputResult>(gateway, 'POST', '/api/agents/tester/send-message', {
    body: { message: text, ...t },
    headers,
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const seen = await sse.untilEvent((e) => e.type === 'finish' && e.runId === sent.body.runId);
  sse.close();
  expect(textByRun(seen).get(sent.body.runId!)).toBe(`Echo: ${text}`);
  return sent.body;
}

/**
 * A request naming thread `t` on every route that names a thread, keyed like the OpenAPI document's paths. The test
 * below fails when the gateway gains a thread route this table lacks, so every new route gets its 403 case.
 */
const threadRequests: Record<string, (t: ThreadTarget) => { path: string; body?: unknown }> = {
  'POST /api/agents/{agentId}/send-message': (t) => ({
    path: '/api/agents/tester/send-message',
    body: { message: 'hi', ...t },
  }),
  'POST /api/agents/{agentId}/queue-message': (t) => ({
    path: '/api/agents/tester/queue-message',
    body: { message: 'hi', ...t },
  }),
  'POST /api/agents/{agentId}/signals': (t) => ({
    path: '/api/agents/tester/signals',
    body: { signal: { type: 'notification', contents: 'ci failed' }, ...t },
  }),
  'POST /api/agents/{agentId}/state-signals': (t) => ({
    path: '/api/agents/tester/state-signals',
    body: { signal: { id: 'browser', cacheKey: 'k', contents: 'open' }, ...t },
  }),
  'POST /api/agents/{agentId}/send-tool-approval': (t) => ({
    path: '/api/agents/tester/send-tool-approval',
    body: { ...t, toolCallId: 'call-1', approved: true },
  }),
  'POST /api/agents/{agentId}/notifications': (t) => ({
    path: '/api/agents/tester/notifications',
    body: { notification: { source: 'github', kind: 'ci', summary: 'red' }, ...t },
  }),
  'GET /api/threads/{resourceId}/{threadId}/notifications': (t) => ({ path: `${threadPath(t)}/notifications` }),
  'GET /api/threads/{resourceId}/{threadId}/notifications/archive': (t) => ({
    path: `${threadPath(t)}/notifications/archive`,
  }),
  'POST /api/threads/{resourceId}/{threadId}/notifications/{notificationId}/seen': (t) => ({
    path: `${threadPath(t)}/notifications/n1/seen`,
  }),
  'POST /api/threads/{resourceId}/{threadId}/notifications/{notificationId}/dismiss': (t) => ({
    path: `${threadPath(t)}/notifications/n1/dismiss`,
  }),
  'POST /api/threads/{resourceId}/{threadId}/notifications/{notificationId}/archive': (t) => ({
    path: `${threadPath(t)}/notifications/n1/archive`,
  }),
  'POST /api/agents/{agentId}/threads/abort': (t) => ({
    path: '/api/agents/tester/threads/abort',
    body: { ...t, clearPendingSignals: true },
  }),
  'POST /api/agents/{agentId}/threads/cancel-queued': (t) => ({
    path: '/api/agents/tester/threads/cancel-queued',
    body: { ...t, signalIds: ['x'] },
  }),
  'POST /api/agents/{agentId}/threads/subscribe': (t) => ({ path: '/api/agents/tester/threads/subscribe', body: t }),
  'GET /api/threads/{resourceId}/{threadId}/events': (t) => ({ path: `${threadPath(t)}/events` }),
  'GET /api/threads/{resourceId}/{threadId}': (t) => ({ path: threadPath(t) }),
  'GET /api/threads/{resourceId}/{threadId}/messages': (t) => ({ path: `${threadPath(t)}/messages` }),
  'GET /api/threads/{resourceId}/{threadId}/steps': (t) => ({ path: `${threadPath(t)}/steps` }),
  'GET /api/threads/{resourceId}/{threadId}/steps/{step}/prompt': (t) => ({ path: `${threadPath(t)}/steps/1/prompt` }),
  'POST /api/threads/{resourceId}/{threadId}/fork': (t) => ({
    path: `${threadPath(t)}/fork`,
    body: { atStep: 1, to: { resourceId: t.resourceId, threadId: `${t.threadId}-fork` } },
  }),
};

/** The `METHOD /path` of every operation the gateway documents with a 403: the routes that name a thread. */
async function documentedThreadRoutes(): Promise<string[]> {
  const doc = await call<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>(
    keyed,
    'GET',
    '/api/openapi.json',
    { headers: bearer(KEY_B) },
  );
  expect(doc.status).toBe(200);
  return Object.entries(doc.body.paths).flatMap(([path, operations]) =>
    Object.entries(operations)
      .filter(([, op]) => '403' in op.responses)
      .map(([method]) => `${method.toUpperCase()} ${path}`)
      // The thread list names no thread: its 403 (a resource filter outside the key) is tested on its own below.
      .filter((route) => route !== 'GET /api/threads'),
  );
}

describe('API keys bound to resources', () => {
  it("lets a key send to, stream and read its own resource's threads", async () => {
    const t = threadOf(tenantA);
    const first = await converse(keyed, KEY_A, t, 'hello');
    expect(first.action).toBe('wake');

    const viaPost = await openSse(`${keyed.url}/api/agents/tester/threads/subscribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(KEY_A) },
      body: JSON.stringify(t),
    });
    expect(viaPost.response.status).toBe(200);
    const second = await call<InputResult>(keyed, 'POST', '/api/agents/tester/queue-message', {
      body: { message: 'again', ...t },
      headers: bearer(KEY_A),
    });
    expect(second.status).toBe(200);
    const seen = await viaPost.untilEvent((e) => e.type === 'finish' && e.runId === second.body.runId);
    viaPost.close();
    expect(textByRun(seen).get(second.body.runId!)).toBe('Echo: again');

    const view = await call<ThreadView>(keyed, 'GET', threadPath(t), { headers: bearer(KEY_A) });
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({ resourceId: tenantA, threadId: t.threadId, runsCompleted: 2 });
    const page = await call<MessagesPage>(keyed, 'GET', `${threadPath(t)}/messages`, { headers: bearer(KEY_A) });
    expect(page.status).toBe(200);
    expect(page.body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('answers 403 on every route that names a thread of another resource, and changes nothing', async () => {
    expect((await documentedThreadRoutes()).sort()).toEqual(Object.keys(threadRequests).sort());

    const existing = threadOf(tenantA);
    await converse(keyed, KEY_A, existing, 'set up');
    const before = await h.client.getThread(existing);
    const requestsBefore = h.model.requests.length;
    const fresh = threadOf(tenantA);

    for (const [route, build] of Object.entries(threadRequests)) {
      for (const t of [existing, fresh]) {
        const { path, body } = build(t);
        const res = await call<ErrorBody>(keyed, route.split(' ')[0], path, { body, headers: bearer(KEY_B) });
        expect(res.status, `${route}: ${JSON.stringify(res.body)}`).toBe(403);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.body.error).toEqual({
          type: 'ForbiddenError',
          message: `This API key may not act on resourceId "${tenantA}". Use a key bound to it in THREADLINE_API_KEYS.`,
        });
      }
    }
    expect(await h.client.getThread(fresh)).toBeNull();
    expect(await h.client.getThread(existing)).toEqual(before);
    expect(h.model.requests.length).toBe(requestsBefore);
  });

  it("lists only the key's own threads, and answers 403 to a resource filter outside the key", async () => {
    const mine = threadOf(tenantB);
    const theirs = threadOf(tenantA);
    await converse(keyed, KEY_B, mine, 'mine');
    await converse(keyed, KEY_A, theirs, 'theirs');
    // Visibility is eventually consistent: wait for our own thread to show.
    type Page = { threads: { resourceId: string; threadId: string }[] };
    let listed: Page = { threads: [] };
    await expect
      .poll(
        async () => {
          listed = (await call<Page>(keyed, 'GET', '/api/threads?pageSize=200', { headers: bearer(KEY_B) })).body;
          return listed.threads.some((t) => t.threadId === mine.threadId);
        },
        { timeout: 20_000 },
      )
      .toBe(true);
    expect(listed.threads.every((t) => t.resourceId === tenantB)).toBe(true);
    const other = await call<ErrorBody>(keyed, 'GET', `/api/threads?resource=${encodeURIComponent(tenantA)}`, {
      headers: bearer(KEY_B),
    });
    expect(other.status).toBe(403);
    expect(other.body.error.type).toBe('ForbiddenError');
    // A raw query cannot OR its way past the key's resources.
    const escape = await call<ErrorBody>(
      keyed,
      'GET',
      `/api/threads?query=${encodeURIComponent("x = 'y') OR (1 = 1")}`,
      {
        headers: bearer(KEY_B),
      },
    );
    expect(escape.status).toBe(400);
  });

  it('keeps a key out of the other tenant in the same path shape (ids with ":" and "/")', async () => {
    // tenantA with a suffix must not pass as tenantA, however the path is encoded.
    for (const resourceId of [`${tenantA}:x`, `${tenantA}/x`, `${tenantA} `, tenantA.toUpperCase()]) {
      const t = { resourceId, threadId: 'thr' };
      const res = await call<ErrorBody>(keyed, 'POST', '/api/agents/tester/send-message', {
        body: { message: 'hi', ...t },
        headers: bearer(KEY_A),
      });
      expect(res.status, resourceId).toBe(403);
      const read = await call<ErrorBody>(keyed, 'GET', threadPath(t), { headers: bearer(KEY_A) });
      expect(read.status, resourceId).toBe(403);
    }
  });

  it('lets a "*" key act on every resource', async () => {
    for (const resourceId of [tenantA, tenantB, `other-${run}`]) {
      const t = threadOf(resourceId);
      await converse(keyed, OPS_KEY, t, `ops on ${resourceId}`);
      const view = await call<ThreadView>(keyed, 'GET', threadPath(t), { headers: bearer(OPS_KEY) });
      expect(view.body).toMatchObject({ resourceId, runsCompleted: 1 });
    }
  });

  it('lets any known key list the agents and read the OpenAPI document', async () => {
    for (const key of [KEY_A, KEY_B, OPS_KEY]) {
      const agents = await call<Record<string, unknown>>(keyed, 'GET', '/api/agents', { headers: bearer(key) });
      expect(agents.status).toBe(200);
      expect(Object.keys(agents.body)).toEqual(['tester']);
      const doc = await call<{ openapi: string }>(keyed, 'GET', '/api/openapi.json', { headers: bearer(key) });
      expect(doc.body.openapi).toBe('3.1.0');
    }
  });
});

describe('callers without a known key', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['no Authorization header', {}, /^Missing API key\. Send it as "Authorization: Bearer <key>"\.$/],
    ['an unknown key', bearer(`nope-${run}`), /^Unknown API key\./],
    ['a prefix of a known key', bearer(KEY_A.slice(0, -1)), /^Unknown API key\./],
    ['another scheme', { authorization: `Basic ${KEY_A}` }, /must be "Bearer <key>"/],
    ['a bare key', { authorization: KEY_A }, /must be "Bearer <key>"/],
  ];

  it.each(cases)('answers 401 to %s, on every /api route, and changes nothing', async (_name, headers, message) => {
    const t = threadOf(tenantA);
    const requests: [string, string, unknown?][] = [
      ['GET', '/api/agents'],
      ['GET', '/api/openapi.json'],
      ['GET', '/api/nope'],
      ...Object.entries(threadRequests).map(([route, build]) => {
        const { path, body } = build(t);
        return [route.split(' ')[0], path, body] as [string, string, unknown?];
      }),
    ];
    for (const [method, path, body] of requests) {
      const res = await call<ErrorBody>(keyed, method, path, { body, headers });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="threadline"');
      expect(res.body.error.type).toBe('UnauthorizedError');
      expect(res.body.error.message).toMatch(message);
    }
    expect(await h.client.getThread(t)).toBeNull();
  });

  it('answers /health without a key', async () => {
    const res = await call(keyed, 'GET', '/health');
    expect(res).toMatchObject({ status: 200, body: { ok: true } });
  });
});

describe('local development mode (no keys configured)', () => {
  it('lets every caller act on every thread, with or without an Authorization header', async () => {
    await converse(open, undefined, threadOf(tenantA), 'no key');
    await converse(open, `whatever-${run}`, threadOf(tenantB), 'any header');
    const agents = await call(open, 'GET', '/api/agents');
    expect(agents.status).toBe(200);
  });

  it('announces itself at start-up, and names the key source otherwise', () => {
    expect(describeAccess(undefined)).toMatch(
      /^Auth: OFF, local development mode\..*every caller may act on every thread/,
    );
    expect(describeAccess({ a: ['x'], b: ['*'] }, 'THREADLINE_API_KEYS')).toBe(
      'Auth: 2 API keys from THREADLINE_API_KEYS; callers send "Authorization: Bearer <key>".',
    );
  });
});

describe('key settings', () => {
  it('reads THREADLINE_API_KEYS, or the same JSON from THREADLINE_API_KEYS_FILE', async () => {
    const keys = { 'key-a': ['tenant-a'], 'ops-key': ['*'] };
    expect(gatewaySettingsFromEnv({ THREADLINE_API_KEYS: JSON.stringify(keys) })).toMatchObject({
      apiKeys: keys,
      apiKeysSource: 'THREADLINE_API_KEYS',
    });
    const file = join(await mkdtemp(join(tmpdir(), 'threadline-keys-')), 'keys.json');
    await writeFile(file, JSON.stringify(keys));
    expect(gatewaySettingsFromEnv({ THREADLINE_API_KEYS_FILE: file })).toMatchObject({
      apiKeys: keys,
      apiKeysSource: `THREADLINE_API_KEYS_FILE (${file})`,
    });
    expect(gatewaySettingsFromEnv({}).apiKeys).toBeUndefined();
  });

  it('refuses key settings it cannot use, saying what to write', () => {
    const bad: [NodeJS.ProcessEnv, RegExp][] = [
      [{ THREADLINE_API_KEYS: '{"a":' }, /THREADLINE_API_KEYS is not JSON.*e\.g\. \{"key-a":\["tenant-a"\]/],
      [{ THREADLINE_API_KEYS: '["a"]' }, /must map each API key to the resourceIds it may act on/],
      [{ THREADLINE_API_KEYS: '{"a":"tenant-a"}' }, /a: .*array/i],
      [{ THREADLINE_API_KEYS: '{"has space":["t"]}' }, /visible ASCII characters without spaces/],
      [{ THREADLINE_API_KEYS: '{}' }, /no keys: unset it for local development mode/],
      [{ THREADLINE_API_KEYS: '{"a":["t"]}', THREADLINE_API_KEYS_FILE: '/x' }, /not both/],
      [{ THREADLINE_API_KEYS_FILE: `/nonexistent/${run}.json` }, /THREADLINE_API_KEYS_FILE: cannot read/],
    ];
    for (const [env, message] of bad) expect(() => gatewaySettingsFromEnv(env), JSON.stringify(env)).toThrow(message);
  });

  it('finds a key only by its exact value', () => {
    const ring = new ApiKeyRing({ 'key-one': ['a', 'b'], 'key-two': ['*'] });
    expect(ring.find('key-one')?.resources).toEqual(new Set(['a', 'b']));
    expect(ring.find('key-two')?.resources).toBe('*');
    for (const guess of ['key-on', 'key-one ', 'KEY-ONE', '', 'key-three']) expect(ring.find(guess)).toBeUndefined();
    expect(ring.find('key-one')?.id).not.toContain('key-one');
  });
});

describe('routes added later', () => {
  const thread = threadTargetSchema.extend({ note: z.string() });

  it('cannot forget to authorize: a route naming a thread must declare where, or the gateway does not start', () => {
    const app = new Hono();
    const register = (spec: Parameters<typeof defineRoute>[0]) =>
      registerRoute(app as never, defineRoute(spec), AgentCatalog.of([]));
    const handle = () => new Response();
    expect(() =>
      register({
        method: 'post',
        path: '/api/agents/:agentId/notes',
        summary: 's',
        thread: 'none',
        body: thread,
        handle,
      }),
    ).toThrow(/names its thread in the body but declares thread: 'none'. Declare thread: 'body'/);
    expect(() =>
      register({
        method: 'get',
        path: '/api/threads/:resourceId/:threadId/notes',
        summary: 's',
        thread: 'none',
        handle,
      }),
    ).toThrow(/names its thread in the path but declares thread: 'none'. Declare thread: 'path'/);
    expect(() =>
      register({ method: 'get', path: '/api/things/:resourceId', summary: 's', thread: 'path', handle }),
    ).toThrow(/both :resourceId and :threadId/);
    expect(() =>
      register({
        method: 'get',
        path: '/api/notes',
        summary: 's',
        thread: 'none',
        query: z.object({ resourceId: z.string() }),
        handle,
      }),
    ).toThrow(/names a thread in its query/);
  });
});

describe('CORS', () => {
  const ORIGIN = 'https://app.example.com';
  let cors: ServedGateway;
  let anyOrigin: ServedGateway;
  beforeAll(async () => {
    cors = await serveGateway({
      client: h.client,
      agents: summarizeAgents([testAgent]),
      port: 0,
      apiKeys,
      corsOrigins: [ORIGIN],
    });
    anyOrigin = await serveGateway({
      client: h.client,
      agents: summarizeAgents([testAgent]),
      port: 0,
      apiKeys,
      corsOrigins: ['*'],
    });
  });
  afterAll(async () => {
    await cors?.close();
    await anyOrigin?.close();
  });

  const corsHeaders = (headers: Headers): string[] => {
    const names: string[] = [];
    headers.forEach((_value, name) => {
      if (name.startsWith('access-control-')) names.push(name);
    });
    return names;
  };

  const preflight = (gateway: ServedGateway, origin: string) =>
    fetch(`${gateway.url}/api/agents/tester/send-message`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,idempotency-key,last-event-id',
      },
    });

  it('answers a preflight from an allowed origin without a key, allowing the SDK headers', async () => {
    const res = await preflight(cors, ORIGIN);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-allow-methods')?.split(',')).toEqual(['GET', 'POST']);
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase().split(',').sort()).toEqual(
      ['authorization', 'content-type', 'idempotency-key', 'last-event-id', 'x-request-id'].sort(),
    );
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('vary')).toMatch(/Origin/);
  });

  it('marks responses, errors included, for the allowed origin only, exposing Retry-After and X-Request-Id', async () => {
    const ok = await call(cors, 'GET', '/api/agents', { headers: { origin: ORIGIN, ...bearer(KEY_A) } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(ok.headers.get('access-control-expose-headers')).toBe('Retry-After,X-Request-Id');
    const denied = await call(cors, 'GET', '/api/agents', { headers: { origin: ORIGIN } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const stranger = await call(cors, 'GET', '/api/agents', {
      headers: { origin: 'https://evil.example', ...bearer(KEY_A) },
    });
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
    expect((await preflight(cors, 'https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('allows any origin with "*", and sends no CORS headers when none is configured', async () => {
    expect((await preflight(anyOrigin, 'https://anywhere.example')).headers.get('access-control-allow-origin')).toBe(
      '*',
    );
    const none = await preflight(keyed, ORIGIN);
    expect(none.status).not.toBe(401);
    expect(corsHeaders(none.headers)).toEqual([]);
    const plain = await call(keyed, 'GET', '/api/agents', { headers: { origin: ORIGIN, ...bearer(KEY_A) } });
    expect(corsHeaders(plain.headers)).toEqual([]);
  });
});
