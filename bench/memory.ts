/**
 * Worker memory (issue #12, part 9): the RSS of a Threadline worker process of its own (bench/memory-worker.ts) as
 * idle threads pile up, before and after its workflow cache evicts them. The worker's cache holds half the threads:
 * the first half are created and stay cached (RSS per cached thread); creating the second half makes the worker evict
 * the least recently used for each new one, so at the end half the threads are evicted, idle, and the cache is as full
 * as before. What the RSS grew by over the second half is what evicted idle threads cost the worker.
 *
 * Threads are created as users create them: one persist-only signal each (`sendSignal`, `ifIdle: persist`, no run),
 * a fixed number in flight. Each measurement waits until the worker has nothing in flight and runs full GCs in every
 * V8 heap of the worker (the workflow thread's too: every workflow's objects live there).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { MemoryBus } from '../bus/memory';
import { connect } from '../client/connect';
import { threadBundleOptions } from '../worker/index';
import { benchAgent, withTimeout, type BenchEnv } from './env';
import { linearFit } from './stats';
import { mapLimit } from './temporal-helpers';
import { startRedis } from '../test/support/redis';
import type { MemoryWorkerReply, MemoryWorkerRequest, WorkerMemory } from './memory-worker';

export interface MemorySizes {
  /** The memory workers' `maxCachedWorkflows`. */
  cacheSize: number;
  /** Threads created in all at each measurement, ascending; the first is normally `cacheSize` (all cached). */
  stages: number[];
  /** Creations in flight, shared by the workers. */
  concurrency: number;
}

/**
 * A configuration a memory worker runs with: environment variables set on its process (malloc's), and its bus: Redis,
 * as a production worker (the events the bus retains per thread live in Redis), or in-process, as `npm start` (they
 * live in the worker's own process, each thread's until its stream has been idle for the bus's retention).
 */
export interface MallocConfig {
  name: string;
  env: Record<string, string>;
  bus: 'redis' | 'memory';
}

/** Where Debian and Ubuntu put jemalloc (`apt-get install libjemalloc2`). */
const jemallocPaths = ['/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'];

/**
 * The configurations measured side by side, on Redis: glibc as it comes, glibc with fewer arenas and an eager trim,
 * jemalloc; and glibc as it comes on the in-process bus, to show what that bus keeps per idle thread.
 */
