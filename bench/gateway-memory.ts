/**
 * (k) Gateway memory with stalled subscribers (issue #14, part 5): the RSS and V8 heap of a gateway process of its own
 * (bench/gateway-memory-process.ts: on Redis, as in production, with the default settings but for room for one more
 * subscriber per thread) while `subscribers` SSE clients of one thread read their response head and then never read
 * again, and a long answer streams to that thread. Each stalled subscriber may make the gateway hold at most
 * `THREADLINE_MAX_SUBSCRIBER_BUFFER_BYTES` of events before it is dropped (or after `THREADLINE_SUBSCRIBER_STALL_MS`
 * without progress); once they are gone, the memory should come back.
 *
 * A round: connect the stalled subscribers (raw sockets) and one that reads; send; sample the gateway's memory and
 * time a `/health` request every 250 ms until the reader has the whole answer and every stalled subscriber was
 * dropped (every fourth sample after two full GCs, the others without); then close the stalled sockets. Settled
 * figures (after two full GCs in the gateway) before the first round, and in each round with the subscribers
 * connected, after they were dropped, after their sockets closed and again 30 s later.
 * More than one round shows whether anything accumulates. The events are large (the thread's ids are long, as in
 * test/gateway/slow-subscribers.test.ts), so a stalled subscriber outgrows the kernel's socket buffers and reaches
 * the gateway's bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { RedisBus } from '../bus/redis';
import type { ThreadTarget } from '../protocol/schemas';
import type { ScriptedReply } from '../test/support/model-server';
import { startRedis } from '../test/support/redis';
import { createWorker, workflowsPath } from '../worker/index';
import { benchAgent, withTimeout, type BenchEnv } from './env';
import { eventsUrl, sendOverHttp, subscribeStamped } from './gateway-bus';
import type { GatewayFigures, GatewayMemoryReply, GatewayMemoryRequest } from './gateway-memory-process';
import { quiet, replyOf } from './memory';
import { summarize, type Summary } from './stats';
import { mapLimit } from './temporal-helpers';

export interface GatewayMemorySizes {
  /** Stalled subscribers per round, all on one thread. */
  subscribers: number;
  /** Text chunks of the answer: one event each. */
  chunks: number;
  rounds: number;
}

export interface StallRound {
  /** Settled, the stalled subscribers connected and nothing sent yet. */
  connected: GatewayFigures;
  /** The highest of each figure sampled while the answer streamed and the stalled subscribers were dropped (no GC). */
  peak: GatewayFigures;
  /** The same over the samples taken after two full GCs (one a second): what was live, garbage aside. */
  peakLive: GatewayFigures;
  /** Settled, once every stalled subscriber was dropped (their sockets still open on the client's side). */
  afterDrops: GatewayFigures;
  /** Settled, after the client closed every stalled socket. */
  afterClose: GatewayFigures;
  /** Settled, `IDLE_MS` later, the gateway idle meanwhile: what it gives back given time. */
  afterIdle: GatewayFigures;
  dropped: { bufferFull: number; stalled: number };
  /** Stalled subscribers the gateway still served when the wait for drops ended (0 expected). */
  notDropped: number;
  /** Events of the answer and their JSON bytes, as the reading subscriber received them. */
  answerEvents: number;
  answerBytes: number;
  /** The send to the last stalled subscriber dropped (or the wait's end). */
  seconds: number;
  /** `GET /health` meanwhile, one every 250 ms. */
  healthMs: Summary;
}

export interface GatewayMemoryResult {
  subscribers: number;
  chunks: number;
  maxSubscriberBufferBytes: number;
  subscriberStallMs: number;
  /** Settled, after one short answer streamed through the gateway. */
  started: GatewayFigures;
  rounds: StallRound[];
}

const script = fileURLToPath(new URL('./gateway-memory-process.ts', import.meta.url));
const marker = 'gateway-memory';
const SAMPLE_EVERY_MS = 250;
/** Every this many samples, one after two full GCs. */
const SETTLED_SAMPLE_EVERY = 4;
const IDLE_MS = 30_000;

