/**
 * One gateway route = one `defineRoute({...})` entry: method, path, summary, schemas and a handler. The app registers
 * every entry with `registerRoute` and the OpenAPI document is built from the same entries, so a route cannot be
 * served undocumented, and no route parses or authorizes its own thread:
 *
 * - A route that names a thread declares where: `thread: 'path'` (`/api/threads/:resourceId/:threadId/...`) or
 *   `thread: 'body'` (a body schema with `resourceId` and `threadId`). `registerRoute` parses it and authorizes the
 *   caller for its `resourceId` (403) before the handler runs, and hands the handler that `target`; handlers act on
 *   it, never on ids they read from the context themselves. A body without `resourceId` gets the caller's only
 *   resource, if its key has exactly one (Mastra's client leaves it out).
 * - A route may `prepare` the raw body (map another client's fields onto its schema) before it is validated.
 * - `registerRoute` refuses, at start-up, a route whose path or body names a thread while it declares another source
 *   (or `'none'`): forgetting the declaration fails every test instead of opening a hole.
 */
import type { Context, Hono } from 'hono';
import type { AgentCatalog } from '../client/agent-catalog';
import { z } from 'zod';
import { NotFoundError, UnauthorizedError, UnsupportedMediaTypeError, ValidationError } from '../protocol/errors';
import {
  defaultLimits,
  describeZodError,
  nestedDeeperThan,
  threadTargetSchema,
  type ThreadTarget,
} from '../protocol/schemas';
import { authorizeTarget, type Caller, type GatewayEnv } from './auth';

/** Where a route's request names its thread. */
export type ThreadSource = 'path' | 'body' | 'none';

/** Routes under this prefix need a caller (an API key, unless the gateway runs in development mode). */
export const API_PREFIX = '/api/';

type AgentIdOf<P extends string> = P extends `${string}/:agentId/${string}` | `${string}/:agentId` ? string : undefined;

/** What a handler receives: everything already validated, and the thread already authorized. */
export interface RouteRequest<P extends string, T extends ThreadSource, B, Q> {
  c: Context<GatewayEnv>;
  /** The `:agentId` of the path, a registered agent (404 otherwise). */
  agentId: AgentIdOf<P>;
  /** The thread the request names, which the caller may act on (403 otherwise). */
  target: T extends 'none' ? undefined : ThreadTarget;
  body: B;
  query: Q;
}

export interface RouteSpec<P extends string, T extends ThreadSource, B, Q> {
  method: 'get' | 'post';
  /** Hono path, e.g. `/api/threads/:resourceId/:threadId/messages`. */
  path: P;
  /** One line for the OpenAPI document. */
  summary: string;
  description?: string;
  thread: T;
  /** JSON body schema (a `z.object`, so the gateway can see whether it names a thread). */
  body?: z.ZodObject & z.ZodType<B>;
  /**
   * Maps the raw JSON body onto `body` before it is validated, for requests written for another server's dialect
   * (Mastra's, `./mastra-requests`). Throws `ValidationError` to refuse a field it cannot map.
   */
  prepare?: (raw: unknown) => unknown;
  /** Query string schema (a `z.object` of string fields). */
  query?: z.ZodObject & z.ZodType<Q>;
  /** Request headers the route reads, name → description, for the document (SSE routes get Last-Event-ID). */
  headers?: Record<string, string>;
  /** `json` (the default), `sse` (`text/event-stream`) or `text` (`text/plain`: the Prometheus metrics). */
  responds?: 'json' | 'sse' | 'text';
  /** Error statuses this route answers besides those its spec implies (400, 401, 403, 404, 413, 429). */
  statuses?: number[];
  handle(request: RouteRequest<P, T, B, Q>): Response | Promise<Response>;
}

/** A route with its types erased, as the app and the OpenAPI document see it. */
export type Route = Omit<RouteSpec<string, ThreadSource, unknown, unknown>, 'handle'> & {
  handle(request: {
    c: Context<GatewayEnv>;
    agentId: string | undefined;
    target: ThreadTarget | undefined;
    body: unknown;
    query: unknown;
  }): Response | Promise<Response>;
};

/**
 * Declares a route. Types flow from the spec into the handler: `target` exists only on thread routes, `agentId`
 * only on `/:agentId` paths, `body` and `query` have their schemas' output types.
 */
export function defineRoute<P extends string, T extends ThreadSource, B = undefined, Q = undefined>(
  spec: RouteSpec<P, T, B, Q>,
): Route {
  return spec as unknown as Route;
}

/** The `:name` parameters of a Hono path, in order. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
}

/** Throws (at start-up) unless the route's `thread` matches where its path or body names a thread. */
export function checkThreadSource(route: Route): void {
  const where = `Route ${route.method.toUpperCase()} ${route.path}`;
  const params = pathParams(route.path);
  const inPath = params.includes('resourceId') || params.includes('threadId');
  const inBody = route.body !== undefined && ('resourceId' in route.body.shape || 'threadId' in route.body.shape);
  if (route.body !== undefined && !(route.body instanceof z.ZodObject)) {
    throw new Error(`${where}: its body schema must be a z.object.`);
  }
  if (inPath && !(params.includes('resourceId') && params.includes('threadId'))) {
    throw new Error(`${where}: a thread path names both :resourceId and :threadId.`);
  }
  if (inPath && inBody) throw new Error(`${where} names its thread in both the path and the body; keep one.`);
  if (route.query && ('resourceId' in route.query.shape || 'threadId' in route.query.shape)) {
    throw new Error(`${where} names a thread in its query; name it in the path or the body, where it is authorized.`);
  }
  const expected: ThreadSource = inPath ? 'path' : inBody ? 'body' : 'none';
  if (route.thread !== expected) {
    const names = expected === 'none' ? 'names no thread' : `names its thread in the ${expected}`;
    throw new Error(
      `${where} ${names} but declares thread: '${route.thread}'. Declare thread: '${expected}', so the gateway ` +
        'parses and authorizes it.',
    );
  }
  if (expected !== 'none' && !route.path.startsWith(API_PREFIX)) {
    throw new Error(`${where} names a thread outside ${API_PREFIX}, where callers are not identified.`);
  }
}

