/**
 * Generated HTTP requests for the gateway fuzzer. Each request starts as a valid one for its route (a seed body for
 * the routes known here, a minimal instance of the documented schema for any other), addressed to a thread of the
 * fuzz world, then gets up to two mutations: type-confused, missing, hostile, deeply nested or huge fields, raw
 * bodies that are not JSON or not an object, wrong content types and methods, bad path ids, query strings and
 * `Last-Event-ID`s, and no or wrong API keys.
 *
 * Every request carries `breaks`: why it is certainly invalid (each mutation that surely breaks the request says
 * so), or null when it may be valid. The fuzzer holds the gateway to that: a request that breaks must not get a 2xx.
 * Only requests that break, and reads, are aimed at the canary threads, whose state must not change.
 */
import fc from 'fast-check';
import type { ThreadTarget } from '../../../protocol/schemas';
import { allowedTypes, breaksString, exampleOf, type JsonSchema, type RouteModel } from './routes';
import {
  PROTO_KEYS,
  Raw,
  deepValue,
  hostileString,
  hugeString,
  jsonType,
  protoObject,
  toJsonText,
  typeConfused,
  unicodeEdge,
  wellFormedHostileString,
  withOwnKey,
} from './values';

/** The threads, keys and limits requests are generated against. */
export interface FuzzWorld {
  agentId: string;
  /** Threads only refused requests and reads may reach: their state is compared before and after. */
  canaries: ThreadTarget[];
  /** Existing threads that valid requests may change. */
  sinks: ThreadTarget[];
  /** Resource of new threads (a fresh thread id per request). */
  freshResource: string;
  /** A resource `keys.scoped` and `keys.solo` are not bound to. */
  foreignResource: string;
  keys: {
    /** Bound to every resource (`*`). */
    all: string;
    /** Bound to the canary, sink and fresh resources. */
    scoped: string;
    /** Bound to the sinks' resource only: a body without `resourceId` means that one. */
    solo: string;
  };
  /** The gateway's body limit (`maxInputBytes * 2 + 64 KiB`): a larger body on `/api/` is a 413. */
  maxBodyBytes: number;
}

export type TargetKind = 'canary' | 'sink' | 'fresh' | 'foreign';

/** One generated request, ready for `fetch`. */
export class FuzzRequest {
  constructor(
    readonly route: RouteModel,
    readonly method: string,
    /** Path and query, encoded. */
    readonly url: string,
    readonly headers: Record<string, string>,
    readonly body: string | undefined,
    /** Why the request is certainly invalid; null when it may be valid. */
    readonly breaks: string | null,
    /** The thread it is aimed at, if its route names one and the mutations left its ids alone. */
    readonly target: { kind: TargetKind; thread: ThreadTarget } | undefined,
    readonly mutations: string[],
  ) {}

  /** The method is the route's own (HEAD stands for GET). */
  get onRoute(): boolean {
    return this.method === this.route.method || (this.method === 'HEAD' && this.route.method === 'GET');
  }

  /** How a failure shows the request: everything, with long bodies and headers cut. */
  [fc.toStringMethod](): string {
    const cut = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s);
    const headers = Object.fromEntries(Object.entries(this.headers).map(([k, v]) => [k, cut(v)]));
    return JSON.stringify(
      {
        route: this.route.key,
        method: this.method,
        url: cut(this.url),
        headers,
        body: this.body === undefined ? undefined : cut(this.body),
        breaks: this.breaks,
        target: this.target,
        mutations: this.mutations,
      },
      null,
      2,
    );
  }
}

type Gen = fc.GeneratorValue;

// Unbiased: fast-check favours small values and edges, which would favour the first routes and options.
const index = (max: number) => fc.noBias(fc.nat({ max }));
const pick = <T>(g: Gen, items: readonly T[]): T => items[g(index, items.length - 1)];
/** True with probability `p`; shrinks to false. */
const chance = (g: Gen, p: number): boolean => g(index, 999) >= 1000 - p * 1000;
const uuid = (g: Gen): string => g(fc.uuid);

