/**
 * Worker memory (issue #12, part 9): the RSS of a Threadline worker process of its own (bench/memory-worker.ts) as
 * idle threads pile up, before and after its workflow cache evicts them. The worker's cache holds half the threads:
 * the first half are created and stay cached (RSS per cached thread); creating the second half makes the worker evict
 * the least recently used for each new one, so at the end half the threads are evicted, idle, and the cache is as full
 * as before. What the RSS grew by over the second half is what evicted idle threads cost the worker.
 *
 * Threads are created as users create them: one persist-only signal each (`sendSignal`, `ifIdle: persist`, no run),
 * a fixed number in flight. Each measurement waits until the worker has nothing in flight and runs two full GCs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { MemoryBus } from '../bus/memory';
import { connect } from '../client/connect';
import { workflowsPath } from '../worker/index';
import { benchAgent, withTimeout, type BenchEnv } from './env';
import { mapLimit } from './temporal-helpers';
import type { MemoryWorkerReply, MemoryWorkerRequest } from './memory-worker';

export interface MemorySizes {
  threads: number;
  concurrency: number;
}

export interface MemorySnapshot {
  /** Threads created so far. */
  threads: number;
  rss: number;
  heapUsed: number;
  external: number;
  /** Workflows in the worker's cache (`getStatus().numCachedWorkflows`). */
  cached: number;
}

export interface MemoryResult {
  threads: number;
  /** The memory worker's `maxCachedWorkflows`: half the threads. */
  cacheSize: number;
  /** What the bench's Threadline worker runs with (its `createWorker` settings or the SDK's default). */
  threadlineCacheSize: number;
  baseline: MemorySnapshot;
  /** Half the threads created, every one of them cached. */
  allCached: MemorySnapshot;
  /** Every thread created: the cache as full as before, the first half evicted. */
  afterEviction: MemorySnapshot;
  /** RSS per cached idle thread: (allCached − baseline) / its threads. */
  rssPerCachedThread: number;
  /** RSS per evicted idle thread: (afterEviction − allCached) / the threads evicted. */
  rssPerEvictedThread: number;
  heapPerEvictedThread: number;
  createdPerSecond: number;
  failed: number;
}

const script = fileURLToPath(new URL('./memory-worker.ts', import.meta.url));

export async function benchMemory(
  env: BenchEnv,
  { threads, concurrency }: MemorySizes,
  progress: (line: string) => void = () => undefined,
): Promise<MemoryResult> {
  const cacheSize = Math.ceil(threads / 2);
  const taskQueue = `bench-memory-${randomUUID()}`;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'threadline-bench-memory-'));
  const bundlePath = path.join(dir, 'workflows.js');
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet });
  await writeFile(bundlePath, code);
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      MODEL_URL: env.modelUrl,
      WORKFLOW_BUNDLE: bundlePath,
      MAX_CACHED_WORKFLOWS: String(cacheSize),
    },
    // The worker's JSON log lines would land in the bench's JSON on stdout.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const client = await connect({ client: env.client.temporal, bus: new MemoryBus(), taskQueue });
  try {
    const ready = await withTimeout(replyOf<MemoryWorkerReply>(child, 'ready'), 'the memory worker to start', 120_000);
    if (ready.type !== 'ready') throw new Error('unreachable');
    const agent = client.agent(benchAgent.id);
    let created = 0;
    let failed = 0;
    let creatingMs = 0;
    const create = async (count: number) => {
      const t0 = performance.now();
      const first = created;
      await mapLimit(
        Array.from({ length: count }, (_, k) => first + k),
        concurrency,
        async (k) => {
          try {
            await agent.sendSignal(
              { type: 'notification', contents: `memory ${k}`, attributes: { source: 'bench' } },
              { resourceId: 'bench', threadId: `memory-${taskQueue}-${k}`, ...persistOnly },
            );
          } catch {
            failed += 1;
          }
        },
      );
      created += count;
      creatingMs += performance.now() - t0;
    };
    const snapshot = async (): Promise<MemorySnapshot> => {
      const deadline = Date.now() + 60_000;
      let measured = await measure(child);
      while (measured.busy > 0 && Date.now() < deadline) {
        await sleep(200);
        measured = await measure(child);
      }
      const { rss, heapUsed, external, cached } = measured;
      return { threads: created, rss, heapUsed, external, cached };
    };
    const baseline = await snapshot();
    progress(`  creating ${cacheSize} threads (all cached)…`);
    await create(cacheSize);
    const allCached = await snapshot();
    progress(`  creating ${threads - cacheSize} more (the cache evicts as many)…`);
    await create(threads - cacheSize);
    const afterEviction = await snapshot();
    const evicted = created - afterEviction.cached - (allCached.threads - allCached.cached);
    child.send({ type: 'exit' } satisfies MemoryWorkerRequest);
    return {
      threads: created,
      cacheSize: ready.maxCachedWorkflows,
      threadlineCacheSize: env.maxCachedWorkflows,
      baseline,
      allCached,
      afterEviction,
      rssPerCachedThread: Math.round((allCached.rss - baseline.rss) / Math.max(1, allCached.cached - baseline.cached)),
      rssPerEvictedThread: Math.round((afterEviction.rss - allCached.rss) / Math.max(1, evicted)),
      heapPerEvictedThread: Math.round((afterEviction.heapUsed - allCached.heapUsed) / Math.max(1, evicted)),
      createdPerSecond: Math.round((created / creatingMs) * 100_000) / 100,
      failed,
    };
  } finally {
    await client.close().catch(() => undefined);
    await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(5_000)]);
    child.kill('SIGKILL');
    process.off('exit', killOnExit);
    await rm(dir, { recursive: true, force: true });
  }
}

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
