/** `threadline …` run in-process (the binary's code path, without a process start per call), its output captured. */
import { runCli } from '../../worker/cli';

export interface CliRun {
  code: number | undefined;
  /** stdout, a line per write. */
  out: string;
  /** stderr, a line per write. */
  err: string;
}

export async function runThreadline(args: string[], env: NodeJS.ProcessEnv, signal?: AbortSignal): Promise<CliRun> {
  const run: CliRun = { code: undefined, out: '', err: '' };
  run.code = await runCli(args, env, {
    out: (text) => (run.out += `${text}\n`),
    err: (text) => (run.err += `${text}\n`),
    signal,
  });
  return run;
}
