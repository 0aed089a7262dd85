/**
 * Real processes for end-to-end tests: a worker that a test can SIGKILL in the middle of a step.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject, onTestFinished } from 'vitest';
import type { Harness } from './harness';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const workerScript = fileURLToPath(new URL('./worker-process.ts', import.meta.url));
const OUTPUT_LIMIT = 20_000;

export interface WorkerProcessEnv {
  TEMPORAL_ADDRESS: string;
  TEMPORAL_TASK_QUEUE: string;
  REDIS_URL: string;
  OPENAI_BASE_URL: string;
  THREADLINE_WORKFLOW_BUNDLE: string;
  /** Comma-separated test agent ids; default `tester`. */
  THREADLINE_TEST_AGENTS?: string;
}

export interface WorkerProcess {
  pid: number;
  /** Sends `signal` (default SIGKILL) and resolves with the exit code once the process is gone (null: by signal). */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves with the exit code once the process has exited (null when a signal ended it). */
  exited: Promise<number | null>;
  /** Everything the process printed so far (stdout and stderr, interleaved; the last 20,000 characters). */
  output(): string;
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

/**
 * Spawns `test/support/worker-process.ts` and resolves once it printed `READY` (it polls the task queue then).
 * The process is killed when the current test ends (or this process exits) if the test has not done it.
 *
 * @example
 * const a = await startWorkerProcess(workerEnvFor(h, redis.url));
 * await a.kill('SIGKILL');
 */
export async function startWorkerProcess(env: WorkerProcessEnv, readyTimeoutMs = 60_000): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', workerScript], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-OUTPUT_LIMIT));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (alive()) child.kill(signal);
    return exited;
  };
  const killOnExit = () => {
    if (alive()) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  void exited.then(() => process.off('exit', killOnExit));
  try {
    onTestFinished(async () => {
      await kill('SIGKILL');
    });
  } catch {
    // Called outside a test (beforeAll): the caller kills it, or the exit hook does.
  }

  await new Promise<void>((resolve, reject) => {
    const fail = (why: string) => {
      cleanup();
      killOnExit();
      reject(new Error(`Worker process ${child.pid} ${why}. Its output:\n${output}`));
    };
    const onData = () => {
      if (/^READY$/m.test(output)) {
        cleanup();
        resolve();
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      fail(`exited (${signal ?? `code ${code}`}) before it was ready`);
    const onError = (err: Error) => fail(`could not be started: ${err.message}`);
    const timer = setTimeout(() => fail(`printed no READY within ${readyTimeoutMs} ms`), readyTimeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });

  return { pid: child.pid!, kill, exited, output: () => output };
}
