import { spawn, type SpawnOptions } from 'node:child_process';

/** Runs a command to completion; rejects with everything it printed when it fails. No test-runner imports. */
export function runCommand(
  command: string,
  args: string[],
  options: Pick<SpawnOptions, 'cwd' | 'env' | 'uid' | 'gid'> = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code, signal) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`\`${command} ${args.join(' ')}\` failed (${signal ?? `exit code ${code}`}):\n${output}`)),
    );
  });
}