export function mallocConfigs(): MallocConfig[] {
  const jemalloc = jemallocPaths.find((file) => existsSync(file));
  return [
    { name: primaryMallocConfig, env: {}, bus: 'redis' },
    {
      name: 'glibc, MALLOC_ARENA_MAX=2, MALLOC_TRIM_THRESHOLD_=128 KiB',
      env: { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' },
      bus: 'redis',
    },
    ...(jemalloc ? [{ name: 'jemalloc (LD_PRELOAD)', env: { LD_PRELOAD: jemalloc }, bus: 'redis' as const }] : []),
    { name: inProcessBusConfig, env: {}, bus: 'memory' },
  ];
}

export interface MemorySnapshot extends WorkerMemory {
  /** Threads created so far. */
  threads: number;
  /** Workflows in the worker's cache (`getStatus().numCachedWorkflows`). */
  cached: number;
  /** The machine's 1-minute load average when measured. */
  loadAverage: number;
}

/** What the threads evicted between two measurements cost, per thread. */
export interface EvictionStep {
  /** Threads created at the later measurement. */
  threads: number;
  /** Threads evicted between the two. */
  evicted: number;
  rss: number;
  rssAnon: number;
  heapUsed: number;
  external: number;
  /** The workflow threads' V8 heaps, after a full GC in each. */
  workflowHeapUsed: number;
}

export interface ConfigMemory {
  name: string;
  env: Record<string, string>;
  /** At the start, then at each stage. */
  snapshots: MemorySnapshot[];
  /** RSS per cached idle thread: (first stage − start) / the threads cached. */
  rssPerCachedThread: number;
  /** The workflow threads' V8 heap per cached idle thread, the same way. */
  workflowHeapPerCachedThread: number;
  /** Each stage after the first against the one before: a plateau falls toward 0, a leak stays level. */
  steps: EvictionStep[];
  /** RSS and V8 heap per evicted thread over the settled stages, as a least-squares slope (null: too few stages). */
  evictedSlope: EvictedSlope | null;
  failed: number;
}

/**
 * What each evicted idle thread costs once the allocator has reached its plateau: the least-squares slope of a figure
 * against the threads evicted so far, over every snapshot from the end of the first eviction stage on (that stage is
 * the climb to the plateau: docs/limits.md, worker memory). One stage's difference carries the whole of one
 * measurement's noise (RSS moves by 10–20 MiB between snapshots on this machine); the slope over several stages
 * spreads it over every thread evicted since, and its standard error says how far to trust it.
 */
export interface EvictedSlope {
  /** Threads evicted at the first and the last snapshot fitted, and how many snapshots. */
  fromEvicted: number;
  toEvicted: number;
  points: number;
  rss: number;
  rssStandardError: number;
  heapUsed: number;
  heapStandardError: number;
  workflowHeapUsed: number;
  workflowHeapStandardError: number;
}

export interface MemoryResult {
  cacheSize: number;
  /** What the bench's Threadline worker runs with (its `createWorker` settings or the SDK's default). */
  threadlineCacheSize: number;
  stages: number[];
  configs: ConfigMemory[];
  /** glibc's default malloc on the Redis bus, as a production worker runs; the figures below are its. */
  primary: string;
  rssPerCachedThread: number;
  workflowHeapPerCachedThread: number;
  /** RSS per evicted idle thread (the slope over the settled stages; else the last stage), of the primary configuration. */
  rssPerEvictedThread: number;
  /** Its standard error (0 when there is no slope). */
  rssPerEvictedThreadStandardError: number;
  heapPerEvictedThread: number;
  /** The workflow threads' V8 heap per evicted idle thread (slope, else the last stage). */
  workflowHeapPerEvictedThread: number;
  /** Threads created per second, all workers together. */
  createdPerSecond: number;
}

const script = fileURLToPath(new URL('./memory-worker.ts', import.meta.url));

export async function benchMemory(
  env: BenchEnv,
  { cacheSize, stages, concurrency }: MemorySizes,
  progress: (line: string) => void = () => undefined,
  primary = primaryMallocConfig,
): Promise<MemoryResult> {
  const configs = mallocConfigs();
  const redis = configs.some((c) => c.bus === 'redis') ? await startRedis() : undefined;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'threadline-bench-memory-'));
  const bundlePath = path.join(dir, 'workflows.js');
  const { code } = await bundleWorkflowCode({ ...threadBundleOptions, logger: quiet });
  await writeFile(bundlePath, code);
  const workers = configs.map((config) => {
    const taskQueue = `bench-memory-${randomUUID()}`;
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
      env: {
        ...process.env,
        ...config.env,
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        MODEL_URL: env.modelUrl,
        ...(config.bus === 'redis' && { REDIS_URL: redis!.url }),
        WORKFLOW_BUNDLE: bundlePath,
        MAX_CACHED_WORKFLOWS: String(cacheSize),
      },
      // The worker's JSON log lines would land in the bench's JSON on stdout.
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    return { config, taskQueue, child, failed: 0, snapshots: [] as MemorySnapshot[] };
  });
  const killOnExit = () => workers.forEach(({ child }) => child.kill('SIGKILL'));
  process.once('exit', killOnExit);
  const clients = await Promise.all(
    workers.map(({ taskQueue }) => connect({ client: env.client.temporal, bus: new MemoryBus(), taskQueue })),
  );
  try {
    const ready = await Promise.all(
      workers.map(({ child }) =>
        withTimeout(replyOf<MemoryWorkerReply>(child, 'ready'), 'the memory worker to start', 120_000),
      ),
    );
    const snapshotAll = async (threads: number) => {
      await Promise.all(
        workers.map(async (worker) => worker.snapshots.push(await snapshot(worker.child, threads, cacheSize))),
      );
      for (const { config, snapshots } of workers) {
        const x = snapshots.at(-1)!;
        progress(`    ${config.name}: ${x.cached} cached, RSS ${(x.rss / 2 ** 20).toFixed(1)} MiB`);
      }
    };
    await snapshotAll(0);
    let created = 0;
    let creatingMs = 0;
    for (const stage of stages) {
      const count = stage - created;
      progress(`  creating ${int(count)} threads in each of ${workers.length} workers (${int(stage)} in all)…`);
      const t0 = performance.now();
      const jobs = workers.flatMap((worker, w) =>
        Array.from({ length: count }, (_, k) => ({ worker, agent: clients[w]!.agent(benchAgent.id), k: created + k })),
      );
      await mapLimit(jobs, concurrency, async ({ worker, agent, k }) => {
        try {
          await agent.sendSignal(
            { type: 'notification', contents: `memory ${k}`, attributes: { source: 'bench' } },
            { resourceId: 'bench', threadId: `memory-${worker.taskQueue}-${k}`, ...persistOnly },
          );
        } catch {
          worker.failed += 1;
        }
      });
      creatingMs += performance.now() - t0;
      created = stage;
      await snapshotAll(created);
    }
    for (const { child } of workers) child.send({ type: 'exit' } satisfies MemoryWorkerRequest);
    const results = workers.map(({ config, snapshots, failed }) => figures(config, snapshots, failed));
    const main = results.find((r) => r.name === primary) ?? results[0]!;
    const last = main.steps.at(-1);
    const slope = main.evictedSlope;
    return {
      cacheSize: ready[0]!.type === 'ready' ? ready[0]!.maxCachedWorkflows : cacheSize,
      threadlineCacheSize: env.maxCachedWorkflows,
      stages,
      configs: results,
      primary: main.name,
      rssPerCachedThread: main.rssPerCachedThread,
      workflowHeapPerCachedThread: main.workflowHeapPerCachedThread,
      rssPerEvictedThread: slope ? slope.rss : (last?.rss ?? 0),
      rssPerEvictedThreadStandardError: slope ? slope.rssStandardError : 0,
      heapPerEvictedThread: slope ? slope.heapUsed : (last?.heapUsed ?? 0),
      workflowHeapPerEvictedThread: slope ? slope.workflowHeapUsed : (last?.workflowHeapUsed ?? 0),
      createdPerSecond: Math.round(((created * workers.length) / creatingMs) * 100_000) / 100,
    };
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await Promise.all(
      workers.map(({ child }) => Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(5_000)])),
    );
    for (const { child } of workers) child.kill('SIGKILL');
    process.off('exit', killOnExit);
    await rm(dir, { recursive: true, force: true });
    await redis?.stop();
  }
}

