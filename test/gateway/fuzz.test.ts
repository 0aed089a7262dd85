/**
 * issue #14 part 3: the gateway under generated requests, over real HTTP on the real dev server. Every route of the
 * OpenAPI document (and the console's pages, served outside it) gets requests built by `test/support/fuzz/`: valid
 * ones and ones with type-confused, missing, hostile, deep or huge fields, bodies that are not JSON, wrong content
 * types and methods, bad ids, query strings and `Last-Event-ID`s, with and without API keys. Properties:
 *
 * - every answer is a status the document lists for the route (404/405 for a method it does not serve), never a
 *   5xx; errors have the documented body `{ error: { type, message } }`; a 2xx only for a request that may be valid;
 * - nothing pollutes `Object.prototype` (the gateway runs in this process);
 * - between batches the gateway still serves: `/health`, and a real send answered by the model;
 * - the canary threads (aimed at only by reads and refused requests) have the same state and history length after
 *   as before, and refused requests for new threads created none;
 * - every event stream the fuzzer opened and left is closed on the gateway afterwards.
 *
 * `THREADLINE_FUZZ_RUNS` sets the number of requests (CI: the default below; `npm run fuzz`: 10,000), and
 * `THREADLINE_FUZZ_SEED` the seed. A failure prints the seed, fast-check's path and the shrunk request; run again
 * with that seed to reproduce. Figures of the full run: docs/fuzzing.md.
 */
import { loadavg } from 'node:os';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import { createGateway } from '../../gateway/app';
import { errorBodySchema } from '../../gateway/openapi';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { threadKey } from '../../protocol/ids';
import { defaultLimits, type ThreadTarget } from '../../protocol/schemas';
import { startHarness, testAgent, within, type Harness } from '../support/harness';
import { routeModels, type OpenApiDocument, type RouteModel } from '../support/fuzz/routes';
import { requestArbitrary, type FuzzRequest, type FuzzWorld } from '../support/fuzz/requests';

const RUNS = Number(process.env.THREADLINE_FUZZ_RUNS ?? 1_000);
// Fixed by default, so CI is reproducible; set THREADLINE_FUZZ_SEED to explore others.
const SEED = Number(process.env.THREADLINE_FUZZ_SEED ?? 20261201);
/** Requests between two checks that the gateway still serves. */
const BATCH = 500;
/** An answer must come within this: a bound on a hang, not a speed requirement. */
const ANSWER_TIMEOUT_MS = 60_000;
/** Node's `--max-http-header-size` default. */
const NODE_MAX_HEADER_BYTES = 16 * 1024;

const tag = `fuzz-${SEED}`;
const keys = { all: `${tag}-key-all`, scoped: `${tag}-key-scoped`, solo: `${tag}-key-solo` };
const resources = {
  canary: `${tag}-canary`,
  sink: `${tag}-sink`,
  fresh: `${tag}-fresh`,
  foreign: `${tag}-foreign`,
  probe: `${tag}-probe`,
};

let h: Harness;
let g: ServedGateway;
let routes: RouteModel[];
let world: FuzzWorld;

/** What the fuzzer saw, per route: requests and statuses. */
const seen = new Map<string, { requests: number; statuses: Map<number, number> }>();
const refusedFresh = new Set<string>();
let failureShown = false;
/** The last requests sent, for a failure that may be their consequence: `METHOD url -> status (body bytes)`. */
const recent: string[] = [];
let total = 0;

beforeAll(async () => {
  h = await startHarness();
  g = await serveGateway({
    client: h.client,
    agents: summarizeAgents([testAgent]),
    port: 0,
    apiKeys: {
      [keys.all]: ['*'],
      [keys.scoped]: [resources.canary, resources.sink, resources.fresh],
      [keys.solo]: [resources.sink],
    },
    // Off: the fuzzer sends far more than a client may; limits.test.ts covers the 429s.
    rateLimit: { perSecond: 0, burst: 0 },
  });
  const doc = (await (await fetch(`${g.url}/api/openapi.json`, auth(keys.all))).json()) as OpenApiDocument;
  // What the app serves, from Hono itself: routes outside the document (the console's pages) are fuzzed too.
  const app = createGateway({ client: h.client, agents: summarizeAgents([testAgent]) });
  routes = routeModels(doc, app.routes);
  world = {
    agentId: testAgent.id,
    canaries: [0, 1, 2].map((i) => ({ resourceId: resources.canary, threadId: `canary-${i}` })),
    sinks: [0, 1, 2, 3].map((i) => ({ resourceId: resources.sink, threadId: `sink-${i}` })),
    freshResource: resources.fresh,
    foreignResource: resources.foreign,
    keys,
    maxBodyBytes: defaultLimits.maxInputBytes * 2 + 64 * 1024,
  };
  // Canaries and sinks have a conversation (so steps, prompts and forks have something to read).
  await Promise.all([...world.canaries, ...world.sinks].map((thread) => converse(thread, 'Hello, canary.')));
}, 300_000);