interface Draft {
  method: string;
  params: Record<string, string>;
  /** Text in place of a `*` in the route's path. */
  wildcard: string;
  query: string[];
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
  /** A whole body that is not the object above (not JSON, not an object, nested too deep). */
  rawBody: string | undefined;
  breaks: string[];
  /**
   * Why the value as sent of one part of the request breaks it (null: it may not): a path id, a body field, a query
   * parameter, the content type. The last mutation of a part decides, as the last one is what is sent.
   */
  parts: Map<string, string | null>;
  mutations: string[];
  /** The mutations changed the thread's ids: it no longer addresses the target. */
  retargeted: boolean;
  /** Why the method sent breaks the request (null: it is the route's own, or HEAD for GET). */
  methodBreaks: string | null;
}

/** Requests over every route in `routes`, uniformly. */
export function requestArbitrary(routes: readonly RouteModel[], world: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  return fc.gen().map((g) => generate(g, pick(g, routes), world));
}

function generate(g: Gen, route: RouteModel, world: FuzzWorld): FuzzRequest {
  const kind = pick<TargetKind>(g, ['sink', 'sink', 'fresh', 'fresh', 'canary', 'canary', 'foreign']);
  const thread = threadOf(g, kind, world);
  const draft: Draft = {
    method: route.method,
    params: Object.fromEntries(route.pathParams.map((name) => [name, validParam(g, name, thread, world)])),
    wildcard: pick(g, ['', 'threads', 'threads/r/t', encodeURIComponent(g(() => wellFormedHostileString)) || 'x']),
    query: validQuery(g, route, thread),
    headers: validHeaders(g, route),
    body: route.body ? validBody(g, route, thread) : undefined,
    rawBody: undefined,
    breaks: [],
    parts: new Map(),
    mutations: [],
    retargeted: false,
    methodBreaks: null,
  };
  authorize(g, draft, route, kind, world);
  const count = pick(g, [0, 1, 1, 1, 2]);
  for (let i = 0; i < count; i++) mutate(g, draft, route, world);
  for (const why of draft.parts.values()) if (why) draft.breaks.push(why);
  if (draft.methodBreaks) draft.breaks.push(draft.methodBreaks);
  // The header as sent (the last mutation's): the memory bus issues digits; an empty header means no resume.
  const resume = draft.headers['Last-Event-ID']?.trim();
  if (resume && !/^\d+$/.test(resume)) draft.breaks.push('Last-Event-ID is not an event id');

  // Canaries take reads and refused requests only: a write that may be valid goes to a sink instead.
  let target: { kind: TargetKind; thread: ThreadTarget } | undefined =
    route.thread === 'none' ? undefined : { kind, thread };
  if (kind === 'canary' && draft.breaks.length === 0 && draft.method !== 'GET' && draft.method !== 'HEAD') {
    const sink = pick(g, world.sinks);
    retarget(draft, thread, sink);
    target = { kind: 'sink', thread: sink };
  }
  if (draft.retargeted) target = undefined;

  const body = bodyText(draft);
  if (body !== undefined && route.guarded && Buffer.byteLength(body) > world.maxBodyBytes) {
    draft.breaks.push(`the body is over ${world.maxBodyBytes} bytes`);
  }
  return new FuzzRequest(
    route,
    draft.method,
    urlOf(route, draft),
    draft.headers,
    body,
    draft.breaks.length > 0 ? draft.breaks.join('; ') : null,
    target,
    draft.mutations,
  );
}

function threadOf(g: Gen, kind: TargetKind, world: FuzzWorld): ThreadTarget {
  switch (kind) {
    case 'canary':
      return pick(g, world.canaries);
    case 'sink':
      return pick(g, world.sinks);
    case 'fresh':
      return { resourceId: world.freshResource, threadId: `fresh-${uuid(g)}` };
    case 'foreign':
      return { resourceId: world.foreignResource, threadId: `foreign-${uuid(g)}` };
  }
}