/** The malloc configuration of `npm start` on the production bus, whose figures go to target 9 (docs/limits.md). */
export const primaryMallocConfig = 'glibc malloc (default)';
/** The same worker on the in-process bus, as `npm start` runs it. */
export const inProcessBusConfig = 'glibc malloc (default), in-process bus';

function figures(config: MallocConfig, snapshots: MemorySnapshot[], failed: number): ConfigMemory {
  const [start, first] = snapshots as [MemorySnapshot, MemorySnapshot];
  const steps: EvictionStep[] = [];
  for (let i = 2; i < snapshots.length; i++) {
    const [a, b] = [snapshots[i - 1]!, snapshots[i]!];
    // Evicted: created since, less what the cache grew by.
    const evicted = Math.max(1, b.threads - a.threads - (b.cached - a.cached));
    const per = (key: 'rss' | 'rssAnon' | 'heapUsed' | 'external' | 'workflowHeapUsed') =>
      Math.round((b[key] - a[key]) / evicted);
    steps.push({
      threads: b.threads,
      evicted,
      rss: per('rss'),
      rssAnon: per('rssAnon'),
      heapUsed: per('heapUsed'),
      external: per('external'),
      workflowHeapUsed: per('workflowHeapUsed'),
    });
  }
  return {
    name: config.name,
    env: config.env,
    snapshots,
    rssPerCachedThread: Math.round((first.rss - start.rss) / Math.max(1, first.cached - start.cached)),
    workflowHeapPerCachedThread: Math.round(
      (first.workflowHeapUsed - start.workflowHeapUsed) / Math.max(1, first.cached - start.cached),
    ),
    steps,
    evictedSlope: evictedSlope(snapshots.slice(2)),
    failed,
  };
}

