/**
 * Gateway memory under fuzzed requests (issue #14, "Found from outside" 5: a gateway's RSS rose from 372 to 530 MB
 * over 1,167 fuzzed requests and settled at 464 MB; a leak?). The gateway runs as a process of its own
 * (bench/gateway-memory-process.ts, on Redis, API keys on, the rate limit off), the worker in this process or, as
 * `npm start` runs it, in the gateway's (`workerInGateway`), and the requests are the fuzz test's (test/support/fuzz/: every route, valid and hostile), sent one at a time. After every
 * batch the gateway reports its memory twice: as it is, and after two full GCs (what is live, garbage aside). A leak
 * is live heap (or `external`) that keeps growing batch after batch; RSS that climbs and then holds is the
 * allocator's high-water mark.
 *
 *   npm run bench -- --only=gateway-fuzz-memory      (prints the JSON; docs/limits.md records a run)
 *
 * THREADLINE_FUZZ_SEED sets the seed (default: the fuzz test's), THREADLINE_FUZZ_RUNS the requests (default 10,000).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { Client, Connection } from '@temporalio/client';
import { summarizeAgents } from '../agents/summary';
import { MemoryBus } from '../bus/memory';
import { connect, type ThreadlineClient } from '../client/connect';
import { createGateway } from '../gateway/app';
import { defaultLimits } from '../protocol/schemas';
import { requestArbitrary, type FuzzRequest, type FuzzWorld } from '../test/support/fuzz/requests';
import { routeModels, type OpenApiDocument } from '../test/support/fuzz/routes';
import { benchAgent, type BenchEnv } from './env';
import type { GatewayFigures } from './gateway-memory-process';
import { figures, startGatewayProcess } from './gateway-process';

export interface GatewayFuzzMemorySizes {
  requests: number;
  batch: number;
  /** Run the worker in the gateway's process (`npm start`'s topology) rather than in the bench's. */
  workerInGateway: boolean;
}

export interface FuzzBatchFigures {
  /** Requests sent so far. */
  requests: number;
  /** Statuses of this batch's answers. */
  statuses: Record<string, number>;
  /** As the gateway stood after the batch, garbage included. */
  raw: GatewayFigures;
  /** After two full GCs. */
  live: GatewayFigures;
}

export interface GatewayFuzzMemoryResult {
  seed: number;
  /** The figures are the gateway's and the worker's together (one process, as `npm start` runs them). */
  workerInGateway: boolean;
  /** Settled (two full GCs) after the world's threads answered, before any fuzzed request. */
  started: GatewayFigures;
  batches: FuzzBatchFigures[];
  /** Settled again 30 s after the last batch, the gateway idle meanwhile. */
  afterIdle: GatewayFigures;
  /** Threads the fuzzed requests created (valid sends to new threads): what a worker beside the gateway would cache. */
  threadsCreated: number;
  /** Live heap growth per request over the second half of the batches (the first half warms up): bytes. */
  liveHeapBytesPerRequest: number;
  rssBytesPerRequest: number;
}

const IDLE_MS = 30_000;
const ANSWER_TIMEOUT_MS = 60_000;