function validParam(g: Gen, name: string, thread: ThreadTarget, world: FuzzWorld): string {
  switch (name) {
    case 'resourceId':
      return encodeURIComponent(thread.resourceId);
    case 'threadId':
      return encodeURIComponent(thread.threadId);
    case 'agentId':
      return world.agentId;
    case 'step':
      return pick(g, ['1', '2', '3']);
    case 'notificationId':
      return `n-${uuid(g)}`;
    case 'file':
      return pick(g, ['app.js', 'app-0000.js', 'x.css', encodeURIComponent(g(() => wellFormedHostileString)) || 'x']);
    default:
      return 'x';
  }
}

/** Valid values for the documented query parameters, by name; any other gets its schema's minimal instance. */
function validQuery(g: Gen, route: RouteModel, thread: ThreadTarget): string[] {
  const inbox = route.path.includes('/notifications');
  const values: Record<string, () => string | undefined> = {
    limit: () => pick(g, ['1', '5', '20', '200']),
    pageSize: () => pick(g, ['1', '10', '200']),
    status: () => (inbox ? pick(g, ['pending', 'seen,dismissed', 'delivered']) : pick(g, ['idle', 'running,idle'])),
    priority: () => pick(g, ['high', 'urgent,low']),
    source: () => pick(g, ['ci', 'github,ci']),
    q: () => pick(g, ['build', 'fail']),
    // The inbox's cursor is opaque (the workflow's own): only the archive's is an offset.
    cursor: () => (route.path.endsWith('/archive') ? pick(g, ['0', '1']) : undefined),
    hideSignals: () => pick(g, ['true', 'false']),
    lastEventId: () => pick(g, ['0', '1', '7']),
    before: () => 'message-that-is-not-there',
    agent: () => 'tester',
    resource: () => thread.resourceId,
    query: () => pick(g, ["ThreadlineStatus = 'idle'", "StartTime > '2020-01-01T00:00:00Z'"]),
    pageToken: () => undefined,
  };
  const query: string[] = [];
  for (const { name, schema } of route.query) {
    if (!chance(g, 0.4)) continue;
    const value = Object.hasOwn(values, name) ? values[name]() : String(exampleOf(schema));
    if (value !== undefined) query.push(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  }
  return query;
}

function validHeaders(g: Gen, route: RouteModel): Record<string, string> {
  const headers: Record<string, string> = {};
  if (route.headers.includes('Last-Event-ID') && chance(g, 0.3)) headers['Last-Event-ID'] = pick(g, ['0', '3', '']);
  if (route.headers.includes('Idempotency-Key') && chance(g, 0.3)) headers['Idempotency-Key'] = `idem-${uuid(g)}`;
  return headers;
}

const text = (g: Gen): string => g(() => fc.oneof(hostileString, fc.lorem({ maxCount: 8 })));
const validName = (g: Gen): string => pick(g, ['name', 'source', 'priority', 'x.y', '_a-b', 'sentFrom']);
const attributeValue = (g: Gen): unknown => pick(g, [text(g), 1, -0.5, true, null]);
const attributes = (g: Gen): Record<string, unknown> => ({ [validName(g)]: attributeValue(g) });
const metadata = (g: Gen): unknown =>
  pick(g, [{ trace: text(g) }, { nested: { deep: [1, 'two', null] } }, g(() => protoObject), {}]);
const imagePart = { type: 'file', data: 'iVBORw0KGgo=', mediaType: 'image/png' };
const contents = (g: Gen): unknown =>
  pick(g, [text(g), [{ type: 'text', text: text(g) }], [{ type: 'text', text: text(g) }, imagePart]]);
const ifIdle = (g: Gen): unknown => ({
  behavior: pick(g, ['persist', 'persist', 'discard', 'wake']),
  ...(chance(g, 0.2) ? { attributes: attributes(g) } : {}),
  ...(chance(g, 0.2)
    ? {
        streamOptions: pick(g, [
          { maxSteps: 1, modelSettings: { temperature: 0.5, maxRetries: 2 } },
          // Mastra's dialect: mapped (requestContext) or ignored (memory, savePerStep).
          { requestContext: { user: text(g) }, memory: { thread: 'x' }, savePerStep: true },
        ]),
      }
    : {}),
});
const ifActive = (g: Gen): unknown => ({ behavior: pick(g, ['deliver', 'persist', 'discard']) });
const notification = (g: Gen): Record<string, unknown> => ({
  source: pick(g, ['ci', 'github']),
  kind: pick(g, ['build', 'review']),
  summary: text(g) || 'summary',
  ...(chance(g, 0.5) ? { priority: pick(g, ['low', 'medium']) } : {}),
  ...(chance(g, 0.3) ? { payload: metadata(g) } : {}),
  ...(chance(g, 0.3) ? { dedupeKey: `d-${uuid(g)}` } : {}),
});
const sendOptions = (g: Gen): Record<string, unknown> => ({
  ifIdle: ifIdle(g),
  ...(chance(g, 0.3) ? { ifActive: ifActive(g) } : {}),
});

/** A valid body for the routes known here; for any other, the documented schema's minimal instance. */
function validBody(g: Gen, route: RouteModel, thread: ThreadTarget): Record<string, unknown> {
  const ids = { resourceId: thread.resourceId, threadId: thread.threadId };
  const path = route.path;
  if (path.endsWith('/send-message') || path.endsWith('/queue-message')) {
    const message = pick(g, [
      text(g),
      [{ type: 'text', text: text(g) }],
      {
        contents: contents(g),
        ...(chance(g, 0.4) ? { attributes: attributes(g) } : {}),
        ...(chance(g, 0.3) ? { metadata: metadata(g) } : {}),
        ...(chance(g, 0.3) ? { id: `m-${uuid(g)}` } : {}),
      },
    ]);
    return { ...ids, message, ...sendOptions(g) };
  }
  if (path.endsWith('/state-signals')) {
    const signal = {
      id: pick(g, ['browser', 'lane-1']),
      cacheKey: `k-${uuid(g)}`,
      contents: contents(g),
      ...(chance(g, 0.3) ? { mode: pick(g, ['snapshot', 'delta']) } : {}),
      ...(chance(g, 0.3) ? { value: metadata(g) } : {}),
    };
    return { ...ids, signal, ...sendOptions(g) };
  }
  if (path.endsWith('/signals')) {
    const signal = {
      type: pick(g, ['user', 'reactive', 'notification', 'user-message', 'system-reminder']),
      contents: contents(g),
      ...(chance(g, 0.3) ? { tagName: pick(g, ['ci', 'build.status', '_x-y']) } : {}),
      ...(chance(g, 0.3) ? { attributes: attributes(g) } : {}),
      ...(chance(g, 0.2) ? { createdAt: '2026-01-01T00:00:00.000Z' } : {}),
    };
    return { ...ids, signal, ...sendOptions(g) };
  }
  if (path.endsWith('/send-tool-approval')) {
    return {
      ...ids,
      toolCallId: `call-${uuid(g)}`,
      approved: chance(g, 0.5),
      ...(chance(g, 0.3) ? { declineReason: 'no' } : {}),
      // Mastra's client sends these along; they mean nothing here.
      ...(chance(g, 0.3) ? { runId: `run-${uuid(g)}`, requestContext: { a: 1 }, format: 'mastra' } : {}),
    };
  }
  if (path.endsWith('/threads/abort'))
    return { ...ids, ...(chance(g, 0.5) ? { clearPendingSignals: chance(g, 0.5) } : {}) };
  if (path.endsWith('/threads/cancel-queued')) return { ...ids, signalIds: [`s-${uuid(g)}`] };
  if (path.endsWith('/threads/subscribe')) {
    return {
      ...ids,
      ...(chance(g, 0.3) ? { lastEventId: pick(g, ['0', '2']) } : {}),
      ...(chance(g, 0.3) ? { hideSignals: true } : {}),
    };
  }
  if (path.endsWith('/notifications')) {
    return chance(g, 0.5)
      ? { ...ids, notification: notification(g) }
      : { ...ids, notifications: [notification(g), notification(g)] };
  }
  if (path.endsWith('/fork')) {
    return { atStep: pick(g, [1, 2]), to: { resourceId: thread.resourceId, threadId: `fork-${uuid(g)}` } };
  }
  const example = exampleOf(route.body) as Record<string, unknown>;
  return route.thread === 'body' ? { ...example, ...ids } : example;
}

/** The API key a request carries; a missing, malformed or unknown one breaks every `/api/` request. */
function authorize(g: Gen, draft: Draft, route: RouteModel, kind: TargetKind, world: FuzzWorld): void {
  const choice = pick(g, [
    ...(['all', 'all', 'all', 'all', 'all', 'scoped', 'scoped', 'scoped', 'scoped', 'solo', 'solo'] as const),
    ...(['none', 'malformed', 'unknown'] as const),
  ]);
  const header: Record<typeof choice, string | undefined> = {
    all: `Bearer ${world.keys.all}`,
    scoped: `Bearer ${world.keys.scoped}`,
    solo: `Bearer ${world.keys.solo}`,
    none: undefined,
    malformed: pick(g, [
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer ',
      `Bearer ${world.keys.all} extra`,
      `Token ${world.keys.all}`,
      `Bearer\t${world.keys.all}`,
      latin1(g(() => hostileString)),
    ]),
    unknown: `Bearer k-${uuid(g)}`,
  };
  const value = header[choice as keyof typeof header];
  if (value !== undefined) draft.headers.Authorization = value;
  if (!route.guarded) return;
  if (choice === 'none' || choice === 'malformed' || choice === 'unknown') {
    draft.breaks.push(`no valid API key (${choice})`);
    return;
  }
  const bound =
    choice === 'all' || (choice === 'scoped' && kind !== 'foreign') || (choice === 'solo' && kind === 'sink');
  if (route.thread !== 'none' && !bound) draft.breaks.push(`the ${choice} key is not bound to a ${kind} thread`);
  if (
    route.thread === 'none' &&
    route.path === '/api/threads' &&
    !bound &&
    draft.query.some((q) => q.startsWith('resource='))
  ) {
    draft.breaks.push(`the ${choice} key is not bound to the resource filter`);
  }
}

/** A header value fetch can send: code units above 0xFF dropped. */
function latin1(value: string): string {
  return value.replace(/[^\u0020-\u007e\u00a0-\u00ff]/g, '');
}

const JSON_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON',
  'application/problem+json',
];
const OTHER_TYPES = [
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/jsonx',
  'text/json-ish',
];

