/**
 * Finds the Temporal CLI (which embeds the dev server), building it from the Go module proxy on first use.
 *
 * This environment cannot download release binaries, so the CLI is compiled with
 * `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` into a cache outside the repo and reused.
 * Later tags carry a `replace` directive that `go install` rejects, hence the pinned version.
 *
 * @example
 * const cliPath = await locateTemporalCli({ log: console.log });
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';

/** The CLI's go.mod says `go 1.25.0`; Go ≥ 1.21 fetches that toolchain itself through the module proxy. */
const MIN_GO_MINOR = 22;
const PROGRESS_INTERVAL_MS = 15_000;
const BUILD_DIR_PREFIX = '.build-';

export interface LocateTemporalCliOptions {
  /** Receives progress lines; defaults to stderr. */
  log?: (line: string) => void;
  /** Build the CLI when it is not found (default true); tests pass false so they never start a 6-minute build. */
  build?: boolean;
  /** TEMPORAL_CLI, XDG_CACHE_HOME, PATH and the Go build's variables; entry points pass theirs (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/** Folder holding the cached binary: `${XDG_CACHE_HOME ?? ~/.cache}/threadline/temporal-1.5.1`. */
export function temporalCliCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'threadline', `temporal-${TEMPORAL_CLI_VERSION.replace(/^v/, '')}`);
}

/** The command that builds the CLI into `gobin`, exported so it can be checked without a 6-minute build. */
export function temporalCliBuildCommand(
  gobin: string,
  env: NodeJS.ProcessEnv = process.env,
): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  return {
    command: 'go',
    // -v prints each package as it compiles: progress without the noise of -x.
    args: ['install', '-v', `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`],
    env: { ...env, GOBIN: gobin },
  };
}

/**
 * Returns the path of a usable `temporal` binary: `TEMPORAL_CLI` if set, else the cached build, else builds it
 * (first run only, several minutes).
 */
export async function locateTemporalCli(opts: LocateTemporalCliOptions = {}): Promise<string> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const env = opts.env ?? process.env;

  const override = env.TEMPORAL_CLI;
  if (override) {
    if (await isExecutableFile(override)) return override;
    throw new Error(
      `TEMPORAL_CLI is set to "${override}", but no executable file is there. ` +
        `Point TEMPORAL_CLI at a temporal binary (${TEMPORAL_CLI_VERSION} or later), ` +
        `unset it to use the cached build in ${temporalCliCacheDir(env)}, ` +
        'or set TEMPORAL_ADDRESS to use an existing Temporal server.',
    );
  }

  const cacheDir = temporalCliCacheDir(env);
  const cached = join(cacheDir, 'temporal');
  if (await isExecutableFile(cached)) return cached;
  if (opts.build === false) {
    throw new Error(
      `The Temporal CLI is not built yet (looked for ${cached}). ` +
        'Run `npm run temporal:setup` once (~5-10 min), or set TEMPORAL_CLI to an existing temporal binary.',
    );
  }

  await buildTemporalCli(cacheDir, log, env);
  return cached;
}

async function buildTemporalCli(cacheDir: string, log: (line: string) => void, env: NodeJS.ProcessEnv): Promise<void> {
  const go = await findOnPath('go', env);
  if (!go) throw noGoError('`go` was not found on PATH');
  const goVersion = await readGoVersion(go, env);
  if (goVersion && goVersion.major === 1 && goVersion.minor < MIN_GO_MINOR) {
    throw noGoError(`\`${go}\` is Go ${goVersion.text}, too old to build it`);
  }

  await mkdir(cacheDir, { recursive: true });
  await removeAbandonedBuilds(cacheDir);
  // Each build gets its own folder and is renamed into place when complete: a killed build never leaves a half
  // binary, and two concurrent builds each rename a whole binary (the last one wins, both are good).
  const buildDir = await mkdtemp(join(cacheDir, `${BUILD_DIR_PREFIX}${process.pid}-`));
  const { command, args, env: buildEnv } = temporalCliBuildCommand(buildDir, env);

  log(
    `Building the Temporal CLI ${TEMPORAL_CLI_VERSION} from the Go module proxy (first run only, ~5-10 min on 2 cores)…`,
  );
  log(`  ${command} ${args.join(' ')}  (GOBIN=${buildDir})`);
  const started = Date.now();
  const ticker = setInterval(
    () => log(`still building the Temporal CLI (${formatElapsed(Date.now() - started)})…`),
    PROGRESS_INTERVAL_MS,
  );
  try {
    await runStreaming(go, args, buildEnv, (line) => log(`  ${line}`));
    await rename(join(buildDir, 'temporal'), join(cacheDir, 'temporal'));
    log(`Built the Temporal CLI in ${formatElapsed(Date.now() - started)}: ${join(cacheDir, 'temporal')}`);
  } finally {
    clearInterval(ticker);
    await rm(buildDir, { recursive: true, force: true });
  }
}

function noGoError(reason: string): Error {
  return new Error(
    `Cannot build the Temporal CLI: ${reason}. Do one of:\n` +
      '  - install Go ≥ 1.22 (e.g. `apt-get install golang` where it ships ≥ 1.22, or https://go.dev/dl), ' +
      'then run again (the first build takes ~5-10 min);\n' +
      '  - set TEMPORAL_CLI to an existing temporal binary;\n' +
      '  - set TEMPORAL_ADDRESS to use an existing Temporal server (e.g. TEMPORAL_ADDRESS=localhost:7233).',
  );
}

/** Runs a command, passing each output line to `onLine`; rejects with the output's tail if it fails. */
function runStreaming(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onLine: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        if (!line.trim()) return;
        tail.push(line);
        if (tail.length > 30) tail.shift();
        onLine(line);
      });
    }
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) return resolve();
      reject(
        new Error(
          `\`${command} ${args.join(' ')}\` failed (${signal ?? `exit code ${code}`}). Last output:\n${tail.join('\n')}`,
        ),
      );
    });
  });
}

/** Build folders whose process is gone were left by a killed build. */
async function removeAbandonedBuilds(cacheDir: string): Promise<void> {
  for (const name of await readdir(cacheDir)) {
    const pid = Number(/^\.build-(\d+)-/.exec(name)?.[1]);
    if (pid && !isAlive(pid)) await rm(join(cacheDir, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readGoVersion(
  go: string,
  env: NodeJS.ProcessEnv,
): Promise<{ major: number; minor: number; text: string } | undefined> {
  const output = await new Promise<string>((resolve) => {
    let text = '';
    // GOTOOLCHAIN=local: report the installed Go, not the toolchain it would switch to.
    const child = spawn(go, ['version'], {
      env: { ...env, GOTOOLCHAIN: 'local' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.once('error', () => resolve(''));
    child.once('close', () => resolve(text));
  });
  const match = /go(\d+)\.(\d+)(\S*)/.exec(output);
  if (!match) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]), text: `${match[1]}.${match[2]}${match[3]}` };
}

async function findOnPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

function formatElapsed(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes ? `${minutes}m${String(seconds % 60).padStart(2, '0')}s` : `${seconds}s`;
}

/** `npm run temporal:setup` / `threadline temporal:setup`: prints the binary's path, building it on first use. */
export async function setupTemporalCli(env: NodeJS.ProcessEnv): Promise<void> {
  console.log(await locateTemporalCli({ env }));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    await setupTemporalCli(process.env);
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 1;
  }
}
