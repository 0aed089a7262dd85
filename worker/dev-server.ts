/**
 * Runs `temporal server start-dev` as a child process and waits until its namespace answers.
 *
 * @example
 * const server = await startDevServer({ cliPath: await locateTemporalCli(), port: 0, headless: true });
 * // ... Connection.connect({ address: server.address }) ...
 * await server.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { searchAttributeTypeName, threadSearchAttributes } from '../protocol/search-attributes';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;
const OUTPUT_HEAD_LINES = 20;
const OUTPUT_TAIL_LINES = 40;
/** Start-ups on ports this module picked, when the last one failed in a way another port or moment can fix. */
const START_ATTEMPTS = 3;

/**
 * How often per second one history shard's queue readers may load tasks (transfer, timer, visibility) in the servers
 * Threadline starts: Temporal's default is 20, sized for clusters of hundreds of shards. The dev server has one
 * shard, so every task that goes through the transfer queue (a new thread's first workflow task, the task after an
 * activity or a signal) waited for the limiter as soon as the queue was busy: 25 ms p50 from `WorkflowTaskScheduled`
 * to a poller taking it, 2 ms with this (docs/performance.md, "Task queue reads").
 */
export const QUEUE_READS_PER_SECOND = 1_000;

/** Temporal's default rate for each of a shard's queue readers, sized for clusters of hundreds of shards. */
export const TEMPORAL_QUEUE_READS_PER_SECOND = 20;

/** The dynamic config that sets the queue readers' rate (transfer, timer, visibility) to `perSecond` per shard. */
export function queueReadRate(perSecond: number): Record<string, number> {
  return {
    'history.transferProcessorMaxPollRPS': perSecond,
    'history.timerProcessorMaxPollRPS': perSecond,
    'history.visibilityProcessorMaxPollRPS': perSecond,
  };
}

/**
 * Server settings Threadline wants on by default. Eager activity execution hands the step activity back in the
 * response to the workflow task that scheduled it, saving a task-queue round trip per step (the SDK asks for it by
 * default; the server must allow it). The queue readers' rate: {@link QUEUE_READS_PER_SECOND}. Enable the same on
 * production clusters (deploy/temporal/dynamicconfig.yaml).
 *
 * The search-attribute caches stay on, as on any production server (Temporal's default). The CLI's `start-dev` turns
 * them off (`system.forceSearchAttributesCacheRefreshOnRead`) so that an attribute added at run time is usable at
 * once; every start with attributes and every upsert then reads the cluster metadata and the namespace from the
 * database first (the namespace under a lock every such read shares): 0.6–0.9 ms per upsert command, on the path of
 * the workflow task's completion (docs/performance.md, "The search-attribute cache"). With the caches on, attributes
 * added at run time (`threadline setup` in a new namespace) are accepted once the namespace cache refreshed (every
 * 2 s), and the client resends a start refused meanwhile (client/connect.ts); the `--search-attribute` flags below
 * register Threadline's before the server serves.
 */
export const defaultDynamicConfig: Record<string, string | number | boolean> = {
  'system.enableActivityEagerExecution': true,
  'system.forceSearchAttributesCacheRefreshOnRead': false,
  ...queueReadRate(QUEUE_READS_PER_SECOND),
};

export interface DevServerOptions {
  /** Path of the `temporal` binary, from `locateTemporalCli()`. */
  cliPath: string;
  /** gRPC port; 0 picks a free loopback port. Default 7233. */
  port?: number;
  /** Web UI port; 0 picks a free one. Default `port + 1000` (a free port when `port` is 0). */
  uiPort?: number;
  /** Persist to `<dataDir>/temporal.db`; in memory when unset. */
  dataDir?: string;
  /** Namespace to create and wait for. Default `default`. */
  namespace?: string;
  /** Receives the server's output lines. */
  log?: (line: string) => void;
  /** Skip the Web UI. */
  headless?: boolean;
  /** Dynamic config overrides, e.g. `{ 'limit.historyCount.suggestContinueAsNew': 50 }` to test limits. */
  dynamicConfig?: Record<string, string | number | boolean>;
}