function mutate(g: Gen, draft: Draft, route: RouteModel, world: FuzzWorld): void {
  const kinds = ['method', 'query', 'header'];
  if (route.pathParams.length > 0 || route.path.includes('*')) kinds.push('path', 'path');
  if (route.body && draft.method !== 'GET' && draft.method !== 'HEAD') {
    kinds.push('field', 'field', 'field', 'nested', 'nested', 'wholeBody', 'contentType');
  }
  const kind = pick(g, kinds);
  switch (kind) {
    case 'method':
      return mutateMethod(g, draft, route);
    case 'query':
      return mutateQuery(g, draft, route);
    case 'header':
      return mutateHeader(g, draft, route);
    case 'path':
      return mutatePath(g, draft, route);
    case 'field':
      return mutateField(g, draft, route, world);
    case 'nested':
      return mutateNested(g, draft);
    case 'wholeBody':
      return mutateWholeBody(g, draft);
    case 'contentType': {
      const type = pick(g, [...JSON_TYPES, ...OTHER_TYPES, '']);
      draft.headers['Content-Type'] = type;
      draft.mutations.push(`Content-Type: ${JSON.stringify(type)}`);
      const sentAs = `the body is sent as ${JSON.stringify(type) || 'no type'}`;
      draft.parts.set('header Content-Type', JSON_TYPES.includes(type) ? null : sentAs);
      return;
    }
  }
}