afterAll(async () => {
  await g?.close();
  await h?.close();
});

const auth = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

/** Sends a message through the gateway and waits (bounded) until the thread has answered it. */
async function converse(thread: ThreadTarget, message: string): Promise<void> {
  const before = (await h.client.getThread(thread))?.runsCompleted ?? 0;
  const res = await fetch(`${g.url}/api/agents/${testAgent.id}/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.all}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...thread, message }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  await within(
    (async () => {
      while (((await h.client.getThread(thread))?.runsCompleted ?? 0) <= before) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })(),
    `an answer on ${thread.resourceId}/${thread.threadId}`,
    120_000,
  );
}

/** A thread's state as a caller can see it, and its history length. */
async function stateOf(thread: ThreadTarget): Promise<{ view: unknown; messages: unknown; historyLength: number }> {
  const handle = h.temporal.workflow.getHandle(threadKey(thread.resourceId, thread.threadId));
  return {
    view: await h.client.getThread(thread),
    messages: await h.client.getMessages(thread, { limit: 1_000 }),
    historyLength: (await handle.describe()).historyLength,
  };
}

async function sseSubscribers(): Promise<number> {
  const metrics = await (await fetch(`${g.url}/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith('threadline_sse_subscribers '));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** Every stream the fuzzer opened and left is closed on the gateway's side too (its subscriber released). */
async function streamsReleased(): Promise<void> {
  await within(
    (async () => {
      while ((await sseSubscribers()) !== 0) await new Promise((resolve) => setTimeout(resolve, 200));
    })(),
    `every SSE subscriber released (${await sseSubscribers()} open)`,
    30_000,
  );
}

function record(route: RouteModel, status: number): void {
  const entry = seen.get(route.key) ?? { requests: 0, statuses: new Map<number, number>() };
  entry.requests += 1;
  entry.statuses.set(status, (entry.statuses.get(status) ?? 0) + 1);
  seen.set(route.key, entry);
  total += 1;
}

/** The statuses a request may get: its route's documented ones, or those of a path served with another method. */
function allowedStatuses(req: FuzzRequest): ReadonlySet<number> {
  // Node's HTTP server answers 431 (no body) for headers over its 16 KiB, before the gateway sees the request.
  const headerBytes = Object.entries(req.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
  if (headerBytes > NODE_MAX_HEADER_BYTES - 1_024)
    return new Set([431, ...(headerBytes < NODE_MAX_HEADER_BYTES ? allowed(req) : [])]);
  return allowed(req);
}

function allowed(req: FuzzRequest): ReadonlySet<number> {
  if (req.onRoute) return req.route.statuses;
  return new Set(req.route.guarded ? [401, 404, 405, 413, 429] : [404, 405]);
}

/** Sends one request and returns what is wrong with the answer (empty: nothing). */
async function check(req: FuzzRequest): Promise<string[]> {
  const problems: string[] = [];
  let res: Response;
  try {
    res = await fetch(`${g.url}${req.url}`, {
      method: req.method,
      headers: req.headers,
      body: req.body === undefined ? undefined : Buffer.from(req.body, 'utf8'),
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
  } catch (err) {
    recent.push(`${req.method} ${req.url.slice(0, 100)} -> no answer`);
    return [`no answer: ${(err as Error).message} (${String((err as Error).cause ?? '')})`];
  }
  const type = res.headers.get('content-type') ?? '';
  // An event stream is left at once: the gateway must close its side (checked after the batch).
  const text = type.startsWith('text/event-stream') ? (await res.body?.cancel(), '') : await res.text();
  record(req.route, res.status);
  recent.push(
    `${req.method} ${req.url.slice(0, 100)} -> ${res.status} (${req.body?.length ?? 0} chars, ${req.mutations.join(', ')})`,
  );
  if (recent.length > 15) recent.shift();
  const { status } = res;
  if (status >= 500) problems.push(`answered ${status}: ${text.slice(0, 500)}`);
  else if (!allowedStatuses(req).has(status)) {
    problems.push(`answered ${status}, not a status documented for ${req.route.key}: ${text.slice(0, 300)}`);
  }
  if (status < 300 && req.breaks) problems.push(`answered ${status} to a request that breaks: ${req.breaks}`);
  if (status >= 400 && status !== 431 && req.method !== 'HEAD') {
    if (!type.startsWith('application/json')) problems.push(`an error as ${type || 'no content type'}`);
    else {
      const parsed = errorBodySchema.safeParse(safeJson(text));
      if (!parsed.success)
        problems.push(`an error body not shaped { error: { type, message } }: ${text.slice(0, 300)}`);
      else if (INTERNAL_TEXT.test(parsed.data.error.message)) {
        problems.push(`an error message with an internal error's text: ${parsed.data.error.message.slice(0, 300)}`);
      }
    }
  }
  if (status === 200 && req.onRoute && req.route.documented && !type.startsWith(req.route.okType)) {
    problems.push(`a 200 as ${type}, documented as ${req.route.okType}`);
  }
  const polluted = Object.keys(Object.prototype).concat(Object.keys(Array.prototype));
  if (polluted.length > 0 || ({} as Record<string, unknown>).polluted !== undefined) {
    problems.push(`Object.prototype polluted: ${polluted.join(', ')}`);
  }
  if (status >= 400 && req.target?.kind === 'fresh' && req.mutations.length > 0) {
    refusedFresh.add(JSON.stringify(req.target.thread));
  }
  return problems;
}

/** What a message shows when an internal error (or an inherited property) leaked into it instead of the problem. */
const INTERNAL_TEXT =
  /\[native code\]|\[object Object\]|Cannot read propert|is not a function|is not iterable|Maximum call stack|undefined is not/;

/** The per-route table as docs/fuzzing.md records it: route, requests, and how many got each status. */
function markdownTable(rows: { route: string; requests: number; statuses: Record<string, number> }[]): string {
  const lines = rows.map(({ route, requests, statuses }) => {
    const counts = Object.entries(statuses).map(([status, n]) => `${status}: ${n}`);
    return `| \`${route}\` | ${requests} | ${counts.join(', ')} |`;
  });
  const all = rows.reduce((n, r) => n + r.requests, 0);
  return ['| route | requests | statuses |', '| --- | --- | --- |', ...lines, `| all | ${all} | |`].join('\n');
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

describe('fuzzing every route of the gateway', () => {
  it(
    `${RUNS} generated requests: documented statuses only, no 5xx, canaries unchanged, the gateway keeps serving`,
    async () => {
      const load = loadavg();
      const rss = process.memoryUsage().rss;
      console.log(
        `[fuzz] seed ${SEED}, ${RUNS} requests over ${routes.length} routes; load ${load.map((l) => l.toFixed(2)).join(' ')}`,
      );
      const canariesBefore = await Promise.all(world.canaries.map(stateOf));
      const arbitrary = requestArbitrary(routes, world);
      const started = performance.now();
      for (let batch = 0; batch * BATCH < RUNS; batch++) {
        const seed = SEED + batch;
        await fc.assert(
          fc.asyncProperty(arbitrary, async (req) => {
            const problems = await check(req);
            if (problems.length === 0) return;
            // Shrinking may take long (each try is a real request): show the first failure at once.
            if (!failureShown) {
              console.error(
                `[fuzz] failed (seed ${seed}), before shrinking: ${fc.stringify(req)}\n${problems.join('\n')}\n` +
                  `the requests before:\n${recent.slice(0, -1).join('\n')}`,
              );
            }
            failureShown = true;
            throw new Error(problems.join('\n'));
          }),
          { seed, numRuns: Math.min(BATCH, RUNS - batch * BATCH), endOnFailure: false },
        );
        // Still serving: health, and a real send that the model answers; and no stream left open.
        expect((await fetch(`${g.url}/health`)).status).toBe(200);
        await converse({ resourceId: resources.probe, threadId: 'probe' }, `batch ${batch} done`);
        await streamsReleased();
      }
      const seconds = (performance.now() - started) / 1000;

      // The canaries: same state, same history length.
      const canariesAfter = await Promise.all(world.canaries.map(stateOf));
      expect(canariesAfter).toEqual(canariesBefore);

      // Refused requests created no thread.
      const fresh = [...refusedFresh].slice(0, 300).map((t) => JSON.parse(t) as ThreadTarget);
      const created = (await Promise.all(fresh.map(async (t) => ((await h.client.getThread(t)) ? t : null)))).filter(
        Boolean,
      );
      expect(created).toEqual([]);

      const table = [...seen.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([route, { requests, statuses }]) => ({
          route,
          requests,
          statuses: Object.fromEntries([...statuses.entries()].sort(([a], [b]) => a - b)),
        }));
      console.log(
        `[fuzz] ${total} requests in ${seconds.toFixed(0)} s (seed ${SEED}); refused fresh threads checked: ${fresh.length}; ` +
          `load after ${loadavg()
            .map((l) => l.toFixed(2))
            .join(' ')}; rss ${Math.round(rss / 2 ** 20)} -> ` +
          `${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB\n${markdownTable(table)}`,
      );
      // Every route was fuzzed.
      expect(table.map((r) => r.route).sort()).toEqual(routes.map((r) => r.key).sort());
    },
    300_000 + RUNS * 200,
  );
});
