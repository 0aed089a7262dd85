/**
 * The production Temporal server in the loop: PostgreSQL (`postgres.ts`), its schemas set up by the server's SQL tool
 * (`deploy/temporal/setup-schema.sh`), `temporal-server` with `deploy/temporal/production.yaml` on free loopback
 * ports, the namespace registered (`deploy/temporal/create-namespace.sh`) and Threadline's search attributes added
 * (what `threadline setup` does). The same scripts and configuration as docker-compose.yml. The server can be
 * SIGKILLed and started again on the same database and ports (the chaos harness). No test-runner imports.
 *
 * @example
 * const temporal = await startProductionTemporal({ binaries: await locateTemporalServer(), cliPath });
 * // ... Connection.connect({ address: temporal.address }) ...
 * await temporal.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { canConnect } from '../../worker/dev-server';
import { registerSearchAttributes } from '../../client/search-attributes';
import type { TemporalServerBinaries } from '../../worker/temporal-server';
import { startPostgres, type PostgresServer } from './postgres';
import { runCommand } from './run-command';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 15_000;
const OUTPUT_TAIL_LINES = 60;
/** Temporal's `system.namespaceCacheRefreshInterval` (default; deploy/temporal/dynamicconfig.yaml keeps it). */
const NAMESPACE_CACHE_REFRESH_MS = 2_000;
const GRPC_NOT_FOUND = 5;
/** The ports deploy/temporal/production.yaml reads, one free loopback port each. */
const PORT_VARIABLES = [
  'FRONTEND_GRPC_PORT',
  'FRONTEND_HTTP_PORT',
  'FRONTEND_MEMBERSHIP_PORT',
  'HISTORY_GRPC_PORT',
  'HISTORY_MEMBERSHIP_PORT',
  'MATCHING_GRPC_PORT',
  'MATCHING_MEMBERSHIP_PORT',
  'WORKER_GRPC_PORT',
  'WORKER_MEMBERSHIP_PORT',
] as const;

export interface ProductionTemporalOptions {
  binaries: TemporalServerBinaries;
  /** The Temporal CLI (`locateTemporalCli()`), for the namespace script. */
  cliPath: string;
  /** Default `default`. */
  namespace?: string;
  /** Receives a line when the server exits unexpectedly. */
  log?: (line: string) => void;
  /** Receives every line the server and PostgreSQL print (warnings and errors: both log little at their levels). */
  output?: (line: string) => void;
}

export interface ProductionTemporal {
  /** Frontend gRPC address, `127.0.0.1:<port>`. */
  address: string;
  namespace: string;
  postgres: PostgresServer;
  /** SIGKILLs the Temporal server process (PostgreSQL keeps running); resolves once it is gone. */
  killServer(): Promise<void>;
  /** Starts the server again on the same database and ports; resolves once the frontend answers. */
  startServer(): Promise<void>;
  /** Stops the server (SIGTERM, SIGKILL after 15 s) and PostgreSQL, and removes the database files. */
  stop(): Promise<void>;
}

/** Starts PostgreSQL and the Temporal server, and prepares the namespace for Threadline. */
export async function startProductionTemporal(opts: ProductionTemporalOptions): Promise<ProductionTemporal> {
  const namespace = opts.namespace ?? 'default';
  const log = opts.log ?? (() => undefined);
  const output = opts.output ?? (() => undefined);
  const postgres = await startPostgres({ log: (line) => output(`postgres: ${line}`) });
  let server: ServerProcess | undefined;
  try {
    const ports: Record<string, string> = {};
    for (const name of PORT_VARIABLES) ports[name] = String(await freeLowPort(Object.values(ports)));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...ports,
      POSTGRES_SEEDS: postgres.host,
      DB_PORT: String(postgres.port),
      POSTGRES_USER: postgres.user,
      POSTGRES_PWD: postgres.password,
      BIND_ON_IP: HOST,
      DYNAMIC_CONFIG_FILE_PATH: `${projectRoot}deploy/temporal/dynamicconfig.yaml`,
      TEMPORAL_SQL_TOOL: opts.binaries.sqlTool,
    };
    const address = `${HOST}:${ports.FRONTEND_GRPC_PORT}`;

    await runCommand('sh', ['deploy/temporal/setup-schema.sh'], { cwd: projectRoot, env });
    const start = async () => {
      server = await startServer(opts.binaries.server, env, address, log, output);
    };
    await start();
    await runCommand('sh', ['deploy/temporal/create-namespace.sh'], {
      cwd: projectRoot,
      env: { ...process.env, TEMPORAL_CLI: opts.cliPath, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace },
    });
    await prepareNamespace(address, namespace);

    return {
      address,
      namespace,
      postgres,
      killServer: async () => {
        await server?.kill();
      },
      startServer: start,
      stop: async () => {
        await server?.stop();
        await postgres.stop();
      },
    };
  } catch (err) {
    await server?.stop();
    await postgres.stop();
    throw err;
  }
}