function mutateMethod(g: Gen, draft: Draft, route: RouteModel): void {
  const method = pick(g, ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', route.method === 'GET' ? 'POST' : 'GET']);
  if (method === draft.method) return;
  draft.method = method;
  draft.mutations.push(`method ${method}`);
  // The last method set is the one sent.
  draft.methodBreaks = method === 'HEAD' && route.method === 'GET' ? null : `${method} is not the route's method`;
}

function mutateQuery(g: Gen, draft: Draft, route: RouteModel): void {
  const how = pick(g, ['unknown', 'hostile', 'raw']);
  if (how === 'hostile' && route.query.length > 0) {
    const { name, schema } = pick(g, route.query);
    const value = g(() =>
      fc.oneof(wellFormedHostileString, fc.constantFrom('-1', '0', '1.5', '1e3', '99999999999999999999')),
    );
    draft.query = draft.query.filter((q) => !q.startsWith(`${encodeURIComponent(name)}=`));
    draft.query.push(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
    draft.mutations.push(`query ${name}=${JSON.stringify(value)}`);
    const why = breaksString(schema, value);
    draft.parts.set(`query ${name}`, why ? `query ${name} ${why}` : null);
    return;
  }
  if (how === 'raw') {
    const raw = pick(g, [
      '%',
      'a=%zz',
      '&&&=&',
      '__proto__[polluted]=yes&constructor[prototype][polluted]=yes',
      '__proto__=x&__proto__=y',
      'limit=1&limit=abc',
      'a='.concat('b'.repeat(4_000)),
      `${encodeURIComponent(g(() => wellFormedHostileString))}=1`,
    ]);
    draft.query.push(raw);
    draft.mutations.push(`raw query ${JSON.stringify(raw.slice(0, 80))}`);
    return;
  }
  const name = pick(g, [...PROTO_KEYS, 'unknown', 'threadId', 'resourceId']);
  draft.query.push(`${encodeURIComponent(name)}=${encodeURIComponent(g(() => wellFormedHostileString))}`);
  draft.mutations.push(`unknown query parameter ${name}`);
}

function mutateHeader(g: Gen, draft: Draft, route: RouteModel): void {
  const value = latin1(
    g(() => fc.oneof(hostileString, fc.constantFrom('-1', '1-0', '99999999999999999999999', '1e3', ' 1'))),
  );
  if (route.headers.includes('Last-Event-ID') && chance(g, 0.6)) {
    draft.headers['Last-Event-ID'] = value;
    draft.mutations.push(`Last-Event-ID ${JSON.stringify(value)}`);
    return;
  }
  const name = pick(g, ['Idempotency-Key', 'X-Request-Id', 'Accept', 'Origin', 'X-Forwarded-For', 'Cookie']);
  draft.headers[name] = pick(g, [value, 'x'.repeat(12_000)]);
  draft.mutations.push(`header ${name}`);
}

const BAD_SEGMENTS = ['%', '%zz', '%ED%A0%80', '%00', '%2F', '%252F', '%C0%AF', 'a%0Ab', '%EF%BB%BF'];

function mutatePath(g: Gen, draft: Draft, route: RouteModel): void {
  if (route.path.includes('*') && (route.pathParams.length === 0 || chance(g, 0.5))) {
    draft.wildcard = pick(g, [
      ...BAD_SEGMENTS,
      'x/'.repeat(50),
      encodeURIComponent(g(() => wellFormedHostileString)) || 'x',
    ]);
    draft.mutations.push(`path * ${JSON.stringify(draft.wildcard.slice(0, 60))}`);
    return;
  }
  const name = pick(g, route.pathParams);
  const how = pick(g, ['hostile', 'bad-encoding', 'overlong']);
  let segment =
    how === 'overlong'
      ? 'a'.repeat(pick(g, [257, 1_200]))
      : how === 'bad-encoding'
        ? pick(g, BAD_SEGMENTS)
        : encodeURIComponent(g(() => wellFormedHostileString));
  // URL parsing would resolve these segments (or drop the empty one), changing the route.
  if (segment === '' || /^(\.|%2e){1,2}$/i.test(segment)) segment = 'x';
  draft.params[name] = segment;
  draft.mutations.push(`path ${name}=${JSON.stringify(segment.slice(0, 60))}`);
  if (name === 'resourceId' || name === 'threadId') draft.retargeted = true;
  const decoded = tryDecode(segment);
  let why: string | null = null;
  if ((name === 'resourceId' || name === 'threadId') && [...decoded].length > 256)
    why = `${name} is over 256 characters`;
  if (name === 'agentId' && decoded !== 'tester') why = 'no such agent';
  if (name === 'step' && !/^[1-9]\d{0,15}$/.test(decoded)) why = 'not a step number';
  draft.parts.set(`path ${name}`, why);
}

function tryDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A top-level field of the body: type-confused, removed, hostile, nested deep, huge, or a pollution attempt. */
function mutateField(g: Gen, draft: Draft, route: RouteModel, world: FuzzWorld): void {
  if (draft.rawBody !== undefined || !draft.body || !route.body) return;
  const properties = route.body.properties ?? {};
  const names = Object.keys(properties);
  const how = pick(g, ['confuse', 'remove', 'add', 'hostile', 'deep', 'huge', 'proto']);
  if (how === 'add' || names.length === 0) {
    const key = pick(g, [...PROTO_KEYS, 'unknownField', g(() => hostileString)]);
    draft.body = withOwnKey(
      draft.body,
      key,
      g(() => fc.oneof(typeConfused, protoObject)),
    );
    draft.mutations.push(`added field ${JSON.stringify(key)}`);
    const unknown = route.body.additionalProperties === false && !(key in properties);
    draft.parts.set(`field ${key}`, unknown ? `unknown field ${key}` : null);
    return;
  }
  const name = pick(g, names);
  const schema = properties[name];
  const types = allowedTypes(schema);
  if (name === 'resourceId' || name === 'threadId') draft.retargeted = true;
  const set = (value: unknown) => {
    draft.body = withOwnKey(draft.body!, name, value);
  };
  /** Why the field as now set breaks the request (null: it may not), replacing what an earlier mutation said. */
  const breaks = (why: string | null) => draft.parts.set(`field ${name}`, why);
  switch (how) {
    case 'confuse': {
      const value = g(() => typeConfused);
      set(value);
      draft.mutations.push(`${name} = ${jsonType(value)}`);
      breaks(
        types && !types.has(jsonType(value)) ? `${name} is ${jsonType(value)}, not ${[...types].join('|')}` : null,
      );
      return;
    }
    case 'remove': {
      const { [name]: _removed, ...rest } = draft.body;
      draft.body = rest;
      draft.mutations.push(`removed ${name}`);
      const required = route.body.required?.includes(name);
      // A body without resourceId means the key's one resource (Mastra's client leaves it out).
      const defaulted = name === 'resourceId' && draft.headers.Authorization === `Bearer ${world.keys.solo}`;
      breaks(required && !defaulted ? `required ${name} is missing` : null);
      // The thread is then the solo key's resource, whatever the request was aimed at.
      if (defaulted) draft.breaks = draft.breaks.filter((why) => !why.startsWith('the solo key is not bound'));
      return;
    }
    case 'hostile': {
      const value = g(() => hostileString);
      set(value);
      draft.mutations.push(`${name} = ${JSON.stringify(value)}`);
      const why = breaksString(schema, value);
      if (why) breaks(`${name} ${why}`);
      else if ((name === 'resourceId' || name === 'threadId') && (value === '' || /\p{Cs}/u.test(value))) {
        breaks(`${name} is empty or not well-formed`);
      } else breaks(null);
      return;
    }
    case 'deep': {
      const value = g(() => deepValue);
      set(value);
      draft.mutations.push(`${name} nested deep`);
      const shape = value.text.startsWith('[') ? 'array' : 'object';
      breaks(types && !types.has(shape) ? `${name} is not a ${[...types].join('|')}` : null);
      return;
    }
    case 'huge': {
      const value = g(() => hugeString);
      set(value);
      draft.mutations.push(`${name} = ${value.length} chars`);
      const why = breaksString(schema, value);
      breaks(why ? `${name} ${why}` : null);
      return;
    }
    case 'proto': {
      const value = g(() => protoObject);
      set(value);
      draft.mutations.push(`${name} = ${JSON.stringify(value)}`);
      breaks(
        types && !types.has(jsonType(value)) ? `${name} is ${jsonType(value)}, not ${[...types].join('|')}` : null,
      );
      return;
    }
  }
}

/** A value anywhere inside the body replaced: what it does to validity is not known here. */
function mutateNested(g: Gen, draft: Draft): void {
  if (draft.rawBody !== undefined || !draft.body) return;
  const paths = containerPaths(draft.body, []);
  const path = pick(g, paths);
  const value = g(() => fc.oneof(typeConfused, hostileString, protoObject, deepValue, unicodeEdge));
  const key = pick(g, ['__proto__', 'contents', 'type', 'text', 'attributes', '0', 'x', 'constructor']);
  draft.body = setAt(draft.body, [...path, key], value) as Record<string, unknown>;
  draft.mutations.push(`nested ${[...path, key].join('.')} = ${value instanceof Raw ? 'deep' : jsonType(value)}`);
  // At the top, it replaces a field: what an earlier mutation of that field said no longer holds.
  if (path.length === 0) draft.parts.set(`field ${key}`, null);
  if (path.length === 0 && (key === 'resourceId' || key === 'threadId')) draft.retargeted = true;
}

function containerPaths(value: unknown, at: string[]): string[][] {
  if (value === null || typeof value !== 'object' || value instanceof Raw || at.length > 4) return [];
  const paths = [at];
  for (const [key, child] of Object.entries(value)) paths.push(...containerPaths(child, [...at, key]));
  return paths;
}

function setAt(value: unknown, path: string[], leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const [key, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...(value as unknown[])];
    const i = /^\d+$/.test(key) ? Number(key) : copy.length;
    copy[i] = setAt(copy[i], rest, leaf);
    return copy;
  }
  const object = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  return withOwnKey(object, key, setAt(object[key], rest, leaf));
}

function mutateWholeBody(g: Gen, draft: Draft): void {
  const raw = pick(g, [
    '',
    '{',
    '{"resourceId":',
    "{'a':1}",
    'nul',
    '\u0000',
    '{"a":1}garbage',
    'null',
    '[]',
    '"string"',
    '42',
    'true',
    '[{"resourceId":"r","threadId":"t"}]',
    'deep',
  ]);
  draft.rawBody = raw === 'deep' ? g(() => deepValue).text : raw;
  draft.mutations.push(`body ${raw === 'deep' ? 'nested deep' : JSON.stringify(raw)}`);
  draft.breaks.push('the body is not a JSON object with the required fields');
}

function retarget(draft: Draft, from: ThreadTarget, to: ThreadTarget): void {
  for (const field of ['resourceId', 'threadId'] as const) {
    if (draft.params[field] === encodeURIComponent(from[field])) draft.params[field] = encodeURIComponent(to[field]);
    if (draft.body?.[field] === from[field]) draft.body = { ...draft.body, [field]: to[field] };
  }
  const to_ = draft.body?.to as ThreadTarget | undefined;
  if (to_ && to_.resourceId === from.resourceId)
    draft.body = { ...draft.body, to: { ...to_, resourceId: to.resourceId } };
}

function bodyText(draft: Draft): string | undefined {
  if (draft.method === 'GET' || draft.method === 'HEAD') return undefined;
  if (draft.rawBody === undefined && draft.body === undefined) return undefined;
  // The body goes as bytes, so fetch adds no Content-Type of its own: '' means none at all.
  draft.headers['Content-Type'] ??= 'application/json';
  if (draft.headers['Content-Type'] === '') delete draft.headers['Content-Type'];
  return draft.rawBody ?? toJsonText(draft.body);
}

function urlOf(route: RouteModel, draft: Draft): string {
  // The wildcard first: an encoded id may hold a `*` of its own.
  const path = route.path
    .replace('*', draft.wildcard)
    .replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => draft.params[name]);
  return draft.query.length > 0 ? `${path}?${draft.query.join('&')}` : path;
}

export type { JsonSchema };
