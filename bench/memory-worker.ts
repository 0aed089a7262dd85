/**
 * A Threadline worker as a process of its own, for bench/memory.ts: the RSS it reports is the worker's alone. It
 * runs `createWorker` with the bench agent and the scripted model, on the Redis bus when `REDIS_URL` is set (as a
 * production worker does: the bus's events then live in Redis) or else on an in-process bus (as `npm start`, where the
 * bus's retained events live in this process), with the workflow cache sized by the parent (once it is full, the worker evicts the least recently used workflow for each new one),
 * and answers the parent's messages (IPC):
 *
 *   { type: 'measure' }  → { type: 'measured', cached, busy, …WorkerMemory } after full GCs in every thread (this
 *                          one and the SDK's workflow threads, reached through the inspector)
 *   { type: 'snapshot', path } → { type: 'snapshot-written', path } (a V8 heap snapshot after a full GC)
 *   { type: 'exit' }     → shuts down and exits
 *
 * Settings (environment): TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, MODEL_URL, WORKFLOW_BUNDLE (a bundle's code file),
 * MAX_CACHED_WORKFLOWS, REDIS_URL (optional). Run with `--expose-gc`; bench/memory.ts runs several side by side, each with its own malloc
 * settings (MALLOC_ARENA_MAX, LD_PRELOAD of jemalloc…) in its environment.
 */
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { setTimeout as sleep } from 'node:timers/promises';
import v8, { writeHeapSnapshot } from 'node:v8';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { MemoryBus } from '../bus/memory';
import { RedisBus } from '../bus/redis';
import { createWorker, type ThreadlineWorker } from '../worker/index';
import { benchAgent } from './agent';

export type MemoryWorkerRequest = { type: 'measure' } | { type: 'snapshot'; path: string } | { type: 'exit' };
export type MemoryWorkerReply =
  | { type: 'ready'; maxCachedWorkflows: number }
  | ({ type: 'measured'; cached: number; busy: number } & WorkerMemory)
  | { type: 'snapshot-written'; path: string };

