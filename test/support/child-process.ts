/**
 * A TypeScript entry run as a child process (`node --import tsx`), for tests and benchmarks that run Threadline as
 * several real processes and kill them for real. No test-runner imports here, so the bench can use it too;
 * `processes.ts` adds the per-test clean-up.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const OUTPUT_LIMIT = 20_000;

export interface ChildProcessHandle {
  pid: number;
  /** Sends `signal` (default SIGKILL) and resolves with the exit code once the process is gone (null: by signal). */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves with the exit code once the process has exited (null when a signal ended it). */
  exited: Promise<number | null>;
  /** Everything the process printed so far (stdout and stderr, interleaved; the last 20,000 characters by default). */
  output(): string;
}

export interface StartChildOptions {
  /** Named in errors, e.g. `Worker process`. */
  name: string;
  /** The process is ready once its stdout has a line matching this. */
  ready: RegExp;
  readyTimeoutMs?: number;
  /** Characters of output kept for `output()` (default the last 20,000). */
  outputLimit?: number;
}

/**
 * Spawns `script` with `env` added to this process's environment and resolves once its stdout matched `ready`, with
 * the match. The child is SIGKILLed if this process exits first; otherwise stopping it is the caller's job.
 */
export async function startChild(
  script: string,
  env: Record<string, string | undefined>,
  { name, ready, readyTimeoutMs = 60_000, outputLimit = OUTPUT_LIMIT }: StartChildOptions,
): Promise<ChildProcessHandle & { ready: RegExpMatchArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-outputLimit));
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

  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const fail = (why: string) => {
      cleanup();
      killOnExit();
      reject(new Error(`${name} ${child.pid} ${why}. Its output:\n${output}`));
    };
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      const found = stdout.match(ready);
      if (found) {
        cleanup();
        resolve(found);
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      fail(`exited (${signal ?? `code ${code}`}) before it was ready`);
    const onError = (err: Error) => fail(`could not be started: ${err.message}`);
    const timer = setTimeout(
      () => fail(`printed nothing matching ${ready} within ${readyTimeoutMs} ms`),
      readyTimeoutMs,
    );
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

  return { pid: child.pid!, kill, exited, output: () => output, ready: match };
}
