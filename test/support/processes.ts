/**
 * Real processes for end-to-end tests: workers and gateways that a test can SIGKILL in the middle of a run. Each is
 * killed when the test that started it ends (or when this process exits), if the test has not done it.
 */
import { fileURLToPath } from 'node:url';
import { inject, onTestFinished } from 'vitest';
import type { ThreadConfigInput } from '../../protocol/thread-config';
import { startChild, type ChildProcessHandle } from './child-process';
import type { Harness } from './harness';

const workerScript = fileURLToPath(new URL('./worker-process.ts', import.meta.url));
const gatewayScript = fileURLToPath(new URL('./gateway-process.ts', import.meta.url));

export interface WorkerProcessEnv {
  TEMPORAL_ADDRESS: string;
  TEMPORAL_TASK_QUEUE: string;
  REDIS_URL: string;
  OPENAI_BASE_URL: string;
  THREADLINE_WORKFLOW_BUNDLE: string;
  /** Comma-separated test agent ids (test/support/test-agents.ts); default `tester`. */
  THREADLINE_TEST_AGENTS?: string;
  /** A file every tool call appends a JSON line to (read it with `readToolLog`). */
  THREADLINE_TEST_TOOL_LOG?: string;
  /** `1`: the worker runs activities only, no workflow tasks. */
  THREADLINE_TEST_ACTIVITIES_ONLY?: string;
  /** Serve `/health` and `/metrics` on this loopback port (`0`: any; the process prints `HTTP <url>`). */
  THREADLINE_WORKER_HTTP_PORT?: string;
  /** With THREADLINE_WORKER_HTTP_PORT: the log level of the worker and the Temporal SDK (default warn). */
  LOG_LEVEL?: string;
}

export type WorkerProcess = ChildProcessHandle;

export interface GatewayProcessEnv {
  TEMPORAL_ADDRESS: string;
  TEMPORAL_TASK_QUEUE: string;
  REDIS_URL: string;
  /** Default 0: any free loopback port (the process announces it). */
  PORT?: string;
  HOST?: string;
  /** Comma-separated test agent ids (test/support/test-agents.ts); default `tester`. */
  THREADLINE_TEST_AGENTS?: string;
  /** JSON `ThreadConfigInput` for the threads this gateway creates. */
  THREADLINE_THREAD_CONFIG?: string;
  /** The gateway settings, as `gateway/main.ts` reads them (THREADLINE_API_KEYS, THREADLINE_RATE_LIMIT_*, …). */
  [setting: `THREADLINE_${string}`]: string | undefined;
  /** Default info. */
  LOG_LEVEL?: string;
}

export interface GatewayProcess extends ChildProcessHandle {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  url: string;
}

/** The settings that make a worker process serve this harness's task queue, bus and model server. */
export function workerEnvFor(h: Harness, redisUrl: string): WorkerProcessEnv {
  return {
    TEMPORAL_ADDRESS: h.address,
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    REDIS_URL: redisUrl,
    OPENAI_BASE_URL: h.model.url,
    THREADLINE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
  };
}

/** The settings that make a gateway process serve this harness's task queue and bus, on a free loopback port. */
export function gatewayEnvFor(h: Harness, redisUrl: string, threadConfig?: ThreadConfigInput): GatewayProcessEnv {
  return {
    TEMPORAL_ADDRESS: h.address,
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    REDIS_URL: redisUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    ...(threadConfig && { THREADLINE_THREAD_CONFIG: JSON.stringify(threadConfig) }),
  };
}

/**
 * Spawns `test/support/worker-process.ts` and resolves once it printed `READY` (it polls the task queue then).
 * `outputLimit`: characters of its output kept for `output()` (default 20,000).
 *
 * @example
 * const a = await startWorkerProcess(workerEnvFor(h, redis.url));
 * await a.kill('SIGKILL');
 */
export async function startWorkerProcess(
  env: WorkerProcessEnv,
  readyTimeoutMs = 60_000,
  outputLimit?: number,
): Promise<WorkerProcess> {
  const child = await startChild(
    workerScript,
    { ...env },
    { name: 'Worker process', ready: /^READY$/m, readyTimeoutMs, outputLimit },
  );
  killWhenTestEnds(child);
  return child;
}

/**
 * Spawns `test/support/gateway-process.ts` and resolves once it listens.
 *
 * @example
 * const gateway = await startGatewayProcess(gatewayEnvFor(h, redis.url));
 * await fetch(`${gateway.url}/api/agents/tester/send-message`, { method: 'POST', ... });
 */
export async function startGatewayProcess(
  env: GatewayProcessEnv,
  readyTimeoutMs = 60_000,
  outputLimit?: number,
): Promise<GatewayProcess> {
  const child = await startChild(
    gatewayScript,
    { ...env },
    { name: 'Gateway process', ready: /^READY (http:\/\/\S+)$/m, readyTimeoutMs, outputLimit },
  );
  killWhenTestEnds(child);
  return { ...child, url: child.ready[1] };
}

function killWhenTestEnds(child: ChildProcessHandle): void {
  try {
    onTestFinished(async () => {
      await child.kill('SIGKILL');
    });
  } catch {
    // Started outside a test (beforeAll): the caller kills it, or the exit hook of startChild does.
  }
}