/** One process's memory, after two full GCs. */
export interface WorkerMemory {
  rss: number;
  /** Anonymous resident memory (`RssAnon` in /proc/self/status): the heaps, V8's and malloc's, without mapped files. */
  rssAnon: number;
  heapUsed: number;
  /** V8 heap committed (`heapTotal`). */
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** Memory V8 itself holds from malloc (zones, compiled code metadata), outside its heap. */
  v8Malloced: number;
  /** V8 native contexts alive in the main thread: the main one plus each workflow VM context there. */
  nativeContexts: number;
  detachedContexts: number;
  /**
   * The V8 heaps of the SDK's workflow threads (worker threads: every workflow's code runs there), used and committed,
   * after a full GC in each. `heapUsed` and the rest above are the main thread's alone.
   */
  workflowHeapUsed: number;
  workflowHeapTotal: number;
  /** The workflow threads' heaps as found, before that GC: what V8 had not collected yet (bench/memory.ts keeps a
   * stage's first reading: its later ones follow a GC). */
  workflowHeapUsedBeforeGc: number;
  workflowThreads: number;
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: bench/memory.ts starts this process with it.`);
  return value;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('Run bench/memory-worker.ts with node --expose-gc.');
const send = (reply: MemoryWorkerReply) => process.send!(reply);

Runtime.install({
  logger: new DefaultLogger('WARN', (entry) =>
    process.stderr.write(`memory worker ${entry.level}: ${entry.message}\n`),
  ),
  telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
  shutdownSignals: [],
});

const worker: ThreadlineWorker = await createWorker({
  agents: [benchAgent],
  bus: process.env.REDIS_URL ? new RedisBus(process.env.REDIS_URL) : new MemoryBus(),
  address: required('TEMPORAL_ADDRESS'),
  taskQueue: required('TEMPORAL_TASK_QUEUE'),
  models: { openaiBaseUrl: required('MODEL_URL'), openaiApiKey: 'bench' },
  workflowBundle: { codePath: required('WORKFLOW_BUNDLE') },
  shutdownGraceTimeMs: 1_000,
  worker: { maxCachedWorkflows: Number(required('MAX_CACHED_WORKFLOWS')) },
});
const running = worker.run();

/**
 * The SDK's workflow threads, reached through the inspector (a session in this thread attached to each worker thread):
 * `gc()` collects only this thread's heap, and `process.memoryUsage()` reports only it, while every workflow's objects
 * live in a workflow thread's heap, which V8 collects when it sees fit.
 */
class WorkflowThreads {
  private readonly session = new Session();
  private readonly sessions = new Set<string>();
  private readonly waiting = new Map<number, (result: unknown) => void>();
  private nextId = 0;

  async attach(): Promise<void> {
    this.session.connect();
    // Not the module loader's thread (`--import tsx`): only the SDK's `workflow-worker-thread.js` threads.
    this.session.on('NodeWorker.attachedToWorker', ({ params }) => {
      if (params.workerInfo.url.includes('workflow-worker-thread')) this.sessions.add(params.sessionId);
    });
    this.session.on('NodeWorker.detachedFromWorker', ({ params }) => this.sessions.delete(params.sessionId));
    this.session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
      const message = JSON.parse(params.message) as { id?: number; result?: unknown };
      if (message.id !== undefined) this.waiting.get(message.id)?.(message.result);
      this.waiting.delete(message.id!);
    });
    await new Promise<void>((resolve, reject) =>
      this.session.post('NodeWorker.enable', { waitForDebuggerOnStart: false }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  }

  /** Their heaps' used bytes as found, then a full GC in each, then their used and committed bytes. */
  async collect(): Promise<{ usedBeforeGc: number; used: number; total: number; threads: number }> {
    let usedBeforeGc = 0;
    let used = 0;
    let total = 0;
    for (const sessionId of this.sessions) {
      usedBeforeGc += ((await this.call(sessionId, 'Runtime.getHeapUsage')) as { usedSize: number }).usedSize;
      await this.call(sessionId, 'HeapProfiler.collectGarbage');
      await this.call(sessionId, 'HeapProfiler.collectGarbage');
      const usage = (await this.call(sessionId, 'Runtime.getHeapUsage')) as { usedSize: number; totalSize: number };
      used += usage.usedSize;
      total += usage.totalSize;
    }
    return { usedBeforeGc, used, total, threads: this.sessions.size };
  }

  private call(sessionId: string, method: string): Promise<unknown> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.session.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method }) });
    });
  }
}

const workflowThreads = new WorkflowThreads();
await workflowThreads.attach();

async function measure(): Promise<MemoryWorkerReply> {
  const workflowHeap = await workflowThreads.collect();
  gc!();
  await sleep(50);
  gc!();
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  const heap = v8.getHeapStatistics();
  const status = worker.worker.getStatus();
  return {
    type: 'measured',
    rss,
    rssAnon: rssAnon(),
    heapUsed,
    heapTotal,
    external,
    arrayBuffers,
    v8Malloced: heap.malloced_memory,
    nativeContexts: heap.number_of_native_contexts,
    detachedContexts: heap.number_of_detached_contexts,
    workflowHeapUsed: workflowHeap.used,
    workflowHeapTotal: workflowHeap.total,
    workflowHeapUsedBeforeGc: workflowHeap.usedBeforeGc,
    workflowThreads: workflowHeap.threads,
    cached: status.numCachedWorkflows,
    busy: status.numInFlightWorkflowActivations + status.numInFlightActivities,
  };
}

/** `RssAnon` from /proc/self/status in bytes (0 where there is no /proc). */
function rssAnon(): number {
  try {
    const kb = /^RssAnon:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

process.on('message', (request: MemoryWorkerRequest) => {
  void (async () => {
    if (request.type === 'measure') send(await measure());
    if (request.type === 'snapshot') {
      gc!();
      send({ type: 'snapshot-written', path: writeHeapSnapshot(request.path) });
    }
    if (request.type === 'exit') {
      await worker.shutdown();
      await running.catch(() => undefined);
      process.exit(0);
    }
  })().catch((err: Error) => {
    process.stderr.write(`memory worker: ${err.stack}\n`);
    process.exit(1);
  });
});

send({ type: 'ready', maxCachedWorkflows: worker.worker.options.maxCachedWorkflows });
