/**
 * A Threadline gateway as a process of its own, for bench/gateway-memory.ts: the RSS and heap it reports are the
 * gateway's alone. It serves the bench agent on Redis (the worker runs in the bench's process) with the gateway
 * settings of its environment (`THREADLINE_*`, the defaults for those unset), counts the SSE subscribers it drops, by
 * reason, and answers the parent's messages (IPC):
 *
 *   { type: 'measure', gc }  → { type: 'measured', rss, heapTotal, heapUsed, …, subscribers, dropped }
 *                              (after two full GCs when `gc`)
 *   { type: 'exit' }         → closes and exits
 *
 * Settings (environment): TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, REDIS_URL. Run with `--expose-gc`. With
 * THREADLINE_BENCH_WORKER_MODEL_URL set, the process also runs the worker (on that model server), as `npm start`
 * does: the figures are then the gateway's and the worker's together.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { writeHeapSnapshot } from 'node:v8';
import { Client, Connection } from '@temporalio/client';
import { summarizeAgents } from '../agents/summary';
import { RedisBus } from '../bus/redis';
import { connect } from '../client/connect';
import { gatewaySettingsFromEnv } from '../config/settings';
import { serveGateway } from '../gateway/serve';
import { createLogger, metrics } from '../observability';
import { createWorker } from '../worker/index';
import { benchAgent } from './agent';

export interface GatewayFigures {
  rss: number;
  /** V8's heap as committed from the OS, used or not. */
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

export type GatewayMemoryRequest =
  { type: 'measure'; gc: boolean } | { type: 'snapshot'; path: string } | { type: 'exit' };
export type GatewayMemoryReply =
  | { type: 'ready'; url: string; maxSubscriberBufferBytes: number; subscriberStallMs: number }
  | { type: 'snapshot-written'; path: string }
  | (GatewayFigures & {
      type: 'measured';
      /** Open SSE subscriptions (`threadline_sse_subscribers`). */
      subscribers: number;
      /** Subscribers dropped so far, by the reason the gateway logged. */
      dropped: { bufferFull: number; stalled: number };
    });

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: bench/gateway-memory.ts starts this process with it.`);
  return value;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('Run bench/gateway-memory-process.ts with node --expose-gc.');
const send = (reply: GatewayMemoryReply) => process.send!(reply);

const dropped = { bufferFull: 0, stalled: 0 };
const log = createLogger({
  level: 'warn',
  destination: {
    write(line: string) {
      const { reason } = JSON.parse(line) as { reason?: string };
      if (reason === 'buffer-full') dropped.bufferFull += 1;
      else if (reason === 'stalled') dropped.stalled += 1;
      else process.stderr.write(`gateway-memory gateway: ${line}`);
    },
  },
});

const settings = gatewaySettingsFromEnv(process.env);
const connection = await Connection.connect({ address: required('TEMPORAL_ADDRESS') });
const bus = new RedisBus(required('REDIS_URL'));
const client = await connect({ bus, client: new Client({ connection }), taskQueue: required('TEMPORAL_TASK_QUEUE') });
// `npm start`'s topology: the worker in the gateway's process (bench/gateway-fuzz-memory.ts measures both).
const workerModelUrl = process.env.THREADLINE_BENCH_WORKER_MODEL_URL;
const worker = workerModelUrl
  ? await createWorker({
      agents: [benchAgent],
      bus,
      address: required('TEMPORAL_ADDRESS'),
      taskQueue: required('TEMPORAL_TASK_QUEUE'),
      models: { openaiBaseUrl: workerModelUrl, openaiApiKey: 'bench' },
      shutdownGraceTimeMs: 1_000,
    })
  : undefined;
const workerRunning = worker?.run();
const server = await serveGateway({
  client,
  agents: summarizeAgents([benchAgent]),
  port: 0,
  logger: log,
  ...settings,
  // The bench's requests all come from one address; this measures memory, not the rate limit.
  rateLimit: { perSecond: 0, burst: 0 },
});

async function measure(collect: boolean): Promise<GatewayMemoryReply> {
  if (collect) {
    gc!();
    await sleep(50);
    gc!();
  }
  const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
  const subscribers = (await metrics.sseSubscribers.get()).values[0]?.value ?? 0;
  return { type: 'measured', rss, heapTotal, heapUsed, external, arrayBuffers, subscribers, dropped: { ...dropped } };
}

process.on('message', (request: GatewayMemoryRequest) => {
  void (async () => {
    if (request.type === 'measure') send(await measure(request.gc));
    if (request.type === 'snapshot') {
      gc!();
      send({ type: 'snapshot-written', path: writeHeapSnapshot(request.path) });
    }
    if (request.type === 'exit') {
      await server.close();
      await worker?.shutdown();
      await workerRunning;
      await client.close();
      await bus.close();
      await connection.close();
      process.exit(0);
    }
  })().catch((err: Error) => {
    process.stderr.write(`gateway-memory gateway: ${err.stack}\n`);
    process.exit(1);
  });
});

send({
  type: 'ready',
  url: server.url,
  maxSubscriberBufferBytes: settings.maxSubscriberBufferBytes,
  subscriberStallMs: settings.subscriberStallMs,
});