export async function benchGatewayFuzzMemory(
  env: BenchEnv,
  sizes: GatewayFuzzMemorySizes,
  progress: (line: string) => void = () => undefined,
): Promise<GatewayFuzzMemoryResult> {
  const seed = Number(process.env.THREADLINE_FUZZ_SEED ?? 20261201);
  const tag = `fuzzmem-${seed}-${randomUUID().slice(0, 8)}`;
  const keys = { all: `${tag}-key-all`, scoped: `${tag}-key-scoped`, solo: `${tag}-key-solo` };
  const resource = (name: string) => `${tag}-${name}`;
  const world: FuzzWorld = {
    agentId: benchAgent.id,
    canaries: [0, 1, 2].map((i) => ({ resourceId: resource('canary'), threadId: `canary-${i}` })),
    sinks: [0, 1, 2, 3].map((i) => ({ resourceId: resource('sink'), threadId: `sink-${i}` })),
    freshResource: resource('fresh'),
    foreignResource: resource('foreign'),
    keys,
    maxBodyBytes: defaultLimits.maxInputBytes * 2 + 64 * 1024,
  };
  let gatewayWarnings = 0;
  const gateway = await startGatewayProcess(env, {
    name: 'gateway-fuzz-memory',
    workerInGateway: sizes.workerInGateway,
    env: {
      THREADLINE_API_KEYS: JSON.stringify({
        [keys.all]: ['*'],
        [keys.scoped]: [resource('canary'), resource('sink'), resource('fresh')],
        [keys.solo]: [resource('sink')],
      }),
    },
    onStderr: (chunk: string) => (gatewayWarnings += chunk.split('\n').length - 1),
  });
  const { ready, taskQueue } = gateway;
  const connection = await Connection.connect({ address: env.address }).catch(async (err: unknown) => {
    await gateway.stop();
    throw err;
  });
  const routesBus = new MemoryBus();
  let routesClient: ThreadlineClient | undefined;
  const measure = async (gc: boolean): Promise<GatewayFigures> => figures(await gateway.measure(gc));
  try {
    const auth = { authorization: `Bearer ${keys.all}` };
    const doc = (await (await fetch(`${ready.url}/api/openapi.json`, { headers: auth })).json()) as OpenApiDocument;
    // The served routes, from Hono itself (the console's pages are outside the OpenAPI document).
    routesClient = await connect({ bus: routesBus, client: new Client({ connection }), taskQueue });
    const app = createGateway({ client: routesClient, agents: summarizeAgents([benchAgent]) });
    const arbitrary = requestArbitrary(routeModels(doc, app.routes), world);
    // The world's threads exist and have answered once, so reads, steps and forks have something to read.
    await Promise.all(
      [...world.canaries, ...world.sinks].map(async (t) => {
        const res = await fetch(`${ready.url}/api/agents/${benchAgent.id}/send-message`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ ...t, message: 'Hello.' }),
        });
        if (res.status !== 200) throw new Error(`seeding ${t.threadId}: ${res.status} ${await res.text()}`);
      }),
    );
    await sleep(2_000);
    const started = await measure(true);
    progress(`  started: ${describe(started)}`);
    const batches: FuzzBatchFigures[] = [];
    for (let sent = 0, batch = 0; sent < sizes.requests; batch++) {
      const n = Math.min(sizes.batch, sizes.requests - sent);
      const statuses: Record<string, number> = {};
      for (const req of fc.sample(arbitrary, { seed: seed + batch, numRuns: n })) {
        const status = await send(ready.url, req);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
      sent += n;
      const raw = await measure(false);
      const live = await measure(true);
      batches.push({ requests: sent, statuses, raw, live });
      progress(`  ${sent} requests: raw ${describe(raw)}; live ${describe(live)}`);
    }
    await sleep(IDLE_MS);
    const afterIdle = await measure(true);
    progress(`  ${IDLE_MS / 1000} s idle: ${describe(afterIdle)}; gateway stderr lines: ${gatewayWarnings}`);
    // THREADLINE_BENCH_SNAPSHOT=<file>: a heap snapshot of the gateway's process at the end (to see what holds memory).
    const snapshot = process.env.THREADLINE_BENCH_SNAPSHOT;
    if (snapshot) {
      const path = `${snapshot}-${sizes.workerInGateway ? 'with-worker' : 'gateway'}`;
      progress(`  heap snapshot: ${await gateway.snapshot(path)}`);
    }
    const { count: threadsCreated } = await new Client({ connection }).workflow.count(
      `ThreadlineResource = '${world.freshResource}'`,
    );
    progress(`  threads created by the fuzzed requests: ${threadsCreated}`);
    const half = batches.slice(Math.floor(batches.length / 2) - 1);
    const first = half[0]!;
    const last = half.at(-1)!;
    const requests = last.requests - first.requests;
    return {
      seed,
      workerInGateway: sizes.workerInGateway,
      started,
      batches,
      afterIdle,
      threadsCreated,
      liveHeapBytesPerRequest: Math.round((last.live.heapUsed - first.live.heapUsed) / requests),
      rssBytesPerRequest: Math.round((last.live.rss - first.live.rss) / requests),
    };
  } finally {
    await gateway.stop();
    await routesClient?.close().catch(() => undefined);
    await routesBus.close();
    await connection.close();
  }
}

/** Sends one fuzzed request and reads its answer (an event stream is left at once, as the fuzz test does). */
async function send(url: string, req: FuzzRequest): Promise<number | string> {
  try {
    const res = await fetch(`${url}${req.url}`, {
      method: req.method,
      headers: req.headers,
      body: req.body === undefined ? undefined : Buffer.from(req.body, 'utf8'),
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) await res.body?.cancel();
    else await res.arrayBuffer();
    return res.status;
  } catch (err) {
    const cause = (err as Error).cause as { code?: string } | undefined;
    return `no answer (${cause?.code ?? (err as Error).name})`;
  }
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
function describe(f: GatewayFigures): string {
  return `rss ${mib(f.rss)}, heap ${mib(f.heapUsed)} of ${mib(f.heapTotal)}, external ${mib(f.external)}`;
}
