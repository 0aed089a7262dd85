/**
 * The HTTP fuzzer's view of the gateway: every route of its OpenAPI document (so a route added to the table is
 * fuzzed with nothing to change here), plus the routes it serves outside the document (the web console's pages),
 * each with the statuses it may answer.
 */

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  default?: unknown;
};

interface Operation {
  parameters?: { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema?: JsonSchema }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
}

export interface RouteModel {
  /** `POST /api/agents/:agentId/send-message`: how reports name it. */
  key: string;
  method: 'GET' | 'POST';
  /** Hono's form, `:name` placeholders. */
  path: string;
  /** In the OpenAPI document (false: served outside it, the console's pages and assets). */
  documented: boolean;
  /** Every status the route may answer: 200 and the document's error statuses. */
  statuses: ReadonlySet<number>;
  /** The media type of a 200. */
  okType: 'application/json' | 'text/event-stream' | 'text/plain' | 'text/html';
  pathParams: string[];
  query: { name: string; schema: JsonSchema }[];
  headers: string[];
  body?: JsonSchema;
  /** Under `/api/`: a caller must be identified. */
  guarded: boolean;
  /** Where the route names its thread. */
  thread: 'path' | 'body' | 'none';
}

const placeholders = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);

/**
 * Route models from the document and from what the app serves (`app.routes`, middleware left out): served routes
 * outside the document answer a page (200) or 404.
 */
export function routeModels(doc: OpenApiDocument, served: { method: string; path: string }[]): RouteModel[] {
  const models: RouteModel[] = [];
  for (const [openApiPath, operations] of Object.entries(doc.paths)) {
    const path = openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
    for (const [method, op] of Object.entries(operations)) {
      const params = op.parameters ?? [];
      const body = op.requestBody?.content['application/json']?.schema;
      const ok = Object.keys(op.responses['200']?.content ?? {})[0] ?? 'application/json';
      const pathParams = placeholders(path);
      models.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase() as 'GET' | 'POST',
        path,
        documented: true,
        statuses: new Set(Object.keys(op.responses).map(Number)),
        okType: ok as RouteModel['okType'],
        pathParams,
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        headers: params.filter((p) => p.in === 'header').map((p) => p.name),
        body,
        guarded: path.startsWith('/api/'),
        thread: pathParams.includes('resourceId') ? 'path' : body?.properties?.resourceId ? 'body' : 'none',
      });
    }
  }
  const known = new Set(models.map((m) => m.key));
  for (const route of served) {
    const key = `${route.method} ${route.path}`;
    if (route.method === 'ALL' || known.has(key)) continue;
    known.add(key);
    models.push({
      key,
      method: route.method as 'GET' | 'POST',
      path: route.path,
      documented: false,
      statuses: new Set([200, 404]),
      okType: route.path === '/' ? 'application/json' : 'text/html',
      pathParams: placeholders(route.path),
      query: [],
      headers: [],
      guarded: route.path.startsWith('/api/'),
      thread: 'none',
    });
  }
  return models;
}

/** The JSON types a schema admits; undefined when it admits anything (or says too little to tell). */
export function allowedTypes(schema: JsonSchema | undefined): Set<string> | undefined {
  if (!schema) return undefined;
  if (schema.enum) return new Set(schema.enum.map(typeOf));
  if (schema.const !== undefined) return new Set([typeOf(schema.const)]);
  const union = schema.anyOf ?? schema.oneOf;
  if (union) {
    const all = new Set<string>();
    for (const member of union) {
      const types = allowedTypes(member);
      if (!types) return undefined;
      for (const t of types) all.add(t);
    }
    return all;
  }
  if (schema.type === undefined) return undefined;
  const types = new Set(Array.isArray(schema.type) ? schema.type : [schema.type]);
  // JSON Schema's `number` includes integers.
  if (types.has('number')) types.add('integer');
  return types;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * Why `value` certainly breaks a string `schema` (enum, length, pattern), or null when it may pass. Lengths count
 * code points, as JSON Schema does; the gateway may count otherwise, so only a clear miss counts.
 */
export function breaksString(schema: JsonSchema | undefined, value: string): string | null {
  if (!schema) return null;
  const types = allowedTypes(schema);
  if (types && !types.has('string')) return `a string where ${[...types].join('|')} is expected`;
  if (schema.enum && !schema.enum.includes(value)) return 'not one of the enum values';
  const chars = [...value].length;
  if (schema.minLength !== undefined && value.length < schema.minLength) return `shorter than ${schema.minLength}`;
  if (schema.maxLength !== undefined && chars > schema.maxLength && value.length > schema.maxLength) {
    return `longer than ${schema.maxLength}`;
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
    return `does not match ${schema.pattern}`;
  }
  return null;
}

/** A minimal instance of `schema`: required properties only, the first enum value, the shortest allowed string. */
export function exampleOf(schema: JsonSchema | undefined): unknown {
  if (!schema) return 'x';
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return exampleOf(union[0]);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = exampleOf(schema.properties?.[name]);
      return out;
    }
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => exampleOf(schema.items));
    case 'string':
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return Math.max(1, schema.minimum ?? 1);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return 'x';
  }
}
