/**
 * The production Temporal server: built from the Go module proxy with Temporal's release flags into the cache
 * (checked with a stand-in `go`: the real build takes ~10 minutes), and docker-compose.yml deploying the same
 * version, flags and configuration that CI tests (THREADLINE_TEST_TEMPORAL=production).
 */
import { access, chmod, constants, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEMPORAL_CLI_VERSION } from '../../worker/temporal-cli';
import { QUEUE_READS_PER_SECOND, queueReadRate } from '../../worker/dev-server';
import {
  locateTemporalServer,
  TEMPORAL_SERVER_VERSION,
  temporalServerBuildCommand,
} from '../../worker/temporal-server';

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFile(join(root, path), 'utf8');
const quiet = () => undefined;

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'threadline-temporal-server-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function executable(name: string): Promise<string> {
  const path = join(await mkdtemp(join(scratch, 'bin-')), name);
  await writeFile(path, '#!/bin/sh\necho fake\n');
  await chmod(path, 0o755);
  return path;
}

describe('locateTemporalServer', () => {
  it('builds cmd/server and cmd/tools/sql with the release flags and renames them into the cache', async () => {
    // A stand-in `go` that records how it was called and writes the two binaries `go install` would.
    const bin = await mkdtemp(join(scratch, 'fake-go-'));
    const calls = join(bin, 'calls.txt');
    await writeFile(
      join(bin, 'go'),
      [
        '#!/bin/sh',
        'if [ "$1" = version ]; then echo "go version go1.26.8 linux/amd64"; exit 0; fi',
        `echo "$* CGO_ENABLED=$CGO_ENABLED GOBIN=$GOBIN" >> ${calls}`,
        'echo go.temporal.io/server/temporal >&2',
        'for b in server sql; do printf "#!/bin/sh\\necho $b\\n" > "$GOBIN/$b" && chmod +x "$GOBIN/$b"; done',
        '',
      ].join('\n'),
    );
    await chmod(join(bin, 'go'), 0o755);
    const cacheHome = await mkdtemp(join(scratch, 'cache-'));
    const env = { PATH: `${bin}:/usr/bin:/bin`, XDG_CACHE_HOME: cacheHome };
    const lines: string[] = [];

    const found = await locateTemporalServer({ env, log: (line) => lines.push(line) });

    const cacheDir = join(cacheHome, 'threadline', 'temporal-server-1.29.1');
    expect(found).toEqual({ server: join(cacheDir, 'temporal-server'), sqlTool: join(cacheDir, 'temporal-sql-tool') });
    await access(found.server, constants.X_OK);
    await access(found.sqlTool, constants.X_OK);
    expect((await readdir(cacheDir)).sort()).toEqual(['temporal-server', 'temporal-sql-tool']);
    const [call] = (await readFile(calls, 'utf8')).trim().split('\n');
    expect(call).toBe(
      `install -v -tags disable_grpc_modules go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION} ` +
        `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION} CGO_ENABLED=0 ` +
        call!.slice(call!.indexOf('GOBIN=')),
    );
    expect(call).toContain(`GOBIN=${cacheDir}/.build-`);
    expect(lines[0]).toMatch(/^Building the Temporal server v1\.29\.1 and its SQL tool from the Go module proxy/);
    expect(lines).toContain('  go.temporal.io/server/temporal');

    // Found in the cache from now on: no second build.
    await expect(locateTemporalServer({ env, log: quiet })).resolves.toEqual(found);
    expect((await readFile(calls, 'utf8')).trim().split('\n')).toHaveLength(1);
  });

  it('uses TEMPORAL_SERVER_BIN and TEMPORAL_SQL_TOOL_BIN when both name executables', async () => {
    const server = await executable('temporal-server');
    const sqlTool = await executable('temporal-sql-tool');
    const env = { TEMPORAL_SERVER_BIN: server, TEMPORAL_SQL_TOOL_BIN: sqlTool, PATH: '' };

    await expect(locateTemporalServer({ env, log: quiet })).resolves.toEqual({ server, sqlTool });
  });

  it('names the override that is missing or points nowhere', async () => {
    const server = await executable('temporal-server');
    const missing = join(scratch, 'nowhere', 'temporal-sql-tool');

    const unset = await locateTemporalServer({ env: { TEMPORAL_SERVER_BIN: server }, log: quiet }).catch((e) => e);
    expect((unset as Error).message).toMatch(/^TEMPORAL_SQL_TOOL_BIN is not set\. Set both/);
    const wrong = await locateTemporalServer({
      env: { TEMPORAL_SERVER_BIN: server, TEMPORAL_SQL_TOOL_BIN: missing },
      log: quiet,
    }).catch((e) => e);
    expect((wrong as Error).message).toContain(`TEMPORAL_SQL_TOOL_BIN is set to "${missing}", but no executable`);
  });

  it('says how to get Go, or do without the build, when go is not on PATH', async () => {
    const env = { PATH: await mkdtemp(join(scratch, 'empty-')), XDG_CACHE_HOME: await mkdtemp(join(scratch, 'c-')) };

    const error = (await locateTemporalServer({ env, log: quiet }).catch((e) => e)) as Error;
    expect(error.message).toMatch(/^Cannot build the Temporal server: `go` was not found on PATH/);
    expect(error.message).toContain('TEMPORAL_SERVER_BIN and TEMPORAL_SQL_TOOL_BIN');
    expect(error.message).toContain('THREADLINE_TEST_TEMPORAL');
  });

  it('does not build when told not to', async () => {
    const env = { PATH: '', XDG_CACHE_HOME: await mkdtemp(join(scratch, 'c-')) };

    const error = (await locateTemporalServer({ env, build: false, log: quiet }).catch((e) => e)) as Error;
    expect(error.message).toContain('is not built yet');
    expect(error.message).toContain('npx tsx worker/temporal-server.ts');
  });
});

