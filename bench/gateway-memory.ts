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
import { randomUUID } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ThreadTarget } from '../protocol/schemas';
import type { ScriptedReply } from '../test/support/model-server';
import { withTimeout, type BenchEnv } from './env';
import { eventsUrl, sendOverHttp, subscribeStamped } from './gateway-bus';
import type { GatewayFigures } from './gateway-memory-process';
import { figures, startGatewayProcess, type GatewayMeasured, type GatewayProcess } from './gateway-process';
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
  /** Subscribers the gateway dropped, by reason: the stalled ones, and the reader each time it resumed. */
  dropped: { bufferFull: number; stalled: number };
  /** Times the reading subscriber was dropped and resumed with Last-Event-ID. */
  readerResumes: number;
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

const marker = 'gateway-memory';
const SAMPLE_EVERY_MS = 250;
/** Every this many samples, one after two full GCs. */
const SETTLED_SAMPLE_EVERY = 4;
const IDLE_MS = 30_000;
/** How often the reading subscriber may be dropped and resume before the round fails. */
const READER_RESUMES = 20;

export async function benchGatewayMemory(
  env: BenchEnv,
  sizes: GatewayMemorySizes,
  progress: (line: string) => void = () => undefined,
): Promise<GatewayMemoryResult> {
  const gateway = await startGatewayProcess(env, {
    name: 'gateway-memory',
    // The stalled subscribers and the one that reads, all on one thread.
    env: { THREADLINE_MAX_SUBSCRIBERS_PER_THREAD: String(sizes.subscribers + 1) },
  });
  const { ready } = gateway;
  const answer = Array.from({ length: sizes.chunks }, (_, i) => String(i % 10));
  const reply = env.probe.reply;
  env.probe.reply = (req) =>
    JSON.stringify(req.messages).includes(marker)
      ? ({ text: answer, chunkDelayMs: 1 } satisfies ScriptedReply)
      : reply(req);
  try {
    // Warm: one short answer through the gateway, so what it builds on first use is in the baseline.
    const warm = freshTarget();
    const warmReader = await subscribeStamped(eventsUrl(ready.url, warm), { until: (e) => e.type === 'finish' });
    await sendOverHttp(ready.url, 'warm up', warm);
    await withTimeout(warmReader.received, 'the warm-up answer', 120_000);
    const started = figures(await gateway.measure(true));
    const rounds: StallRound[] = [];
    for (let round = 1; round <= sizes.rounds; round++) {
      progress(`  round ${round}/${sizes.rounds}: ${sizes.subscribers} stalled subscribers, ${sizes.chunks} chunks…`);
      rounds.push(await stallRound(gateway, sizes, progress));
    }
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
    await gateway.stop();
  }
}

async function stallRound(
  { ready, measure }: GatewayProcess,
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
  const connectedMeasure = await measure(true);
  progress(`    connected: ${describe(connectedMeasure)}`);
  const droppedBefore = connectedMeasure.dropped;
  // Under this load even a reading subscriber's queue in the gateway can pass its bound (it did once in a full run, the
  // gateway at 100 % CPU): the gateway drops it as it drops any, and it resumes with Last-Event-ID as a client does
  // (counted, not hidden).
  const reader = await subscribeStamped(url, { until: (e) => e.type === 'finish', resume: READER_RESUMES });
  // Drops of stalled subscribers: the gateway's count, less the reader's own (each one it resumed from).
  const droppedSince = (m: GatewayMeasured) =>
    m.dropped.bufferFull - droppedBefore.bufferFull + m.dropped.stalled - droppedBefore.stalled - reader.resumes();

  const peak = figures(connectedMeasure);
  const peakLive = figures(connectedMeasure);
  const health: number[] = [];
  let last = connectedMeasure;
  let sampling = true;
  const sampler = (async () => {
    for (let sample = 1; sampling; sample++) {
      const settled = sample % SETTLED_SAMPLE_EVERY === 0;
      last = await measure(settled);
      raise(settled ? peakLive : peak, last);
      // Each settled sample on stderr too: a round cut short still leaves its figures.
      if (settled) progress(`    live: ${describe(last)}; dropped ${droppedSince(last)}`);
      const t0 = performance.now();
      await (await fetch(`${ready.url}/health`)).text();
      health.push(performance.now() - t0);
      await sleep(SAMPLE_EVERY_MS);
    }
  })();

  // The sampler's own failure is thrown below; until then it must not end the process as an unhandled rejection
  // (which would also hide the error of the round that the finally below is cleaning up after).
  sampler.catch(() => undefined);
  let events: Awaited<typeof reader.received>;
  let seconds: number;
  try {
    const sentAt = performance.now();
    await sendOverHttp(ready.url, `${marker} ${randomUUID()}`, target);
    events = await withTimeout(reader.received, 'the long answer to reach the reading subscriber', 900_000);
    // A stalled subscriber that has not reached its buffer's bound is dropped at the stall bound at the latest.
    const deadline = Date.now() + ready.subscriberStallMs + 60_000;
    while (droppedSince(last) < sizes.subscribers && Date.now() < deadline) await sleep(SAMPLE_EVERY_MS);
    seconds = (performance.now() - sentAt) / 1000;
  } finally {
    sampling = false;
  }
  await sampler;

  const afterDropsMeasure = await measure(true);
  for (const socket of sockets) socket.destroy();
  const closedBy = Date.now() + 60_000;
  let afterCloseMeasure = await measure(false);
  while (afterCloseMeasure.subscribers > 0 && Date.now() < closedBy) {
    await sleep(SAMPLE_EVERY_MS);
    afterCloseMeasure = await measure(false);
  }
  afterCloseMeasure = await measure(true);
  await sleep(IDLE_MS);
  const afterIdle = figures(await measure(true));
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
    readerResumes: reader.resumes(),
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

function describe(m: GatewayMeasured): string {
  const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
  return `RSS ${mib(m.rss)}, heap ${mib(m.heapUsed)} of ${mib(m.heapTotal)}, subscribers ${m.subscribers}`;
}

/** Raises each of `highest`'s figures to `measured`'s where that is higher. */
function raise(highest: GatewayFigures, measured: GatewayMeasured): void {
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
