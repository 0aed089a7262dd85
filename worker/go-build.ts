/**
 * Builds Go programs from the Go module proxy into a cache folder outside the repo, once: the Temporal CLI (dev
 * server, `temporal-cli.ts`) and the production Temporal server with its SQL tool (`temporal-server.ts`). This
 * environment cannot download release binaries, so `go install` compiles them at a pinned version.
 *
 * @example
 * await buildGoBinaries({ what: 'the Temporal CLI v1.5.1', packages: ['github.com/temporalio/cli/cmd/temporal@v1.5.1'],
 *   binaries: { temporal: 'temporal' }, cacheDir, duration: '~5-10 min', noGo: (reason) => new Error(reason) }, log, env);
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';

/** Go ≥ 1.21 fetches a newer toolchain a module asks for through the module proxy (unless GOTOOLCHAIN=local). */
const MIN_GO_MINOR = 22;
const PROGRESS_INTERVAL_MS = 15_000;
const BUILD_DIR_PREFIX = '.build-';

export interface GoBuild {
  /** Named in progress lines: `the Temporal CLI v1.5.1`. */
  what: string;
  /** `go install` arguments: package paths at a version, all from one module. */
  packages: string[];
  /** Extra `go install` flags before the packages, e.g. `['-tags', 'disable_grpc_modules']`. */
  flags?: string[];
  /** Extra build environment, e.g. `{ CGO_ENABLED: '0' }`. */
  env?: NodeJS.ProcessEnv;
  /** The names `go install` writes (the package's last path element) → the names in the cache folder. */
  binaries: Record<string, string>;
  cacheDir: string;
  /** How long the first build takes, for the first progress line: `~5-10 min on 2 cores`. */
  duration: string;
  /** The error to throw when Go is missing or too old, given why; it should say how to do without the build. */
  noGo: (reason: string) => Error;
}

/** `${XDG_CACHE_HOME ?? ~/.cache}/threadline/<name>`. */
export function threadlineCacheDir(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'threadline', name);
}

/** The command that builds into `gobin`, exported so it can be checked without a build of several minutes. */
export function goInstallCommand(
  build: Pick<GoBuild, 'packages' | 'flags' | 'env'>,
  gobin: string,
  env: NodeJS.ProcessEnv = process.env,
): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  return {
    command: 'go',
    // -v prints each package as it compiles: progress without the noise of -x.
    args: ['install', '-v', ...(build.flags ?? []), ...build.packages],
    env: { ...env, ...build.env, GOBIN: gobin },
  };
}

/** Every binary of `build` in its cache folder, when all are there and executable. */
export async function cachedBinaries(build: Pick<GoBuild, 'binaries' | 'cacheDir'>): Promise<boolean> {
  const found = await Promise.all(
    Object.values(build.binaries).map((name) => isExecutableFile(join(build.cacheDir, name))),
  );
  return found.every(Boolean);
}

/** Runs `go install` into a fresh folder of the cache and renames the binaries into place. */
export async function buildGoBinaries(
  build: GoBuild,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const go = await findOnPath('go', env);
  if (!go) throw build.noGo('`go` was not found on PATH');
  const goVersion = await readGoVersion(go, env);
  if (goVersion && goVersion.major === 1 && goVersion.minor < MIN_GO_MINOR) {
    throw build.noGo(`\`${go}\` is Go ${goVersion.text}, too old to build it`);
  }

  await mkdir(build.cacheDir, { recursive: true });
  await removeAbandonedBuilds(build.cacheDir);
  // Each build gets its own folder and is renamed into place when complete: a killed build never leaves a half
  // binary, and two concurrent builds each rename whole binaries (the last one wins, both are good).
  const buildDir = await mkdtemp(join(build.cacheDir, `${BUILD_DIR_PREFIX}${process.pid}-`));
  const { command, args, env: buildEnv } = goInstallCommand(build, buildDir, env);
  const extraEnv = Object.entries({ ...build.env, GOBIN: buildDir }).map(([key, value]) => `${key}=${value}`);

  log(`Building ${build.what} from the Go module proxy (first run only, ${build.duration})…`);
  log(`  ${command} ${args.join(' ')}  (${extraEnv.join(' ')})`);
  const started = Date.now();
  const ticker = setInterval(
    () => log(`still building ${build.what} (${formatElapsed(Date.now() - started)})…`),
    PROGRESS_INTERVAL_MS,
  );
  try {
    await runStreaming(go, args, buildEnv, (line) => log(`  ${line}`));
    for (const [from, to] of Object.entries(build.binaries)) {
      await rename(join(buildDir, from), join(build.cacheDir, to));
    }
    const built = Object.values(build.binaries).map((name) => join(build.cacheDir, name));
    log(`Built ${build.what} in ${formatElapsed(Date.now() - started)}: ${built.join(', ')}`);
  } finally {
    clearInterval(ticker);
    await rm(buildDir, { recursive: true, force: true });
  }
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

export async function isExecutableFile(path: string): Promise<boolean> {
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