/** Registers a route on the app: agent check, body, query, thread authorization, then the handler. */
export function registerRoute(app: Hono<GatewayEnv>, route: Route, agents: AgentCatalog): void {
  checkThreadSource(route);
  const hasAgent = pathParams(route.path).includes('agentId');
  app.on(route.method.toUpperCase(), route.path, async (c) => {
    const pathTarget = route.thread === 'path' ? threadTarget(c, pathThread(c)) : undefined;
    const agentId = hasAgent ? await knownAgent(c, agents) : undefined;
    const body = route.body
      ? await jsonBody(c, route.body, (raw) => prepareBody(route, raw, c.get('caller')))
      : undefined;
    const query = route.query ? parse(route.query, c.req.query(), 'query') : undefined;
    const target = route.thread === 'body' ? threadTarget(c, body as ThreadTarget) : pathTarget;
    return route.handle({ c, agentId, target, body, query });
  });
}

/**
 * The thread a request names, validated, and authorized for the request's caller: 400 for a bad id, 403 for a key
 * bound to other resources. Every thread route goes through here (via `registerRoute`); nothing else authorizes.
 */
export function threadTarget(
  c: Context<GatewayEnv>,
  named: { resourceId?: unknown; threadId?: unknown },
): ThreadTarget {
  const parsed = threadTargetSchema.safeParse({ resourceId: named.resourceId, threadId: named.threadId });
  if (!parsed.success) throw new ValidationError(`Invalid thread: ${describeZodError(parsed.error)}`);
  const caller = c.get('caller');
  // Fail closed: a thread route the identifying middleware did not guard must not act as anyone.
  if (!caller) throw new UnauthorizedError('No caller identified for this route.');
  const target = authorizeTarget(caller, parsed.data);
  c.set('target', target);
  return target;
}

function pathThread(c: Context): { resourceId?: string; threadId?: string } {
  return { resourceId: c.req.param('resourceId'), threadId: c.req.param('threadId') };
}

async function knownAgent(c: Context, agents: AgentCatalog): Promise<string> {
  const id = c.req.param('agentId')!;
  if (!(await agents.has(id))) throw new NotFoundError(`Unknown agent "${id}". GET /api/agents lists the agents.`);
  return id;
}

/** `application/json`, or a `+json` type (`application/problem+json`), with any parameters. */
const JSON_MEDIA_TYPE = /^\s*application\/(?:[\w.!#$%&'*^`|~-]+\+)?json\s*(?:;|$)/i;

/** A request body's levels of arrays and objects: an input's bound and room for the body around it. */
const MAX_BODY_DEPTH = defaultLimits.maxInputDepth + 8;

async function jsonBody<T>(c: Context, schema: z.ZodType<T>, prepare: (raw: unknown) => unknown): Promise<T> {
  // Refused before it is read. A browser posts `text/plain` to any origin without asking first (no CORS preflight):
  // taking it as JSON would let any web page act on a gateway that trusts its network (development mode, no keys).
  const type = c.req.header('Content-Type');
  if (!type || !JSON_MEDIA_TYPE.test(type)) {
    const got = type ? `Content-Type ${JSON.stringify(type.slice(0, 100))}` : 'no Content-Type';
    throw new UnsupportedMediaTypeError(
      `The request body must be JSON, sent as "Content-Type: application/json" (got ${got}).`,
    );
  }
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new ValidationError('The request body must be JSON (Content-Type: application/json).');
  }
  // Before anything reads it: a body nested deep enough overflows the stack of whatever serializes it next (a send's
  // answer echoes the message as sent). The input inside is bounded by maxInputDepth; the body adds its own levels.
  if (nestedDeeperThan(raw, MAX_BODY_DEPTH)) {
    throw new ValidationError(
      `The request body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels. Send a flatter value.`,
    );
  }
  return parse(schema, prepare(raw), 'request body');
}

/** The route's own mapping, then, on a body that names its thread, the default `resourceId`. */
function prepareBody(route: Route, raw: unknown, caller: Caller | undefined): unknown {
  const prepared = route.prepare ? route.prepare(raw) : raw;
  return route.thread === 'body' ? withDefaultResource(prepared, caller) : prepared;
}

/**
 * A body without `resourceId` (Mastra's client makes it optional) gets the one resource the caller's key is bound
 * to; with no such single resource the caller must name it.
 */
export function withDefaultResource(raw: unknown, caller: Caller | undefined): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  const body = raw as Record<string, unknown>;
  if (body.resourceId !== undefined || body.threadId === undefined) return raw;
  if (caller && caller.resources !== '*' && caller.resources.size === 1) {
    return { ...body, resourceId: [...caller.resources][0] };
  }
  throw new ValidationError('resourceId is required: a Threadline thread is (resourceId, threadId).');
}

function parse<T>(schema: z.ZodType<T>, raw: unknown, what: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ValidationError(`Invalid ${what}: ${describeZodError(parsed.error)}`);
  return parsed.data;
}