describe('what docker-compose.yml deploys is what CI tests', () => {
  it('builds the image from the same packages, versions and flags as worker/temporal-server.ts', async () => {
    const dockerfile = await read('deploy/temporal/Dockerfile');
    const { args, env } = temporalServerBuildCommand('/gobin', {});
    const packages = args.filter((arg) => arg.includes('@'));

    expect(packages).toHaveLength(2);
    for (const pkg of packages) expect(dockerfile).toContain(pkg);
    expect(env.CGO_ENABLED).toBe('0');
    expect(dockerfile).toMatch(/CGO_ENABLED=0 go install -tags disable_grpc_modules/);
    expect(args.slice(2, 4)).toEqual(['-tags', 'disable_grpc_modules']);
    expect(dockerfile).toContain(`github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`);
    // The configuration and scripts the tests use go into the image, and it starts with the same flags.
    expect(dockerfile).toMatch(
      /COPY production\.yaml dynamicconfig\.yaml setup-schema\.sh create-namespace\.sh \/etc\/temporal\/config\//,
    );
    expect(dockerfile).toContain('"--config", "config", "--env", "production", "--allow-no-auth", "start"');
  });

  it('runs that image for the schema, the server and the namespace, on PostgreSQL 15 as Debian 12 ships it', async () => {
    const compose = await read('docker-compose.yml');
    const version = TEMPORAL_SERVER_VERSION.replace(/^v/, '');
    const temporalImages = compose.match(/image: threadline-temporal:\S+\n\s+build: deploy\/temporal\n/g) ?? [];

    expect(temporalImages).toHaveLength(3);
    for (const image of temporalImages) expect(image).toContain(`threadline-temporal:${version}\n`);
    expect(compose).toContain("command: ['sh', '/etc/temporal/config/setup-schema.sh']");
    expect(compose).toContain("command: ['sh', '/etc/temporal/config/create-namespace.sh']");
    expect(compose).toContain('image: postgres:15\n');
    expect(compose).not.toMatch(/temporalio\/(auto-setup|server|admin-tools)/);
  });

  it('configures PostgreSQL persistence and visibility, and ids that fit its VARCHAR(255) columns', async () => {
    const config = await read('deploy/temporal/production.yaml');
    const dynamic = await read('deploy/temporal/dynamicconfig.yaml');

    expect(config.startsWith('# enable-template\n')).toBe(true);
    expect(config.match(/pluginName: postgres12\n/g)).toHaveLength(2);
    expect(config).toContain('visibilityStore: visibility');
    expect(dynamic).toMatch(/limit\.maxIDLength:\n {2}- value: 255\n/);
    expect(dynamic).toMatch(/system\.enableActivityEagerExecution:\n {2}- value: true\n/);
    // The queue readers' rate, as the dev server gets it (worker/dev-server.ts).
    for (const key of Object.keys(queueReadRate(QUEUE_READS_PER_SECOND))) {
      expect(dynamic).toMatch(new RegExp(`${key.replace('.', '\\.')}:\\n {2}- value: ${QUEUE_READS_PER_SECOND}\\n`));
    }
  });
});
