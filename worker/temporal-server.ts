/**
 * Finds the production Temporal server and its SQL tool, building both from the Go module proxy on first use: the
 * same server release that docker-compose.yml deploys, run by the tests and the chaos harness on PostgreSQL
 * (`THREADLINE_TEST_TEMPORAL=production`). `npm start` keeps the embedded dev server (`temporal-cli.ts`).
 *
 * `go.temporal.io/server` has no `replace` directive, so `go install` builds `cmd/server` and `cmd/tools/sql` at the
 * pinned tag, with the flags of Temporal's own release build (no cgo, `disable_grpc_modules`), into
 * `~/.cache/threadline/temporal-server-1.29.1/` as `temporal-server` and `temporal-sql-tool` (their names in
 * Temporal's images). The SQL tool embeds the schema files (`--schema-name postgresql/v12/temporal`).
 *
 * @example
 * const { server, sqlTool } = await locateTemporalServer({ log: console.log });
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildGoBinaries, cachedBinaries, goInstallCommand, isExecutableFile, threadlineCacheDir } from './go-build';
import type { GoBuild } from './go-build';

/** The newest 1.29 patch the Go module proxy serves; docker-compose.yml and deploy/temporal/ pin the same. */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

export interface TemporalServerBinaries {
  /** `temporal-server`: `temporal-server --root <dir> --config <dir> --env <name> start`. */
  server: string;
  /** `temporal-sql-tool`: creates the databases and sets up or updates their schemas. */
  sqlTool: string;
}

export interface LocateTemporalServerOptions {
  /** Receives progress lines; defaults to stderr. */
  log?: (line: string) => void;
  /** Build the binaries when they are not found (default true). */
  build?: boolean;
  /** TEMPORAL_SERVER_BIN, TEMPORAL_SQL_TOOL_BIN, XDG_CACHE_HOME, PATH and the Go build's variables. */
  env?: NodeJS.ProcessEnv;
}

/** `${XDG_CACHE_HOME ?? ~/.cache}/threadline/temporal-server-1.29.1`. */
export function temporalServerCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return threadlineCacheDir(`temporal-server-${TEMPORAL_SERVER_VERSION.replace(/^v/, '')}`, env);
}

/** The command that builds both binaries into `gobin`, exported so it can be checked without a long build. */
export function temporalServerBuildCommand(
  gobin: string,
  env: NodeJS.ProcessEnv = process.env,
): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  return goInstallCommand(temporalServerBuild(env), gobin, env);
}

/**
 * Returns the paths of `temporal-server` and `temporal-sql-tool`: `TEMPORAL_SERVER_BIN` / `TEMPORAL_SQL_TOOL_BIN`
 * if set, else the cached build, else builds them (first run only, several minutes).
 */
export async function locateTemporalServer(opts: LocateTemporalServerOptions = {}): Promise<TemporalServerBinaries> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const env = opts.env ?? process.env;

  const overrides = { server: env.TEMPORAL_SERVER_BIN, sqlTool: env.TEMPORAL_SQL_TOOL_BIN };
  if (overrides.server || overrides.sqlTool) {
    for (const [variable, path] of [
      ['TEMPORAL_SERVER_BIN', overrides.server],
      ['TEMPORAL_SQL_TOOL_BIN', overrides.sqlTool],
    ] as const) {
      if (!path || !(await isExecutableFile(path))) {
        throw new Error(
          `${variable} is ${path ? `set to "${path}", but no executable file is there` : 'not set'}. ` +
            'Set both TEMPORAL_SERVER_BIN and TEMPORAL_SQL_TOOL_BIN to Temporal server ' +
            `${TEMPORAL_SERVER_VERSION} binaries (temporal-server, temporal-sql-tool), or neither to use the cached ` +
            `build in ${temporalServerCacheDir(env)}.`,
        );
      }
    }
    return { server: overrides.server!, sqlTool: overrides.sqlTool! };
  }

  const build = temporalServerBuild(env);
  const found = { server: join(build.cacheDir, 'temporal-server'), sqlTool: join(build.cacheDir, 'temporal-sql-tool') };
  if (await cachedBinaries(build)) return found;
  if (opts.build === false) {
    throw new Error(
      `The Temporal server ${TEMPORAL_SERVER_VERSION} is not built yet (looked in ${build.cacheDir}). ` +
        'Run `npx tsx worker/temporal-server.ts` once (~10 min), or set TEMPORAL_SERVER_BIN and TEMPORAL_SQL_TOOL_BIN.',
    );
  }
  await buildGoBinaries(build, log, env);
  return found;
}

function temporalServerBuild(env: NodeJS.ProcessEnv): GoBuild {
  return {
    what: `the Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL tool`,
    packages: ['cmd/server', 'cmd/tools/sql'].map(
      (cmd) => `${TEMPORAL_SERVER_MODULE}/${cmd}@${TEMPORAL_SERVER_VERSION}`,
    ),
    // As Temporal's Makefile builds its releases: a static binary, without gRPC's optional xDS/observability modules.
    flags: ['-tags', 'disable_grpc_modules'],
    env: { CGO_ENABLED: '0' },
    binaries: { server: 'temporal-server', sql: 'temporal-sql-tool' },
    cacheDir: temporalServerCacheDir(env),
    duration: '~10 min on 2 cores',
    noGo: (reason) =>
      new Error(
        `Cannot build the Temporal server: ${reason}. Do one of:\n` +
          '  - install Go ≥ 1.22 (the module asks for 1.25; Go fetches that toolchain itself unless ' +
          'GOTOOLCHAIN=local), then run again (the first build takes ~10 min);\n' +
          '  - set TEMPORAL_SERVER_BIN and TEMPORAL_SQL_TOOL_BIN to existing temporal-server and temporal-sql-tool ' +
          `${TEMPORAL_SERVER_VERSION} binaries;\n` +
          '  - leave THREADLINE_TEST_TEMPORAL unset to test on the dev server instead.',
      ),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const { server, sqlTool } = await locateTemporalServer();
    console.log(`${server}\n${sqlTool}`);
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 1;
  }
}
