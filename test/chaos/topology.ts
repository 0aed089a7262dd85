/**
 * The chaos topology, every part a real process on loopback: a Temporal server (production on PostgreSQL, or the dev
 * server), Redis, several worker processes (3 by default) and two gateway processes on that Redis, and the scripted
 * model server (in this process). Each part can be killed and started again the way production loses it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { Redis } from 'ioredis';
import { bundleWorkflowCode } from '@temporalio/worker';
import { freePort, startDevServer, type DevServer } from '../../worker/dev-server';
import { threadBundleOptions } from '../../worker/index';
import { locateTemporalCli } from '../../worker/temporal-cli';
import { locateTemporalServer, TEMPORAL_SERVER_VERSION } from '../../worker/temporal-server';
import { startChild, type ChildProcessHandle } from '../support/child-process';
import type { ModelServer } from '../support/model-server';
import { startProductionTemporal, type ProductionTemporal } from '../support/production-temporal';
import { startRedis, type RedisServer } from '../support/redis';
import type { ThreadConfigInput } from '../../protocol/thread-config';

const workerScript = fileURLToPath(new URL('../support/worker-process.ts', import.meta.url));
const gatewayScript = fileURLToPath(new URL('../support/gateway-process.ts', import.meta.url));
const TASK_QUEUE = 'chaos';
/** Start-ups take long on a loaded 2-core machine. */
const READY_TIMEOUT_MS = 180_000;

export interface TopologyOptions {
  temporal: 'production' | 'dev';
  /** Worker processes (at least 2: one is killed while the others serve). */
  workers: number;
  /** Settings of the threads gateway 2 creates (threads started through gateway 1 get the defaults). */
  gateway2ThreadConfig?: ThreadConfigInput;
  model: ModelServer;
  log: (line: string) => void;
}

/** A process slot: the running process, or null while it is down or starting. */
interface Slot {
  name: string;
  process: ChildProcessHandle | null;
  /** True while the harness itself has it down (killed, restarting). */
  down: boolean;
}

export interface Topology {
  temporalKind: 'production' | 'dev';
  temporalAddress: string;
  /** `1.29.1 (production, PostgreSQL 15)` and the like. */
  temporalDescription: string;
  redis: RedisServer;
  gatewayUrls: readonly string[];
  workflowBundlePath: string;
  toolLogPath: string;
  workerCount: number;
  /** A Temporal client of the harness itself (for the checks). */
  temporal(): Promise<Client>;
  workerUp(index: number): boolean;
  gatewayUp(index: number): boolean;
  killWorker(index: number): Promise<void>;
  startWorker(index: number): Promise<void>;
  killGateway(index: number): Promise<void>;
  startGateway(index: number): Promise<void>;
  /** Stops Redis (SIGTERM: it writes its append-only file) and starts it again on the same port and data. */
  restartRedis(): Promise<void>;
  /**
   * Redis loses its data: writes are paused (CLIENT PAUSE WRITE: no event is published meanwhile), `record` reads
   * what Redis holds, then Redis is SIGKILLed and started again empty on the same port.
   */
  wipeRedis(record?: (redis: Redis) => Promise<void>): Promise<void>;
  /** Production only: SIGKILLs the Temporal server; `startTemporal` brings it back on the same database. */
  killTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  /** Stops everything and removes the temporary files. */
  stop(): Promise<void>;
}

