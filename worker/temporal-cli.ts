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
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildGoBinaries, goInstallCommand, isExecutableFile, threadlineCacheDir, type GoBuild } from './go-build';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';

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
  return threadlineCacheDir(`temporal-${TEMPORAL_CLI_VERSION.replace(/^v/, '')}`, env);
}

/** The command that builds the CLI into `gobin`, exported so it can be checked without a 6-minute build. */
export function temporalCliBuildCommand(
  gobin: string,
  env: NodeJS.ProcessEnv = process.env,
): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  return goInstallCommand(temporalCliBuild(env), gobin, env);
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

  const build = temporalCliBuild(env);
  const cached = join(build.cacheDir, 'temporal');
  if (await isExecutableFile(cached)) return cached;
  if (opts.build === false) {
    throw new Error(
      `The Temporal CLI is not built yet (looked for ${cached}). ` +
        'Run `npm run temporal:setup` once (~5-10 min), or set TEMPORAL_CLI to an existing temporal binary.',
    );
  }

  await buildGoBinaries(build, log, env);
  return cached;
}

function temporalCliBuild(env: NodeJS.ProcessEnv): GoBuild {
  return {
    what: `the Temporal CLI ${TEMPORAL_CLI_VERSION}`,
    packages: [`${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`],
    binaries: { temporal: 'temporal' },
    cacheDir: temporalCliCacheDir(env),
    duration: '~5-10 min on 2 cores',
    noGo: noGoError,
  };
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