export async function benchGatewayMemory(
  env: BenchEnv,
  sizes: GatewayMemorySizes,
  progress: (line: string) => void = () => undefined,
): Promise<GatewayMemoryResult> {
  const redis = await startRedis();
  const taskQueue = `bench-gateway-memory-${randomUUID()}`;
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet });
  const workerBus = new RedisBus(redis.url);
  const worker = await createWorker({
    agents: [benchAgent],
    bus: workerBus,
    address: env.address,
    taskQueue,
    models: { openaiBaseUrl: env.modelUrl, openaiApiKey: 'bench' },
    workflowBundle: { code },
    shutdownGraceTimeMs: 1_000,
  });
  const running = worker.run();
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      REDIS_URL: redis.url,
      // The stalled subscribers and the one that reads, all on one thread.
      THREADLINE_MAX_SUBSCRIBERS_PER_THREAD: String(sizes.subscribers + 1),
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const answer = Array.from({ length: sizes.chunks }, (_, i) => String(i % 10));
  const reply = env.probe.reply;
  env.probe.reply = (req) =>
    JSON.stringify(req.messages).includes(marker)
      ? ({ text: answer, chunkDelayMs: 1 } satisfies ScriptedReply)
      : reply(req);
  try {
    const ready = await withTimeout(replyOf<Ready>(child, 'ready'), 'the gateway process to start', 120_000);
    // Warm: one short answer through the gateway, so what it builds on first use is in the baseline.
    const warm = freshTarget();
    const warmReader = await subscribeStamped(eventsUrl(ready.url, warm), { until: (e) => e.type === 'finish' });
    await sendOverHttp(ready.url, 'warm up', warm);
    await withTimeout(warmReader.received, 'the warm-up answer', 120_000);
    const started = figures(await measure(child, true));
    const rounds: StallRound[] = [];
    for (let round = 1; round <= sizes.rounds; round++) {
      progress(`  round ${round}/${sizes.rounds}: ${sizes.subscribers} stalled subscribers, ${sizes.chunks} chunks…`);
      rounds.push(await stallRound(child, ready, sizes, progress));
    }
    child.send({ type: 'exit' } satisfies GatewayMemoryRequest);
    return {
      subscribers: sizes.subscribers,
      chunks: sizes.chunks,
      maxSubscriberBufferBytes: ready.maxSubscriberBufferBytes,
      subscriberStallMs: ready.subscriberStallMs,
      started,
      rounds,
    };
  } finally {
    env.probe.reply = reply;
    await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(5_000)]);
    child.kill('SIGKILL');
    process.off('exit', killOnExit);
    await worker.shutdown().catch(() => undefined);
    await running.catch(() => undefined);
    await workerBus.close();
    await redis.stop();
  }
}

type Ready = Extract<GatewayMemoryReply, { type: 'ready' }>;
type Measured = Extract<GatewayMemoryReply, { type: 'measured' }>;

async function stallRound(
  child: ChildProcess,
  ready: Ready,
  sizes: GatewayMemorySizes,
  progress: (line: string) => void,
): Promise<StallRound> {
  const target = longTarget();
  const url = eventsUrl(ready.url, target);
  const sockets = await mapLimit(
    Array.from({ length: sizes.subscribers }, (_, i) => i),
    50,
    () => stalledSubscriber(url),
  );
  const connectedMeasure = await measure(child, true);
  progress(`    connected: ${describe(connectedMeasure)}`);
  const droppedBefore = connectedMeasure.dropped;
  const droppedSince = (m: Measured) =>
    m.dropped.bufferFull - droppedBefore.bufferFull + m.dropped.stalled - droppedBefore.stalled;

  const reader = await subscribeStamped(url, { until: (e) => e.type === 'finish' });
  const peak = figures(connectedMeasure);
  const peakLive = figures(connectedMeasure);
  const health: number[] = [];
  let last = connectedMeasure;
  let sampling = true;
  const sampler = (async () => {
    for (let sample = 1; sampling; sample++) {
      const settled = sample % SETTLED_SAMPLE_EVERY === 0;
      last = await measure(child, settled);
      raise(settled ? peakLive : peak, last);
      // Each settled sample on stderr too: a round cut short still leaves its figures.
      if (settled) progress(`    live: ${describe(last)}; dropped ${droppedSince(last)}`);
      const t0 = performance.now();
      await (await fetch(`${ready.url}/health`)).text();
      health.push(performance.now() - t0);
      await sleep(SAMPLE_EVERY_MS);
    }
  })();

  const sentAt = performance.now();
  await sendOverHttp(ready.url, `${marker} ${randomUUID()}`, target);
  const events = await withTimeout(reader.received, 'the long answer to reach the reading subscriber', 900_000);
  // A stalled subscriber that has not reached its buffer's bound is dropped at the stall bound at the latest.
  const deadline = Date.now() + ready.subscriberStallMs + 60_000;
  while (droppedSince(last) < sizes.subscribers && Date.now() < deadline) await sleep(SAMPLE_EVERY_MS);
  const seconds = (performance.now() - sentAt) / 1000;
  sampling = false;
  await sampler;

  const afterDropsMeasure = await measure(child, true);
  for (const socket of sockets) socket.destroy();
  const closedBy = Date.now() + 60_000;
  let afterCloseMeasure = await measure(child, false);
  while (afterCloseMeasure.subscribers > 0 && Date.now() < closedBy) {
    await sleep(SAMPLE_EVERY_MS);
    afterCloseMeasure = await measure(child, false);
  }
  afterCloseMeasure = await measure(child, true);
  await sleep(IDLE_MS);
  const afterIdle = figures(await measure(child, true));
  return {
    connected: figures(connectedMeasure),
    peak,
    peakLive,
    afterDrops: figures(afterDropsMeasure),
    afterClose: figures(afterCloseMeasure),
    afterIdle,
    dropped: {
      bufferFull: afterDropsMeasure.dropped.bufferFull - droppedBefore.bufferFull,
      stalled: afterDropsMeasure.dropped.stalled - droppedBefore.stalled,
    },
    notDropped: sizes.subscribers - droppedSince(afterDropsMeasure),
    answerEvents: events.length,
    answerBytes: events.reduce((sum, { event }) => sum + Buffer.byteLength(JSON.stringify(event)), 0),
    seconds: Math.round(seconds * 10) / 10,
    healthMs: summarize(health),
  };
}

/** An SSE request on a raw socket that reads the response head and then never reads again (`pause()`). */
function stalledSubscriber(url: string): Promise<Socket> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: hostname, port: Number(port) });
    socket.once('error', reject);
    socket.once('connect', () => socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`));
    socket.once('data', (head) => {
      socket.pause();
      socket.off('error', reject);
      // The gateway closing it (the drop) may reset it.
      socket.on('error', () => undefined);
      if (head.toString('latin1').startsWith('HTTP/1.1 200')) resolve(socket);
      else reject(new Error(`Not a stream: ${head.toString('latin1').slice(0, 200)}`));
    });
  });
}

async function measure(child: ChildProcess, gc: boolean): Promise<Measured> {
  const answer = replyOf<GatewayMemoryReply>(child, 'measured');
  child.send({ type: 'measure', gc } satisfies GatewayMemoryRequest);
  return (await withTimeout(answer, 'a gateway memory measurement')) as Measured;
}

function figures({ rss, heapTotal, heapUsed, external, arrayBuffers }: Measured): GatewayFigures {
  return { rss, heapTotal, heapUsed, external, arrayBuffers };
}

function describe(m: Measured): string {
  const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
  return `RSS ${mib(m.rss)}, heap ${mib(m.heapUsed)} of ${mib(m.heapTotal)}, subscribers ${m.subscribers}`;
}

/** Raises each of `highest`'s figures to `measured`'s where that is higher. */
function raise(highest: GatewayFigures, measured: Measured): void {
  for (const key of Object.keys(highest) as (keyof GatewayFigures)[]) {
    highest[key] = Math.max(highest[key], measured[key]);
  }
}

const freshTarget = (): ThreadTarget => ({ resourceId: 'bench', threadId: `gateway-memory-${randomUUID()}` });

/** Ids near Temporal's workflow id limit once percent-encoded ('~' takes 3 bytes): every event carries them. */
const longTarget = (): ThreadTarget => ({
  resourceId: `res-${randomUUID()}${'~'.repeat(80)}`,
  threadId: `hot-${randomUUID()}${'~'.repeat(198)}`,
});