export async function startTopology(opts: TopologyOptions): Promise<Topology> {
  const { log } = opts;
  const dir = await mkdtemp(join(tmpdir(), 'threadline-chaos-'));
  const cleanups: (() => Promise<void>)[] = [() => rm(dir, { recursive: true, force: true })];
  const stopAll = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => log(`clean-up: ${String(err)}`));
  };
  try {
    const cliPath = await locateTemporalCli({ log });
    let production: ProductionTemporal | null = null;
    let dev: DevServer | null = null;
    let temporalDescription: string;
    if (opts.temporal === 'production') {
      const binaries = await locateTemporalServer({ log });
      log('starting PostgreSQL and the Temporal server');
      production = await startProductionTemporal({ binaries, cliPath, log });
      cleanups.push(() => production!.stop());
      temporalDescription = `Temporal server ${TEMPORAL_SERVER_VERSION} (production build, deploy/temporal/production.yaml) on PostgreSQL`;
    } else {
      dev = await startDevServer({ cliPath, port: 0, headless: true });
      cleanups.push(() => dev!.stop());
      temporalDescription = 'Temporal dev server (in memory)';
    }
    const temporalAddress = production?.address ?? dev!.address;
    const serverVersion = await describeServer(temporalAddress);
    temporalDescription += `, server reports ${serverVersion}`;

    // Append-only file: a restarted Redis has the streams back, as a production Redis with persistence does.
    const redis = await startRedis({ persist: true });
    cleanups.push(() => redis.stop());

    const { code } = await bundleWorkflowCode({ ...threadBundleOptions, logger: quietLogger });
    const workflowBundlePath = join(dir, 'workflow-bundle.js');
    await writeFile(workflowBundlePath, code);
    const toolLogPath = join(dir, 'tools.jsonl');

    const workerEnv = {
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      REDIS_URL: redis.url,
      OPENAI_BASE_URL: opts.model.url,
      THREADLINE_WORKFLOW_BUNDLE: workflowBundlePath,
      THREADLINE_TEST_AGENTS: 'tester,admin',
      THREADLINE_TEST_TOOL_LOG: toolLogPath,
    };
    const gatewayPorts = [await freePort(), await freePort()];
    const gatewayEnv = (port: number, i: number): Record<string, string> => ({
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      REDIS_URL: redis.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      THREADLINE_TEST_AGENTS: 'tester,admin',
      ...(i === 1 &&
        opts.gateway2ThreadConfig && { THREADLINE_THREAD_CONFIG: JSON.stringify(opts.gateway2ThreadConfig) }),
    });
    const workers: Slot[] = Array.from({ length: opts.workers }, (_, i) => i).map((i) => ({
      name: `worker ${i + 1}`,
      process: null,
      down: true,
    }));
    const gateways: Slot[] = [0, 1].map((i) => ({ name: `gateway ${i + 1}`, process: null, down: true }));
    let stopping = false;

    /** Starts the slot's process, trying again while a dependency (Temporal, mid-restart) refuses it. */
    const launch = async (slot: Slot, script: string, env: Record<string, string>, ready: RegExp) => {
      for (let attempt = 1; !stopping; attempt++) {
        try {
          const child = await startChild(script, env, { name: slot.name, ready, readyTimeoutMs: READY_TIMEOUT_MS });
          slot.process = child;
          slot.down = false;
          void child.exited.then((code) => {
            if (slot.process === child && !slot.down && !stopping) {
              log(`${slot.name} exited on its own (${code ?? 'signal'}); its output:\n${child.output().slice(-3_000)}`);
            }
          });
          return;
        } catch (err) {
          if (attempt >= 20) throw err;
          log(`${slot.name} did not start (attempt ${attempt}), trying again: ${String(err).split('\n')[0]}`);
          await sleep(Math.min(10_000, 500 * 2 ** attempt));
        }
      }
    };
    const kill = async (slot: Slot) => {
      slot.down = true;
      const child = slot.process;
      slot.process = null;
      await child?.kill('SIGKILL');
    };
    const startWorker = (i: number) => launch(workers[i], workerScript, workerEnv, /^READY$/m);
    const startGateway = (i: number) =>
      launch(gateways[i], gatewayScript, gatewayEnv(gatewayPorts[i], i), /^READY (http:\/\/\S+)$/m);
    cleanups.push(async () => {
      stopping = true;
      await Promise.all([...workers, ...gateways].map(kill));
    });

    log(`starting ${opts.workers} workers and 2 gateways`);
    await Promise.all([...workers.map((_, i) => startWorker(i)), startGateway(0), startGateway(1)]);

    let client: Client | null = null;
    cleanups.push(async () => {
      await client?.connection.close();
    });

    return {
      temporalKind: opts.temporal,
      temporalAddress,
      temporalDescription,
      redis,
      gatewayUrls: gatewayPorts.map((port) => `http://127.0.0.1:${port}`),
      workflowBundlePath,
      toolLogPath,
      workerCount: opts.workers,
      temporal: async () => {
        client ??= new Client({ connection: await Connection.connect({ address: temporalAddress }) });
        return client;
      },
      workerUp: (i) => !workers[i].down,
      gatewayUp: (i) => !gateways[i].down,
      killWorker: (i) => kill(workers[i]),
      startWorker,
      killGateway: (i) => kill(gateways[i]),
      startGateway,
      restartRedis: () => redis.restart(),
      wipeRedis: async (record) => {
        const connection = new Redis(redis.url, { maxRetriesPerRequest: 1 });
        connection.on('error', () => undefined);
        try {
          // Long enough for the reading; the pause ends with the process anyway.
          await connection.call('CLIENT', 'PAUSE', '120000', 'WRITE');
          await record?.(connection);
        } finally {
          connection.disconnect();
        }
        await redis.restartEmpty();
      },
      killTemporal: async () => {
        if (!production)
          throw new Error('Only the production Temporal server is killed; the dev server keeps no data.');
        await production.killServer();
      },
      startTemporal: async () => {
        await production?.startServer();
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** The version the server reports (`GetSystemInfo`). */
async function describeServer(address: string): Promise<string> {
  const connection = await Connection.connect({ address });
  try {
    const info = await connection.workflowService.getSystemInfo({});
    return info.serverVersion || 'no version';
  } finally {
    await connection.close();
  }
}

const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };
