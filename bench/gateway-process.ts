/**
 * A gateway in a process of its own (bench/gateway-memory-process.ts) on a Redis of its own, as benches (k) and (l)
 * measure it: its worker runs in the bench's process, or in the gateway's (`npm start`'s topology). The child answers
 * over IPC: `ready` once it serves, `measured` for each measurement, `snapshot-written` for a heap snapshot.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { RedisBus } from '../bus/redis';
import { startRedis } from '../test/support/redis';
import { createWorker, threadBundleOptions } from '../worker/index';
import { benchAgent, withTimeout, type BenchEnv } from './env';
import type { GatewayFigures, GatewayMemoryReply, GatewayMemoryRequest } from './gateway-memory-process';
import { quiet, replyOf } from './memory';

export type GatewayReady = Extract<GatewayMemoryReply, { type: 'ready' }>;
export type GatewayMeasured = Extract<GatewayMemoryReply, { type: 'measured' }>;

/** A measurement's memory figures alone (without the subscriber counts). */
export function figures({ rss, heapTotal, heapUsed, external, arrayBuffers }: GatewayMeasured): GatewayFigures {
  return { rss, heapTotal, heapUsed, external, arrayBuffers };
}

export interface GatewayProcessOptions {
  /** Names the task queue (`bench-<name>-<uuid>`). */
  name: string;
  /** Run the worker in the gateway's process rather than in the bench's. */
  workerInGateway?: boolean;
  /** More environment for the gateway (its settings: API keys, subscriber limits…). */
  env?: Record<string, string>;
  /** The gateway's stderr, a chunk at a time; without it, it goes to the bench's stderr. */
  onStderr?: (chunk: string) => void;
}

export interface GatewayProcess {
  ready: GatewayReady;
  taskQueue: string;
  /** The gateway's memory as it is, or after two full GCs (`gc`). */
  measure(gc: boolean): Promise<GatewayMeasured>;
  /** Writes a heap snapshot of the gateway's process to `path`; resolves with the file written. */
  snapshot(path: string): Promise<string>;
  /** Asks the gateway to exit (killed after 5 s), then stops the worker, its bus and Redis. */
  stop(): Promise<void>;
}

const script = fileURLToPath(new URL('./gateway-memory-process.ts', import.meta.url));

export async function startGatewayProcess(env: BenchEnv, options: GatewayProcessOptions): Promise<GatewayProcess> {
  const redis = await startRedis();
  const taskQueue = `bench-${options.name}-${randomUUID()}`;
  // The worker here, unless it runs in the gateway's process.
  const workerBus = options.workerInGateway ? undefined : new RedisBus(redis.url);
  const worker = !workerBus
    ? undefined
    : await createWorker({
        agents: [benchAgent],
        bus: workerBus,
        address: env.address,
        taskQueue,
        models: { openaiBaseUrl: env.modelUrl, openaiApiKey: 'bench' },
        workflowBundle: { code: (await bundleWorkflowCode({ ...threadBundleOptions, logger: quiet })).code },
        shutdownGraceTimeMs: 1_000,
      });
  const running = worker?.run();
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      REDIS_URL: redis.url,
      ...(options.workerInGateway && { THREADLINE_BENCH_WORKER_MODEL_URL: env.modelUrl }),
      ...options.env,
    },
    stdio: ['ignore', 'ignore', options.onStderr ? 'pipe' : 'inherit', 'ipc'],
  });
  if (options.onStderr) child.stderr!.on('data', (chunk: Buffer) => options.onStderr!(chunk.toString()));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const request = (message: GatewayMemoryRequest) => child.send(message);
  const stop = async () => {
    if (child.exitCode === null && child.connected) request({ type: 'exit' });
    await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(5_000)]);
    child.kill('SIGKILL');
    process.off('exit', killOnExit);
    await worker?.shutdown().catch(() => undefined);
    await running?.catch(() => undefined);
    await workerBus?.close();
    await redis.stop();
  };
  try {
    const ready = await withTimeout(replyOf<GatewayReady>(child, 'ready'), 'the gateway process to start', 120_000);
    return {
      ready,
      taskQueue,
      async measure(gc) {
        const answer = replyOf<GatewayMeasured>(child, 'measured');
        request({ type: 'measure', gc });
        return await withTimeout(answer, 'a gateway memory measurement', 60_000);
      },
      async snapshot(path) {
        const written = replyOf<Extract<GatewayMemoryReply, { type: 'snapshot-written' }>>(child, 'snapshot-written');
        request({ type: 'snapshot', path });
        return (await withTimeout(written, 'the heap snapshot', 300_000)).path;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
