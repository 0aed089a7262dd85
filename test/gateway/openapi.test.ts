/**
 * behaviour §6 `GET /api/openapi.json`: an OpenAPI 3.1 document generated from the route table and its zod schemas, that
 * documents every route the app serves (compared with Hono's own `app.routes`), so a route added later appears on
 * its own.
 */
import { summarizeAgents } from '../../agents/summary';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../gateway/app';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { startHarness, testAgent, type Harness } from '../support/harness';

interface Operation {
  operationId: string;
  summary: string;
  security?: unknown[];
  parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: {
    content: { 'application/json': { schema: { properties: Record<string, unknown>; required: string[] } } };
  };
  responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
  security: unknown[];
}

let h: Harness;
let app: ReturnType<typeof createGateway>;
let doc: Document;
let text: string;
beforeAll(async () => {
  h = await startHarness({ noWorker: true });
  app = createGateway({ client: h.client, agents: summarizeAgents([testAgent]) });
  const res = await app.request('/api/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  text = await res.text();
  doc = JSON.parse(text) as Document;
});
afterAll(async () => {
  await h?.close();
});

/** Every route the app serves, as `METHOD /path` with OpenAPI's `{param}` placeholders. */
function servedRoutes(): string[] {
  return (
    app.routes
      .filter((r) => r.method !== 'ALL')
      // The web console's pages and assets (and `/`, which links to it) are HTML for browsers, not the API.
      .filter((r) => r.path !== '/' && !r.path.startsWith('/console'))
      .map((r) => `${r.method} ${r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`)
  );
}

function operations(): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as [string, Operation]),
  );
}

describe('GET /api/openapi.json', () => {
  it('is an OpenAPI 3.1.0 document in valid JSON', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: 'Threadline gateway', version: expect.any(String) });
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
    expect(text).not.toContain('"$schema"');
    expect(doc.components.securitySchemes).toEqual({
      apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    expect(doc.security).toEqual([{ apiKey: [] }]);
  });

  it('documents exactly the routes the app serves, including the ones it is served on', () => {
    const served = servedRoutes();
    expect(served.length).toBeGreaterThanOrEqual(12);
    expect(
      operations()
        .map(([route]) => route)
        .sort(),
    ).toEqual([...served].sort());
    expect(served).toEqual(
      expect.arrayContaining(['GET /health', 'GET /api/openapi.json', 'POST /api/agents/{agentId}/send-message']),
    );
  });

  it('gives every operation a unique id, a summary, its path parameters and its response codes', () => {
    const ids = new Set<string>();
    for (const [route, op] of operations()) {
      ids.add(op.operationId);
      expect(op.summary, route).toMatch(/\w+/);
      const path = route.split(' ')[1];
      const placeholders = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(
        op.parameters.filter((p) => p.in === 'path').map((p) => p.name),
        route,
      ).toEqual(placeholders);
      expect(op.responses['200'], route).toBeDefined();

      const codes = Object.keys(op.responses);
      if (path.startsWith('/api/')) {
        expect(codes, route).toEqual(expect.arrayContaining(['401', '429', '503']));
        expect(op.responses['429'].headers, route).toHaveProperty('Retry-After');
        expect(op.responses['503'].headers, route).toHaveProperty('Retry-After');
        expect(op.security, route).toBeUndefined();
      } else {
        expect(op.security, route).toEqual([]);
      }
      const namesThread = placeholders.includes('resourceId') || 'resourceId' in (bodySchema(op)?.properties ?? {});
      // The thread list names no thread, but refuses a resource filter outside the key.
      expect(codes.includes('403'), route).toBe(namesThread || route === 'GET /api/threads');
      if (op.requestBody) expect(codes, route).toEqual(expect.arrayContaining(['400', '413', '415']));
      for (const code of codes.filter((c) => c !== '200')) {
        expect(op.responses[code].content, `${route} ${code}`).toEqual({
          'application/json': { schema: { $ref: '#/components/schemas/Error' } },
        });
      }
    }
    expect(ids.size).toBe(operations().length);
  });

  it('takes the body and query schemas from the zod schemas that validate them', () => {
    const send = doc.paths['/api/agents/{agentId}/send-message'].post;
    const body = bodySchema(send)!;
    expect(body.required).toEqual(expect.arrayContaining(['resourceId', 'threadId']));
    expect(body.properties.threadId).toEqual({ type: 'string', minLength: 1, maxLength: 256 });
    // The message is checked by the client but documented with its schema: a string, parts, or an object.
    expect(JSON.stringify(body.properties.message)).toContain('"contents"');
    expect(body.properties.ifIdle).toMatchObject({
      properties: { behavior: { enum: ['wake', 'persist', 'discard'] } },
    });
    expect(Object.keys(send.responses)).toEqual(['200', '400', '401', '403', '404', '409', '413', '415', '429', '503']);
    expect(send.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header' }));

    const cancel = bodySchema(doc.paths['/api/agents/{agentId}/threads/cancel-queued'].post)!;
    expect(cancel.properties.signalIds).toMatchObject({ type: 'array', minItems: 1, maxItems: 1000 });

    const messages = doc.paths['/api/threads/{resourceId}/{threadId}/messages'].get;
    expect(messages.parameters.filter((p) => p.in === 'query')).toEqual([
      { name: 'limit', in: 'query', required: false, schema: { type: 'string', pattern: '^\\d+$' } },
      { name: 'before', in: 'query', required: false, schema: { type: 'string' } },
    ]);
    const events = doc.paths['/api/threads/{resourceId}/{threadId}/events'].get;
    expect(events.responses['200'].content).toHaveProperty('text/event-stream');
    expect(events.parameters).toContainEqual(expect.objectContaining({ name: 'Last-Event-ID', in: 'header' }));
  });
});

describe('served over HTTP', () => {
  let served: ServedGateway;
  beforeAll(async () => {
    served = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0 });
  });
  afterAll(async () => {
    await served?.close();
  });

  it('answers the same document', async () => {
    const res = await fetch(`${served.url}/api/openapi.json`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(doc);
  });
});

function bodySchema(op: Operation) {
  return op.requestBody?.content['application/json'].schema;
}