/** The least-squares slopes of RSS and V8 heap against threads evicted (created − cached) over `settled`. */
export function evictedSlope(settled: MemorySnapshot[]): EvictedSlope | null {
  const xs = settled.map((s) => s.threads - s.cached);
  if (settled.length < 3 || new Set(xs).size < 2) return null;
  const rss = linearFit(
    xs,
    settled.map((s) => s.rss),
  );
  const heap = linearFit(
    xs,
    settled.map((s) => s.heapUsed),
  );
  const workflowHeap = linearFit(
    xs,
    settled.map((s) => s.workflowHeapUsed),
  );
  return {
    fromEvicted: xs[0]!,
    toEvicted: xs.at(-1)!,
    points: settled.length,
    rss: Math.round(rss.slope),
    rssStandardError: Math.round(rss.standardError),
    heapUsed: Math.round(heap.slope),
    heapStandardError: Math.round(heap.standardError),
    workflowHeapUsed: Math.round(workflowHeap.slope),
    workflowHeapStandardError: Math.round(workflowHeap.standardError),
  };
}

/**
 * A measurement once the worker has caught up (a signal-with-start returns before the worker has run the new
 * workflow's task): nothing in flight and the cache the same size on five checks in a row half a second apart, and
 * every thread cached until the cache is full; or after 90 seconds of waiting for that (on a loaded machine a
 * workflow task that timed out is retried later, so a row may show fewer cached: the table says how many).
 */
async function snapshot(child: ChildProcess, threads: number, cacheSize: number): Promise<MemorySnapshot> {
  const deadline = Date.now() + 90_000;
  let quiet = 0;
  let measured = await measure(child);
  // As found once the stage's threads were created: the next measurements each follow a full GC.
  const { workflowHeapUsedBeforeGc } = measured;
  for (;;) {
    await sleep(500);
    const next = await measure(child);
    quiet = next.busy === 0 && next.cached === measured.cached ? quiet + 1 : 0;
    measured = next;
    if (quiet >= 5 && measured.cached >= Math.min(threads, cacheSize) - 2) break;
    if (Date.now() > deadline) break;
  }
  const { type: _type, busy: _busy, ...memory } = measured;
  return { threads, loadAverage: os.loadavg()[0]!, ...memory, workflowHeapUsedBeforeGc };
}

const int = (n: number) => n.toLocaleString('en-US');

const persistOnly = { ifIdle: { behavior: 'persist' }, ifActive: { behavior: 'persist' } } as const;

/** The next message of `type` from `child` (IPC); rejects if the child exits first. */
export function replyOf<R extends { type: string }>(child: ChildProcess, type: R['type']): Promise<R> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: R) => {
      if (message.type !== type) return;
      cleanup();
      resolve(message);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(
        new Error(`${path.basename(child.spawnargs.at(-1) ?? 'The child')} exited (${code}) before answering ${type}.`),
      );
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function measure(child: ChildProcess): Promise<Extract<MemoryWorkerReply, { type: 'measured' }>> {
  const answer = replyOf<MemoryWorkerReply>(child, 'measured');
  child.send({ type: 'measure' } satisfies MemoryWorkerRequest);
  return (await withTimeout(answer, 'a memory measurement')) as Extract<MemoryWorkerReply, { type: 'measured' }>;
}

const noop = () => undefined;
/** A bundler logger that prints only warnings and errors. */
export const quiet = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };
