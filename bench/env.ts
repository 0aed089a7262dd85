/**
 * The bench's own world, all on loopback: an in-memory headless dev server, a scripted model server at zero delay,
 * a MemoryBus, an in-process worker and a client. `close()` undoes it all.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  type BundleOptions,
  type LogEntry,
  type WorkerOptions,
} from '@temporalio/worker';
import { pino } from 'pino';
import { MemoryBus } from '../bus/memory';
import type { ThreadEvent } from '../protocol/events';
import { connect, type AgentClient, type ThreadlineClient } from '../client/connect';
import {
  startModelServer,
  type ModelServer,
  type ReceivedRequest,
  type ScriptedReply,
} from '../test/support/model-server';
import { defaultDynamicConfig, startDevServer, type DevServerOptions } from '../worker/dev-server';
import { createWorker, threadBundleOptions, type CreateWorkerOptions } from '../worker/index';
import { locateTemporalCli } from '../worker/temporal-cli';
import { createLogger } from '../observability';
import { summarizeAgents } from '../agents/summary';
import { serveGateway, type ServedGateway } from '../gateway/serve';
import { benchAgent } from './agent';
import { captureWorkerOptions, startFloor, type FloorWorld } from './floor/world';

export { benchAgent };

/** A short reply in five word-sized chunks, sent at once. */
export const quickReply: ScriptedReply = { text: 'Hello from the bench model.' };

/** A model request and when it arrived (`performance.now()`, the clock every bench uses). */
export interface Arrival {
  req: ReceivedRequest;
  at: number;
}

/**
 * Watches the model server: each request is timestamped on arrival and answered by `reply`. Samples find their
 * request by a marker text unique to the sample, so a stray request can never be mistaken for the one measured.
 */
export class ModelProbe {
  reply: (req: ReceivedRequest) => ScriptedReply = () => quickReply;
  private readonly waiting = new Set<{ marker: string; resolve: (arrival: Arrival) => void }>();

  constructor(readonly server: ModelServer) {
    server.setResponder((req) => {
      const at = performance.now();
      const text = JSON.stringify(req.messages);
      for (const waiter of this.waiting) {
        if (!text.includes(waiter.marker)) continue;
        this.waiting.delete(waiter);
        waiter.resolve({ req, at });
      }
      return this.reply(req);
    });
  }

  /** Resolves with the next request whose messages contain `marker`. */
  arrival(marker: string): Promise<Arrival> {
    return new Promise((resolve) => this.waiting.add({ marker, resolve }));
  }
}

/** Worker warnings and errors (SDK and Core) so far, by message: a bench diffs it to see what its load provoked. */
export const workerLog = new Map<string, number>();

/** Each message is printed the first few times; after that it is only counted. */
const printedPerMessage = 5;

function logToStderr(entry: LogEntry): void {
  const seen = (workerLog.get(entry.message) ?? 0) + 1;
  workerLog.set(entry.message, seen);
  if (seen > printedPerMessage) return;
  const more = seen === printedPerMessage ? ' (further ones counted, not printed)' : '';
  // A failed workflow task says why (its failure, from Core): the message alone does not tell a bug from a guard.
  const failure = entry.meta?.failure === undefined ? '' : ` ${String(entry.meta.failure).slice(0, 500)}`;
  process.stderr.write(`worker ${entry.level}: ${entry.message}${failure}${more}\n`);
}

export interface BenchEnv {
  client: ThreadlineClient;
  agent: AgentClient;
  probe: ModelProbe;
  modelUrl: string;
  cliVersion: string;
  /** The dev server's dynamic config: Threadline's defaults plus the experiment's. */
  serverConfig: Record<string, string | number | boolean>;
  /** The dev server's address (loopback). */
  address: string;
  /** The bare-Temporal floor's worker and client, on the same server with Threadline's worker options. */
  floor: FloorWorld;
  /** The options Threadline's `createWorker` passed to `Worker.create`, and the cache size they came to. */
  workerOptions: WorkerOptions;
  maxCachedWorkflows: number;
  close(): Promise<void>;
}

/** Knobs for tuning experiments; the bench itself runs with the defaults. */
export interface BenchEnvOptions {
  dynamicConfig?: DevServerOptions['dynamicConfig'];
  bundle?: Omit<BundleOptions, 'workflowsPath'>;
  worker?: CreateWorkerOptions['worker'];
}

export async function startBenchEnv(options: BenchEnvOptions = {}): Promise<BenchEnv> {
  try {
    // Quiet worker: warnings and errors only, Core's included (forwarded: it would print them on stdout, into the
    // JSON), all on stderr and counted in `workerLog`. Signals end the process (see run.ts).
    Runtime.install({
      logger: new DefaultLogger('WARN', logToStderr),
      telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
      shutdownSignals: [],
    });
  } catch {
    // An experiment installed its own runtime first (to export metrics, say).
  }
  const cliPath = await locateTemporalCli();
  const { stdout } = await promisify(execFile)(cliPath, ['--version']);
  const serverConfig = { ...defaultDynamicConfig, ...options.dynamicConfig };
  const [server, model, { code }] = await Promise.all([
    startDevServer({ cliPath, port: 0, headless: true, dynamicConfig: serverConfig }),
    startModelServer(),
    bundleWorkflowCode({ ...threadBundleOptions, logger: quietLogger, ...options.bundle }),
  ]);
  const bus = new MemoryBus();
  const taskQueue = `bench-${randomUUID()}`;
  const capture = captureWorkerOptions();
  const worker = await createWorker({
    agents: [benchAgent],
    bus,
    address: server.address,
    taskQueue,
    models: { openaiBaseUrl: model.url, openaiApiKey: 'bench' },
    workflowBundle: { code },
    shutdownGraceTimeMs: 1_000,
    worker: options.worker,
  }).finally(capture.restore);
  const running = worker.run();
  const client = await connect({ bus, address: server.address, taskQueue });
  const workerOptions = capture.options();
  const floor = await startFloor({
    address: server.address,
    client: client.temporal,
    threadlineOptions: workerOptions,
  });
  return {
    client,
    agent: client.agent(benchAgent.id),
    probe: new ModelProbe(model),
    modelUrl: model.url,
    cliVersion: stdout.trim(),
    serverConfig,
    address: server.address,
    floor,
    workerOptions,
    maxCachedWorkflows: worker.worker.options.maxCachedWorkflows,
    async close() {
      await floor.close();
      await client.close().catch(() => undefined);
      await worker.shutdown().catch(() => undefined);
      await running.catch(() => undefined);
      await model.close().catch(() => undefined);
      await bus.close();
      await server.stop();
    },
  };
}

/** When each event of interest first reached a subscriber, until the run's `finish`. */
export interface TurnEvents {
  firstDelta: number;
  /** `step-start` is the step activity's first publish: its code is running. */
  stepStarts: number[];
  stepFinishes: number[];
  finish: number;
}

/** Reads a subscription until the first `finish`, stamping arrivals with `performance.now()`. */
export async function watchTurn(
  stream: AsyncIterable<ThreadEvent>,
  onEvent: (event: ThreadEvent) => void = () => undefined,
): Promise<TurnEvents> {
  let firstDelta = NaN;
  const stepStarts: number[] = [];
  const stepFinishes: number[] = [];
  for await (const event of stream) {
    const at = performance.now();
    onEvent(event);
    if (event.type === 'text-delta' && Number.isNaN(firstDelta)) firstDelta = at;
    if (event.type === 'step-start') stepStarts.push(at);
    if (event.type === 'step-finish') stepFinishes.push(at);
    if (event.type === 'error') throw new Error(`The run failed: ${JSON.stringify(event.payload)}`);
    if (event.type === 'finish') return { firstDelta, stepStarts, stepFinishes, finish: at };
  }
  throw new Error('The subscription ended before the run finished.');
}

/** Fails a sample that hangs instead of hanging the bench. */
export async function withTimeout<T>(promise: Promise<T>, what: string, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A `performance.now()` reading on the wall clock (epoch ms), to compare with history event times. */
export const wallClock = (t: number): number => performance.timeOrigin + t;

/**
 * For gateways served in the bench process: request lines are written as `npm start` writes them (pino, synchronous),
 * but to /dev/null instead of stdout, where the bench's JSON goes.
 */
export const gatewayLogger = createLogger({
  level: 'info',
  destination: pino.destination({ dest: '/dev/null', sync: true }),
}).child({
  component: 'gateway',
});

/** A gateway on the bench's client, serving the bench agent on a free loopback port, its request lines to /dev/null. */
export function serveBenchGateway(env: Pick<BenchEnv, 'client'>): Promise<ServedGateway> {
  return serveGateway({
    client: env.client,
    agents: summarizeAgents([benchAgent]),
    port: 0,
    logger: gatewayLogger,
    // The limiter still counts every request (its cost is the gateway's), but never refuses one: an ingest run faster
    // than the default 200 requests/s would otherwise measure the limit, not the gateway.
    rateLimit: { perSecond: 1_000_000, burst: 1_000_000 },
  });
}

const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };
