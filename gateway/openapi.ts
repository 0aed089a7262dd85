/**
 * The OpenAPI 3.1 document of the gateway, built from the route table (`./routes`) and its zod schemas with
 * `z.toJSONSchema`: a route added to the table is documented with the schemas that validate it, never a copy.
 */
import { createRequire } from 'node:module';
import { z } from 'zod';
import { attributesSchema, threadTargetSchema } from '../protocol/schemas';
import { API_PREFIX, pathParams, type Route } from './route';

type JsonSchema = Record<string, unknown>;

/** The JSON body of every error the gateway answers. */
export const errorBodySchema = z.object({
  error: z.object({
    type: z.string().meta({ description: 'The error class, e.g. ValidationError, ForbiddenError, RateLimitedError.' }),
    message: z.string().meta({ description: 'What was wrong (naming the field or the limit) and what to do.' }),
  }),
});

const documented = new WeakMap<object, z.ZodType>();

/**
 * Documents `field` with `schema`'s JSON Schema while it validates as itself. For fields checked later with sharper
 * errors than a parse here would give (a message is checked by the client), and for pipes whose input is `unknown`.
 */
export function documentedAs<T extends z.ZodType>(field: T, schema: z.ZodType): T {
  documented.set(field, schema);
  return field;
}

// Attributes are parsed as `unknown` first (to reject `__proto__` before a record drops it): show the record.
documentedAs(attributesSchema, attributesSchema.out);

const jsonSchemaOptions: z.core.ToJSONSchemaParams = {
  target: 'draft-2020-12',
  io: 'input',
  reused: 'inline',
  unrepresentable: 'any',
  override: (ctx) => {
    const schema = documented.get(ctx.zodSchema);
    if (schema) Object.assign(ctx.jsonSchema, jsonSchema(schema));
  },
};

/** The JSON Schema (draft 2020-12, as OpenAPI 3.1 uses) of what a caller sends for `schema`. */
export function jsonSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, jsonSchemaOptions) as JsonSchema;
  return rest;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad input: the message names the field and how to fix it.',
  401: 'Missing or unknown API key (send "Authorization: Bearer <key>").',
  403: "The API key may not act on the thread's resourceId.",
  404: 'Unknown agent, thread or route.',
  409: "The thread's state does not allow the request (e.g. a full queue; a blocked input).",
  413: 'The body or the input is over the size limit.',
  415: 'The body is not sent as JSON (Content-Type: application/json).',
  429: 'Rate limited (see Retry-After), or the thread has its limit of subscribers on this gateway.',
  503: 'Not ready: a dependency (Temporal, Redis) does not answer; the error names it.',
};

/** A 503 under /api: a transient Temporal failure (`client/unavailable.ts`). */
const UNAVAILABLE_TEXT = 'Temporal failed the request for a passing reason: send it again after Retry-After.';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

/** The document for `routes`: every route with its parameters, body schema, responses and summary. */
export function openApiDocument(routes: readonly Route[]): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][route.method] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Threadline gateway',
      version,
      description:
        'Durable conversation threads for AI agents. Routes under /api need "Authorization: Bearer <key>" when the ' +
        'gateway has API keys (THREADLINE_API_KEYS); a key acts only on the resourceIds it is bound to.',
    },
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'A key of THREADLINE_API_KEYS.' } },
      schemas: { Error: jsonSchema(errorBodySchema) },
    },
    security: [{ apiKey: [] }],
  };
}

function operation(route: Route): Record<string, unknown> {
  const guarded = route.path.startsWith(API_PREFIX);
  return {
    operationId: operationId(route),
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(guarded ? {} : { security: [] }),
    parameters: [...pathParameters(route), ...queryParameters(route), ...headerParameters(route)],
    ...(route.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body) } } } }
      : {}),
    responses: responses(route, guarded),
  };
}

function operationId(route: Route): string {
  const words = route.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return route.method + words.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

function pathParameters(route: Route): unknown[] {
  const shape = threadTargetSchema.shape as Record<string, z.ZodType>;
  return pathParams(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: shape[name] ? jsonSchema(shape[name]) : { type: 'string' },
  }));
}

function queryParameters(route: Route): unknown[] {
  if (!route.query) return [];
  const object = jsonSchema(route.query) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'query',
    required: object.required?.includes(name) ?? false,
    schema,
  }));
}

function headerParameters(route: Route): unknown[] {
  const headers: Record<string, string> = { ...route.headers };
  if (route.responds === 'sse') headers['Last-Event-ID'] ??= 'Resume after this event id: every later event once.';
  return Object.entries(headers).map(([name, description]) => ({
    name,
    in: 'header',
    required: false,
    description,
    schema: { type: 'string' },
  }));
}

function responses(route: Route, guarded: boolean): Record<string, unknown> {
  const params = pathParams(route.path);
  const statuses = new Set<number>(route.statuses ?? []);
  if (route.body || route.query || params.length > 0) statuses.add(400);
  if (guarded) statuses.add(401).add(429).add(503);
  if (route.thread !== 'none') statuses.add(403);
  if (params.includes('agentId')) statuses.add(404);
  if (route.body) statuses.add(413).add(415);
  const ok =
    route.responds === 'sse'
      ? {
          description: 'An event stream: one JSON thread event per message, its id on the `id:` line.',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        }
      : route.responds === 'text'
        ? { description: 'OK', content: { 'text/plain': { schema: { type: 'string' } } } }
        : { description: 'OK', content: { 'application/json': { schema: {} } } };
  const errors = [...statuses]
    .sort((a, b) => a - b)
    .map((status) => [
      String(status),
      {
        description: (status === 503 && guarded ? UNAVAILABLE_TEXT : STATUS_TEXT[status]) ?? 'Error.',
        ...(status === 429 || (status === 503 && guarded)
          ? { headers: { 'Retry-After': { schema: { type: 'integer' } } } }
          : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]);
  return { '200': ok, ...Object.fromEntries(errors) };
}
