import { access, chmod, constants, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, startDevServer } from '../../worker/dev-server';
import { locateTemporalCli, TEMPORAL_CLI_VERSION } from '../../worker/temporal-cli';

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'threadline-dev-server-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('locateTemporalCli', () => {
  it('returns TEMPORAL_CLI when it names an executable', async () => {
    const fake = join(scratch, 'my-temporal');
    await writeFile(fake, '#!/bin/sh\necho temporal\n');
    await chmod(fake, 0o755);
    vi.stubEnv('TEMPORAL_CLI', fake);

    await expect(locateTemporalCli({ log: () => {} })).resolves.toBe(fake);
  });

  it('says how to fix a TEMPORAL_CLI that points nowhere', async () => {
    vi.stubEnv('TEMPORAL_CLI', join(scratch, 'missing', 'temporal'));

    const error = await locateTemporalCli({ log: () => {} }).catch((err: Error) => err);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(`TEMPORAL_CLI is set to "${join(scratch, 'missing', 'temporal')}"`);
    expect((error as Error).message).toContain('TEMPORAL_ADDRESS');
  });

  it('says how to get Go when it must build and go is not on PATH', async () => {
    const emptyBin = await mkdtemp(join(scratch, 'bin-'));
    vi.stubEnv('TEMPORAL_CLI', '');
    vi.stubEnv('XDG_CACHE_HOME', await mkdtemp(join(scratch, 'cache-')));
    vi.stubEnv('PATH', emptyBin);

    const error = await locateTemporalCli({ log: () => {} }).catch((err: Error) => err);
    expect((error as Error).message).toMatch(/install Go ≥ 1\.22/);
    expect((error as Error).message).toContain('TEMPORAL_CLI');
    expect((error as Error).message).toContain('TEMPORAL_ADDRESS');
  });
  it('builds with `go install -v` into a temporary GOBIN and renames the binary into the cache', async () => {
    // A stand-in `go` that records how it was called: the real build takes minutes.
    const bin = await mkdtemp(join(scratch, 'fake-go-'));
    const calls = join(bin, 'calls.txt');
    await writeFile(
      join(bin, 'go'),
      [
        '#!/bin/sh',
        'if [ "$1" = version ]; then echo "go version go1.23.4 linux/amd64"; exit 0; fi',
        `echo "$* GOBIN=$GOBIN" >> ${calls}`,
        'echo github.com/temporalio/cli/internal/temporalcli >&2',
        'printf "#!/bin/sh\\necho built\\n" > "$GOBIN/temporal" && chmod +x "$GOBIN/temporal"',
        '',
      ].join('\n'),
    );
    await chmod(join(bin, 'go'), 0o755);
    const cacheHome = await mkdtemp(join(scratch, 'cache-'));
    vi.stubEnv('TEMPORAL_CLI', '');
    vi.stubEnv('XDG_CACHE_HOME', cacheHome);
    vi.stubEnv('PATH', `${bin}:/usr/bin:/bin`);
    const lines: string[] = [];

    const path = await locateTemporalCli({ log: (line) => lines.push(line) });

    const cacheDir = join(cacheHome, 'threadline', 'temporal-1.5.1');
    expect(path).toBe(join(cacheDir, 'temporal'));
    await access(path, constants.X_OK);
    expect(await readdir(cacheDir)).toEqual(['temporal']);
    const [call] = (await readFile(calls, 'utf8')).trim().split('\n');
    expect(call).toMatch(
      new RegExp(
        `^install -v github\\.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION} GOBIN=${cacheDir}/\\.build-`,
      ),
    );
    expect(lines[0]).toMatch(/^Building the Temporal CLI v1\.5\.1 from the Go module proxy \(first run only/);
    expect(lines).toContain('  github.com/temporalio/cli/internal/temporalcli');

    // Found in the cache from now on: no second build.
    await expect(locateTemporalCli({ log: (line) => lines.push(line) })).resolves.toBe(path);
    expect((await readFile(calls, 'utf8')).trim().split('\n')).toHaveLength(1);
  });
});

describe('startDevServer', () => {
  let cliPath: string;

  beforeAll(async () => {
    cliPath = await locateTemporalCli({ build: false });
  });

  it('serves the namespace on a free port until stopped', { timeout: 90_000 }, async () => {
    const server = await startDevServer({
      cliPath,
      port: 0,
      headless: true,
      dataDir: join(scratch, 'data'),
      namespace: 'threads',
    });
    try {
      expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(server.uiUrl).toBeUndefined();
      const connection = await Connection.connect({ address: server.address });
      try {
        const described = await connection.workflowService.describeNamespace({ namespace: 'threads' });
        expect(described.namespaceInfo?.name).toBe('threads');
      } finally {
        await connection.close();
      }
    } finally {
      await server.stop();
    }
    await expect(canConnect(server.address)).resolves.toBe(false);
  });

  it('keeps the first lines of a start-up panic and tries new ports, never a port the caller named', async () => {
    // A stand-in CLI that panics the way Go does: the reason first, then a long stack.
    const fake = join(scratch, 'panicking-temporal');
    const calls = join(scratch, 'panicking-calls.txt');
    const stack = Array.from({ length: 80 }, (_, i) => `goroutine frame ${i}`).join('\\n');
    await writeFile(
      fake,
      `#!/bin/sh\necho "$*" >> ${calls}\necho "panic: listen tcp: address already in use" >&2\nprintf '${stack}\\n' >&2\nexit 2\n`,
    );
    await chmod(fake, 0o755);
    const lines: string[] = [];

    const error = await startDevServer({ cliPath: fake, port: 0, headless: true, log: (l) => lines.push(l) }).catch(
      (err: Error) => err,
    );
    const message = (error as Error).message;
    expect(message).toContain('exited during start-up (exit code 2)');
    expect(message).toContain('panic: listen tcp: address already in use');
    expect(message).toMatch(/… \d+ lines omitted …/);
    expect(message).toContain('goroutine frame 79');
    const ports = (await readFile(calls, 'utf8'))
      .trim()
      .split('\n')
      .map((args) => /--port (\d+)/.exec(args)?.[1]);
    expect(ports).toHaveLength(3);
    expect(new Set(ports).size).toBe(3);
    expect(lines.filter((l) => l.includes('trying new ports'))).toHaveLength(2);

    await rm(calls);
    const port = await freePort();
    await startDevServer({ cliPath: fake, port, headless: true }).catch(() => {});
    expect((await readFile(calls, 'utf8')).trim().split('\n')).toHaveLength(1);
  });

  it('names the busy port and the variable that moves it', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const sockets = new Set<Socket>();
    const blocker = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const error = await startDevServer({ cliPath, port, headless: true }).catch((err: Error) => err);
      expect((error as Error).message).toContain(`Port ${port} (gRPC) is already in use`);
      expect((error as Error).message).toContain('TEMPORAL_PORT');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});

function canConnect(address: string): Promise<boolean> {
  const [host, port] = address.split(':');
  return new Promise((resolve) => {
    const socket = createConnection({ host, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