interface ServerProcess {
  kill(): Promise<void>;
  stop(): Promise<void>;
}

async function startServer(
  binary: string,
  env: NodeJS.ProcessEnv,
  address: string,
  log: (line: string) => void,
  output: (line: string) => void,
): Promise<ServerProcess> {
  // --allow-no-auth: no authorizer, as in compose (the server warns once without the flag).
  const args = [
    '--root',
    projectRoot,
    '--config',
    'deploy/temporal',
    '--env',
    'production',
    '--allow-no-auth',
    'start',
  ];
  const child = spawn(binary, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  let quiet = false;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      // Errors carry Go stack traces of a few kilobytes: the message is at the start.
      tail.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
      if (tail.length > OUTPUT_TAIL_LINES) tail.shift();
      if (!quiet) output(`temporal-server: ${line}`);
    });
  }
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(err.message));
    child.once('close', (code, signal) => resolve(signal ?? `exit code ${code}`));
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const end = async (signal: NodeJS.Signals) => {
    // Shutdown and a kill print a burst of connection errors that mean nothing to the reader.
    quiet = true;
    process.off('exit', killOnExit);
    await stopChild(child, exited, signal);
  };
  const handle = { kill: () => end('SIGKILL'), stop: () => end('SIGTERM') };

  const abort = new AbortController();
  try {
    await Promise.race([
      waitForFrontend(address, abort.signal),
      exited.then((reason) => {
        throw new Error(
          `The Temporal server exited during start-up (${reason}).\nCommand: ${binary} ${args.join(' ')}\n` +
            `Output:\n${tail.join('\n')}`,
        );
      }),
    ]);
  } catch (err) {
    await handle.stop();
    throw err;
  } finally {
    abort.abort();
  }
  void exited.then((reason) => {
    if (!quiet)
      log(`The Temporal server at ${address} exited unexpectedly (${reason}). Its output:\n${tail.join('\n')}`);
  });
  return handle;
}

/**
 * A loopback port below 32768 that was free a moment ago. Temporal keeps each service's membership port in a
 * PostgreSQL SMALLINT column, so ports from the ephemeral range (32768-60999 on Linux) make the server exit at start;
 * Linux never hands out ports below that range on its own, so nothing else takes it meanwhile.
 */
async function freeLowPort(taken: string[]): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.includes(String(port)) && (await canListen(port))) return port;
  }
  throw new Error('Found no free loopback port between 20000 and 32000 for the Temporal server.');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, HOST, () => probe.close(() => resolve(true)));
  });
}

/** Resolves once the frontend answers `GetSystemInfo` (it then reaches its database). */
async function waitForFrontend(address: string, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await canConnect(address))) {
    if (signal.aborted) return;
    if (Date.now() > deadline) throw new Error(`The Temporal server's frontend never listened on ${address}.`);
    await sleep(100);
  }
  const connection = Connection.lazy({ address });
  let lastError: unknown;
  try {
    while (!signal.aborted) {
      try {
        await connection.withDeadline(Date.now() + 5_000, () => connection.workflowService.getSystemInfo({}));
        return;
      } catch (err) {
        lastError = err;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `The Temporal server at ${address} did not answer within ${READY_TIMEOUT_MS / 1000}s: ${String(lastError)}`,
        );
      }
      await sleep(200);
    }
  } finally {
    await connection.close();
  }
}

/**
 * Adds Threadline's search attributes, as `threadline setup` does, once the new namespace has reached the server's
 * namespace caches; then waits until the attributes have too.
 */
async function prepareNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      try {
        await registerSearchAttributes(connection, namespace);
        break;
      } catch (err) {
        // Each service reads namespaces from a cache refreshed every 2 s; until then the namespace is "not found".
        if (!isGrpcServiceError(err) || err.code !== GRPC_NOT_FOUND || Date.now() > deadline) throw err;
        await sleep(250);
      }
    }
  } finally {
    await connection.close();
  }
  // The attributes live in the namespace record (SQL visibility), which history and matching read through that same
  // cache, with no API to observe it: a thread upserting them sooner fails its workflow task once. Two refreshes.
  await sleep(2 * NAMESPACE_CACHE_REFRESH_MS + 500);
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}