export interface DevServer {
  /** gRPC address, `127.0.0.1:<port>`. */
  address: string;
  /** Web UI URL, unless headless. */
  uiUrl?: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

/**
 * Starts a dev server and resolves once `namespace` can be described over gRPC.
 *
 * With `port: 0` the ports are picked here, and the server picks its internal ones itself: another process may bind
 * one of them first. A start-up that fails that way (or panics, which hides the reason) is tried again on new ports,
 * up to 3 times; a port the caller named is never changed.
 */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      const retry = opts.port === 0 && attempt < START_ATTEMPTS && err instanceof StartupExit && err.transient;
      if (!retry) throw err;
      opts.log?.(
        `The Temporal dev server failed to start (attempt ${attempt} of ${START_ATTEMPTS}); trying new ports.`,
      );
    }
  }
}

/** The server exited before its namespace answered; `transient` when a port clash or a panic is the likely cause. */
class StartupExit extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
  ) {
    super(message);
  }
}

async function startOnce(opts: DevServerOptions): Promise<DevServer> {
  const namespace = opts.namespace ?? 'default';
  const port = opts.port === 0 ? await freePort() : (opts.port ?? 7233);
  const uiPort = opts.headless ? undefined : await resolveUiPort(opts.uiPort, opts.port, port);
  const address = `${HOST}:${port}`;
  const uiUrl = uiPort === undefined ? undefined : `http://${HOST}:${uiPort}`;

  const args = ['server', 'start-dev', '--ip', HOST, '--port', String(port)];
  args.push(...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort)]));
  if (opts.dataDir) {
    await mkdir(opts.dataDir, { recursive: true });
    args.push('--db-filename', join(opts.dataDir, 'temporal.db'));
  }
  args.push('--namespace', namespace, '--log-level', 'warn');
  // Threads upsert these; the dev server registers them in every namespace it creates (again on each start: a no-op).
  for (const key of threadSearchAttributes) {
    args.push('--search-attribute', `${key.name}=${searchAttributeTypeName(key.type)}`);
  }
  for (const [key, value] of Object.entries({ ...defaultDynamicConfig, ...opts.dynamicConfig })) {
    // The CLI parses each value as JSON: strings need their quotes.
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }

  const child = spawn(opts.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = new OutputExcerpt();
  let stopping = false;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (!line.trim()) return;
      output.push(line);
      // Shutdown prints a burst of poller warnings that mean nothing to the user.
      if (!stopping) opts.log?.(line);
    });
  }
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(err.message));
    // 'close', not 'exit': by then every output line, including the reason it stopped, has been read.
    child.once('close', (code, signal) => resolve(signal ?? `exit code ${code}`));
  });
  // A parent that exits without stop() would otherwise leave an orphan holding the ports.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopping = true;
    process.off('exit', killOnExit);
    stopped ??= stopChild(child, exited);
    return stopped;
  };

  const abort = new AbortController();
  const exitedEarly = exited.then((reason) => {
    abort.abort();
    const text = output.text();
    const command = [opts.cliPath, ...args].join(' ');
    throw new StartupExit(describeEarlyExit(reason, text, { port, uiPort, command }), isTransientExit(text));
  });
  try {
    await Promise.race([waitForNamespace(address, namespace, abort.signal), exitedEarly]);
  } catch (err) {
    abort.abort();
    await stop();
    throw err;
  }
  exitedEarly.catch(() => {}); // After readiness an exit is either stop() or a crash, reported below.
  void exited.then((reason) => {
    if (!stopping) opts.log?.(`The Temporal dev server at ${address} exited unexpectedly (${reason}).`);
  });
  return { address, uiUrl, stop };
}

