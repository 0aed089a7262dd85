/**
 * The `threadline` command as a user runs it (a real process): help with examples and exit codes, settings errors
 * that name the variable (exit 1), usage errors (exit 2), and the package's `bin` entry.
 */
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
let configHome: string;

beforeAll(async () => {
  // An empty config home: no temporal.toml of the machine's user leaks into what `config` resolves.
  configHome = await mkdtemp(join(tmpdir(), 'threadline-cli-'));
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string[], env: Record<string, string> = {}): Promise<Run> {
  const [file, ...args] = command;
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: root, env: { PATH: process.env.PATH!, HOME: process.env.HOME!, XDG_CONFIG_HOME: configHome, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
    );
  });
}

const cli = (...args: string[]) => ['npx', 'tsx', 'worker/cli.ts', ...args];

describe('threadline', () => {
  it('--help lists the commands with examples and the exit codes', async () => {
    const { code, stdout } = await run(cli('--help'));
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: threadline <command> [options]');
    for (const name of ['start', 'worker', 'gateway', 'temporal:setup', 'config', 'doctor', 'threads', 'history']) {
      expect(stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
    }
    expect(stdout).toContain('TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 threadline worker');
    expect(stdout).toContain('Exit codes: 0 ok, 1 failure (invalid settings, a start-up error, an unreachable server');
    expect(stdout).toContain('2 usage error (unknown command or option, a missing argument)');
  });

  it('config --json prints the resolved settings with secrets masked', async () => {
    const { code, stdout } = await run(cli('config', '--json', '--for', 'worker'), {
      OPENAI_API_KEY: 'sk-do-not-print',
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_TASK_QUEUE: 'threads',
    });
    expect(code).toBe(0);
    expect(stdout).not.toContain('sk-do-not-print');
    const printed = JSON.parse(stdout) as {
      for: string;
      settings: { models: { openaiApiKey: string }; temporal: { address: string; taskQueue: string } };
      variables: { name: string; value: string | null; source: string }[];
    };
    expect(printed.for).toBe('worker');
    expect(printed.settings.models.openaiApiKey).toBe('********');
    expect(printed.settings.temporal).toMatchObject({ address: 'temporal.internal:7233', taskQueue: 'threads' });
    expect(printed.variables).toContainEqual({ name: 'TEMPORAL_TASK_QUEUE', value: 'threads', source: 'environment' });
  });

  it('config with an invalid variable names it and the form it needs, and exits 1', async () => {
    const { code, stdout, stderr } = await run(cli('config', '--json'), { PORT: 'eighty', TEMPORAL_TLS: 'maybe' });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('PORT must be a whole number from 0 to 65535, got "eighty".');
    expect(stderr).toContain('TEMPORAL_TLS must be true or false (or 1 or 0), got "maybe".');
  });

  it('exits 2 on an unknown command or option, saying what exists', async () => {
    const unknown = await run(cli('serve'));
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /Unknown command "serve"\. Commands: start, worker, gateway, .*config, .*history, .*inspect, fork\./,
    );

    const option = await run(cli('config', '--yaml'));
    expect(option.code).toBe(2);
    expect(option.stderr).toMatch(/Unknown option '--yaml'.*threadline config --help/);

    const none = await run(cli());
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: threadline <command>');
  });

  it('runs through the package "bin" as `npx threadline`', async () => {
    const { code, stdout } = await run(['npx', '--no-install', 'threadline', 'config', '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: threadline config [--for worker|gateway|start] [--json]');
  });
});