/**
 * A TCP port on 127.0.0.1 that is free and stays out of the kernel's hands for a while: listen on port 0, connect to
 * it and close the accepted side first, so the port sits in TIME_WAIT. Linux then gives it to no `bind(:0)` and no
 * outgoing connection (other tests' clients open many), while a server that sets `SO_REUSEADDR` (Go, Node, Redis,
 * PostgreSQL) can still bind it. The Temporal CLI reserves its own internal ports the same way.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer((accepted) => {
      accepted.destroy(); // This side closes first: the TIME_WAIT is the port's, not the probe's.
      server.close();
    });
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      if (!port) {
        server.close();
        reject(new Error('Could not read the port of the free-port probe.'));
        return;
      }
      const probe = createConnection({ host: HOST, port });
      probe.once('error', (err) => {
        server.close();
        reject(err);
      });
      probe.once('close', () => resolve(port));
      probe.resume();
    });
  });
}

async function resolveUiPort(requested: number | undefined, requestedPort: number | undefined, port: number) {
  if (requested === undefined) {
    return requestedPort === 0 || port + 1000 > 65535 ? freePort() : port + 1000;
  }
  return requested === 0 ? freePort() : requested;
}

async function waitForNamespace(address: string, namespace: string, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  // Probe TCP first: gRPC's reconnect backoff would otherwise add a second or more to start-up.
  while (!(await canConnect(address))) {
    if (signal.aborted) return;
    if (Date.now() > deadline) throw notReadyError(address, namespace, 'the gRPC port never accepted connections');
    await sleep(50);
  }
  // Lazy, so that close() in `finally` also releases a connection that never became ready.
  const connection = Connection.lazy({ address });
  try {
    while (!signal.aborted) {
      try {
        await connection.withDeadline(Date.now() + 5_000, () =>
          connection.workflowService.describeNamespace({ namespace }),
        );
        return;
      } catch (err) {
        lastError = err;
      }
      if (Date.now() > deadline) throw notReadyError(address, namespace, String(lastError));
      await sleep(100);
    }
  } finally {
    await connection.close();
  }
}

function notReadyError(address: string, namespace: string, reason: string): Error {
  return new Error(
    `The Temporal dev server at ${address} was not ready within ${READY_TIMEOUT_MS / 1000}s ` +
      `(namespace "${namespace}"): ${reason}`,
  );
}

/** Whether a TCP connection to `host:port` opens now. */
export function canConnect(address: string): Promise<boolean> {
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

/**
 * The first and the last lines of the server's output: a Go panic names its reason on its first line and follows it
 * with every goroutine's stack, so a tail alone would lose the reason.
 */
class OutputExcerpt {
  private readonly head: string[] = [];
  private readonly tail: string[] = [];
  private omitted = 0;

  push(line: string): void {
    if (this.head.length < OUTPUT_HEAD_LINES) {
      this.head.push(line);
      return;
    }
    this.tail.push(line);
    if (this.tail.length > OUTPUT_TAIL_LINES) {
      this.tail.shift();
      this.omitted++;
    }
  }

  text(): string {
    const gap = this.omitted ? [`… ${this.omitted} lines omitted …`] : [];
    return [...this.head, ...gap, ...this.tail].join('\n');
  }
}

/** A port taken between being picked and bound, or a panic (whose reason may be that): worth a start on new ports. */
function isTransientExit(output: string): boolean {
  return /address already in use|can't set (frontend|UI) port|^panic:/m.test(output);
}

function describeEarlyExit(
  reason: string,
  output: string,
  ctx: { port: number; uiPort: number | undefined; command: string },
): string {
  let hint = '';
  if (/can't set frontend port/.test(output)) {
    hint = ` Port ${ctx.port} (gRPC) is already in use: stop whatever holds it or set TEMPORAL_PORT to another port.`;
  } else if (/can't set UI port/.test(output)) {
    hint = ` Port ${ctx.uiPort} (Web UI) is already in use: stop whatever holds it or set TEMPORAL_UI_PORT to another port.`;
  } else if (/address already in use/.test(output)) {
    hint = ` A port is already in use (gRPC ${ctx.port}, UI ${ctx.uiPort ?? 'none'}): set TEMPORAL_PORT / TEMPORAL_UI_PORT.`;
  }
  return `The Temporal dev server exited during start-up (${reason}).${hint}\nCommand: ${ctx.command}\nOutput:\n${output}`;
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}
