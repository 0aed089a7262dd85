/**
 * (f) Gateway and event bus: what a subscriber behind the HTTP gateway pays for the Redis Streams bus (gateways and
 * workers in several processes) against the in-process bus, on loopback with a `redis-server` of the bench's own.
 *
 * 1. First token: `POST send-message` to a fresh thread → first `text-delta` on an SSE stream opened before it,
 *    through a gateway + worker pair on the in-process bus and one on Redis, interleaved per round. Both pairs run in
 *    this process, so the two series differ only in the bus.
 * 2. Fan-out: one run streams N deltas at once to 1 and to 100 SSE subscribers of one gateway process (Redis),
 *    measured from the first `text-delta` reaching any subscriber to the `finish` reaching the last one.
 * 3. Resume: an SSE subscriber drops its connection mid-run and reconnects with `Last-Event-ID`; measured from the
 *    reconnect to the first resumed event (events were published meanwhile, so the first one is already there).
 */
import { summarizeAgents } from '../agents/summary';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { Connection } from '@temporalio/client';
import { Redis } from 'ioredis';
import { bundleWorkflowCode } from '@temporalio/worker';
import { RedisBus } from '../bus/redis';
import type { ThreadEvent } from '../protocol/events';
import { connect, type ThreadlineClient } from '../client/connect';
import { serveGateway, type ServedGateway } from '../gateway/serve';
import type { ThreadTarget } from '../protocol/schemas';
import { startChild, type ChildProcessHandle } from '../test/support/child-process';
import type { ScriptedReply } from '../test/support/model-server';
import { startRedis, type RedisServer } from '../test/support/redis';
import { parseSse } from '../test/support/sse';
import { createWorker, threadBundleOptions, type ThreadlineWorker } from '../worker/index';
import { benchAgent, gatewayLogger, withTimeout, type BenchEnv } from './env';
import { summarize, type Summary } from './stats';

export interface GatewayBusSizes {
  firstDelta: { samples: number; warmup: number };
  fanOut: { subscribers: number[]; runs: number; deltas: number };
  resume: { samples: number; warmup: number };
}

interface FirstDeltaSeries {
  /** `POST send-message` → first `text-delta` at the SSE subscriber. */
  toFirstDelta: Summary;
  /** `POST send-message` → its HTTP response (the input accepted). */
  toResponse: Summary;
}

export interface FanOutCase {
  subscribers: number;
  runs: number;
  /** Events of a run from its first `text-delta` to its `finish`, as each subscriber receives them. */
  eventsPerRun: number;
  /** Events per second each subscriber receives (all of them, first text-delta at any → finish at the last), p50 of the runs. */
  eventsPerSecondPerSubscriber: number;
  /** The same times the subscriber count: SSE events the gateway wrote per second. */
  deliveriesPerSecond: number;
  /** Publisher's push of an event (its `at`) → that event at a subscriber, over every delivery of every run. */
  lagMs: Summary;
  /**
   * CPU time over wall time from the send to the last `finish` (p50 of the runs; 1 = one core busy throughout): of the
   * gateway process, of this process (the worker, the model server and every subscriber's SSE parsing), of Redis.
   */
  cpuShare: { gateway: number; benchProcess: number; redis: number };
}

export interface GatewayBusResult {
  firstDelta: {
    samples: number;
    warmup: number;
    memory: FirstDeltaSeries;
    redis: FirstDeltaSeries;
    /** Redis p50 − memory p50, and the ratios of the p50s and of the p99s. */
    overheadP50Ms: number;
    ratioP50: number;
    ratioP99: number;
  };
  fanOut: { deltas: number; cases: FanOutCase[] };
  resume: { samples: number; warmup: number; memory: Summary; redis: Summary };
}

/** One gateway + worker pair on one bus, served on loopback in this process. */
interface Pair {
  name: 'memory' | 'redis';
  client: ThreadlineClient;
  gateway: ServedGateway;
}

/** An event and when it reached this process (`performance.now()`). */
export interface Stamped {
  at: number;
  event: ThreadEvent;
}

export async function benchGatewayBus(
  env: BenchEnv,
  sizes: GatewayBusSizes,
  progress: (line: string) => void,
): Promise<GatewayBusResult> {
  const world = await startWorld(env);
  try {
    progress(`(f1) first token: ${sizes.firstDelta.warmup} warm-up + ${sizes.firstDelta.samples} rounds…`);
    const firstDelta = await benchFirstDelta(world.pairs, sizes.firstDelta);
    progress(`(f2) fan-out: ${sizes.fanOut.deltas} deltas to ${sizes.fanOut.subscribers.join(' and ')} subscribers…`);
    const fanOut = await benchFanOut(env, world, sizes.fanOut);
    progress(`(f3) resume: ${sizes.resume.warmup} warm-up + ${sizes.resume.samples} rounds…`);
    const resume = await benchResume(env, world.pairs, sizes.resume);
    return { firstDelta, fanOut, resume };
  } finally {
    await world.close();
  }
}

interface World {
  pairs: Pair[];
  /** The Redis pair's client: sends to the fan-out thread without going through a gateway. */
  redisClient: ThreadlineClient;
  /** A gateway process of its own on Redis: the fan-out gateway, with an event loop nobody else uses. */
  fanOutGateway: ChildProcessHandle & { url: string };
  /** The redis-server's pid, to measure its CPU time. */
  redisPid: number;
  close(): Promise<void>;
}

const gatewayScript = fileURLToPath(new URL('../test/support/gateway-process.ts', import.meta.url));

async function startWorld(env: BenchEnv): Promise<World> {
  const redis: RedisServer = await startRedis();
  // The bench env keeps its dev server's address to itself; its client's connection knows it.
  const address = (env.client.temporal.connection as Connection).options.address;
  const taskQueue = `bench-redis-${randomUUID()}`;
  const { code } = await bundleWorkflowCode({ ...threadBundleOptions, logger: quietLogger });
  // Worker and gateway each get a RedisBus of their own, as they would in separate processes.
  const workerBus = new RedisBus(redis.url);
  const gatewayBus = new RedisBus(redis.url);
  const worker: ThreadlineWorker = await createWorker({
    agents: [benchAgent],
    bus: workerBus,
    address,
    taskQueue,
    models: { openaiBaseUrl: env.modelUrl, openaiApiKey: 'bench' },
    workflowBundle: { code },
    shutdownGraceTimeMs: 1_000,
  });
  const running = worker.run();
  const redisClient = await connect({ bus: gatewayBus, client: env.client.temporal, taskQueue });
  const agents = summarizeAgents([benchAgent]);
  const memoryGateway = await serveGateway({ client: env.client, agents, port: 0, logger: gatewayLogger });
  const redisGateway = await serveGateway({ client: redisClient, agents, port: 0, logger: gatewayLogger });
  const info = new Redis(redis.url);
  const redisPid = Number(/process_id:(\d+)/.exec(await info.info('server'))?.[1]);
  info.disconnect();
  const child = await startChild(
    gatewayScript,
    { TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: taskQueue, REDIS_URL: redis.url, PORT: '0' },
    { name: 'Gateway process', ready: /^READY (http:\/\/\S+)$/m },
  );
  return {
    pairs: [
      { name: 'memory', client: env.client, gateway: memoryGateway },
      { name: 'redis', client: redisClient, gateway: redisGateway },
    ],
    redisClient,
    redisPid,
    fanOutGateway: { ...child, url: child.ready[1] },
    async close() {
      await child.kill('SIGTERM');
      await memoryGateway.close();
      await redisGateway.close();
      await worker.shutdown().catch(() => undefined);
      await running.catch(() => undefined);
      await workerBus.close();
      await gatewayBus.close();
      await redis.stop();
    },
  };
}

// (1) ------------------------------------------------------------------------------------------------------------

async function benchFirstDelta(
  pairs: Pair[],
  { samples, warmup }: GatewayBusSizes['firstDelta'],
): Promise<GatewayBusResult['firstDelta']> {
  const measured: Record<Pair['name'], { toFirstDelta: number[]; toResponse: number[] }> = {
    memory: { toFirstDelta: [], toResponse: [] },
    redis: { toFirstDelta: [], toResponse: [] },
  };
  for (let i = 0; i < warmup + samples; i++) {
    // Alternate which pair goes first, so neither always runs right after the other's turn.
    for (const pair of i % 2 === 0 ? pairs : [...pairs].reverse()) {
      const sample = await firstDeltaSample(pair);
      if (i < warmup) continue;
      measured[pair.name].toFirstDelta.push(sample.toFirstDelta);
      measured[pair.name].toResponse.push(sample.toResponse);
    }
  }
  const series = (name: Pair['name']): FirstDeltaSeries => ({
    toFirstDelta: summarize(measured[name].toFirstDelta),
    toResponse: summarize(measured[name].toResponse),
  });
  const memory = series('memory');
  const redis = series('redis');
  return {
    samples,
    warmup,
    memory,
    redis,
    overheadP50Ms: round(redis.toFirstDelta.p50 - memory.toFirstDelta.p50),
    ratioP50: round(redis.toFirstDelta.p50 / memory.toFirstDelta.p50),
    ratioP99: round(redis.toFirstDelta.p99 / memory.toFirstDelta.p99),
  };
}

async function firstDeltaSample(pair: Pair): Promise<{ toFirstDelta: number; toResponse: number }> {
  const target = freshThread('first-delta');
  const sse = await subscribeStamped(eventsUrl(pair.gateway.url, target), { until: (e) => e.type === 'finish' });
  try {
    const t0 = performance.now();
    const responded = sendOverHttp(pair.gateway.url, `first delta ${randomUUID()}`, target).then(() =>
      performance.now(),
    );
    const [events, respondedAt] = await withTimeout(Promise.all([sse.received, responded]), 'a first-token turn');
    return { toFirstDelta: firstOf(events, 'text-delta').at - t0, toResponse: respondedAt - t0 };
  } finally {
    sse.close();
  }
}

// (2) ------------------------------------------------------------------------------------------------------------

async function benchFanOut(
  env: BenchEnv,
  world: World,
  sizes: GatewayBusSizes['fanOut'],
): Promise<GatewayBusResult['fanOut']> {
  const chunks = Array.from({ length: sizes.deltas }, (_, i) => `d${i} `);
  const marker = 'fan-out';
  const reply = env.probe.reply;
  env.probe.reply = (req) =>
    JSON.stringify(req.messages).includes(marker) ? ({ text: chunks } satisfies ScriptedReply) : reply(req);
  try {
    const cases: FanOutCase[] = [];
    for (const subscribers of sizes.subscribers) {
      const runs: FanOutRun[] = [];
      for (let run = 0; run < sizes.runs; run++) runs.push(await fanOutRun(world, subscribers, marker));
      const perSecond = summarize(runs.map((r) => r.perSubscriber)).p50;
      cases.push({
        subscribers,
        runs: sizes.runs,
        eventsPerRun: runs[0].events,
        eventsPerSecondPerSubscriber: Math.round(perSecond),
        deliveriesPerSecond: Math.round(perSecond * subscribers),
        lagMs: summarize(runs.flatMap((r) => r.lags)),
        cpuShare: {
          gateway: round(summarize(runs.map((r) => r.cpuShare.gateway)).p50),
          benchProcess: round(summarize(runs.map((r) => r.cpuShare.benchProcess)).p50),
          redis: round(summarize(runs.map((r) => r.cpuShare.redis)).p50),
        },
      });
    }
    return { deltas: sizes.deltas, cases };
  } finally {
    env.probe.reply = reply;
  }
}

interface FanOutRun {
  perSubscriber: number;
  events: number;
  lags: number[];
  cpuShare: { gateway: number; benchProcess: number; redis: number };
}

async function fanOutRun(world: World, subscribers: number, marker: string): Promise<FanOutRun> {
  const target = freshThread('fan-out');
  const url = eventsUrl(world.fanOutGateway.url, target);
  const streams = await Promise.all(
    Array.from({ length: subscribers }, () => subscribeStamped(url, { until: (e) => e.type === 'finish' })),
  );
  try {
    const gatewayCpuBefore = await cpuMsOf(world.fanOutGateway.pid);
    const redisCpuBefore = await cpuMsOf(world.redisPid);
    const benchCpuBefore = process.cpuUsage();
    const sentAt = performance.now();
    await world.redisClient.agent(benchAgent.id).sendMessage(`${marker} ${randomUUID()}`, target);
    const received = await withTimeout(Promise.all(streams.map((s) => s.received)), 'a fan-out run', 120_000);
    const wallMs = performance.now() - sentAt;
    const benchCpu = process.cpuUsage(benchCpuBefore);
    const cpuShare = {
      gateway: ((await cpuMsOf(world.fanOutGateway.pid)) - gatewayCpuBefore) / wallMs,
      benchProcess: (benchCpu.user + benchCpu.system) / 1000 / wallMs,
      redis: ((await cpuMsOf(world.redisPid)) - redisCpuBefore) / wallMs,
    };
    // From the run's first text-delta, wherever it arrived first, to the finish at the slowest subscriber.
    const fromFirstDelta = received.map((events) => events.slice(events.indexOf(firstOf(events, 'text-delta'))));
    const first = Math.min(...fromFirstDelta.map((events) => events[0].at));
    const last = Math.max(...fromFirstDelta.map((events) => events.at(-1)!.at));
    const events = fromFirstDelta[0].length;
    const lags = fromFirstDelta.flatMap((list) => list.map(({ at, event }) => wallClockOf(at) - event.at));
    return { perSubscriber: (events / (last - first)) * 1000, events, lags, cpuShare };
  } finally {
    for (const s of streams) s.close();
  }
}

// (3) ------------------------------------------------------------------------------------------------------------

async function benchResume(
  env: BenchEnv,
  pairs: Pair[],
  { samples, warmup }: GatewayBusSizes['resume'],
): Promise<GatewayBusResult['resume']> {
  const marker = 'resume';
  const slowReply: ScriptedReply = { text: Array.from({ length: 40 }, (_, i) => `r${i} `), chunkDelayMs: 10 };
  const reply = env.probe.reply;
  env.probe.reply = (req) => (JSON.stringify(req.messages).includes(marker) ? slowReply : reply(req));
  const measured: Record<Pair['name'], number[]> = { memory: [], redis: [] };
  try {
    for (let i = 0; i < warmup + samples; i++) {
      for (const pair of i % 2 === 0 ? pairs : [...pairs].reverse()) {
        const ms = await resumeSample(pair, marker);
        if (i >= warmup) measured[pair.name].push(ms);
      }
    }
  } finally {
    env.probe.reply = reply;
  }
  return { samples, warmup, memory: summarize(measured.memory), redis: summarize(measured.redis) };
}

async function resumeSample(pair: Pair, marker: string): Promise<number> {
  const target = freshThread('resume');
  const url = eventsUrl(pair.gateway.url, target);
  let deltas = 0;
  // The client drops its connection after the third text-delta.
  const dropped = await subscribeStamped(url, { until: (e) => e.type === 'text-delta' && ++deltas === 3 });
  await sendOverHttp(pair.gateway.url, `${marker} ${randomUUID()}`, target);
  const lastEventId = (await withTimeout(dropped.received, 'the first text deltas')).at(-1)!.event.id;
  // Reconnect once the run has published past that id, so that the first resumed event can go out at once.
  const reference = pair.client.subscribeToThread(target, { lastEventId });
  const after = reference.stream[Symbol.asyncIterator]();
  try {
    const next = await withTimeout(after.next(), 'an event after the drop');
    const t0 = performance.now();
    const resumed = await subscribeStamped(url, { lastEventId, until: () => true });
    const [first] = await withTimeout(resumed.received, 'the first resumed event');
    if (next.done || first.event.id !== next.value.id) {
      throw new Error(`Resumed with ${first.event.id} after ${lastEventId}, not with the next event.`);
    }
    // Let the run finish before the next sample, so that samples do not overlap.
    await withTimeout(untilFinish(after), 'the resumed run to finish');
    return first.at - t0;
  } finally {
    reference.unsubscribe();
    // A stream left suspended at an event keeps its listeners on the bus until it is returned.
    await after.return?.();
  }
}

async function untilFinish(events: AsyncIterator<ThreadEvent>): Promise<void> {
  for (;;) {
    const next = await events.next();
    if (next.done) throw new Error('The subscription ended before the run finished.');
    if (next.value.type === 'finish') return;
  }
}

// Helpers ---------------------------------------------------------------------------------------------------------

export function freshThread(kind: string): ThreadTarget {
  return { resourceId: 'bench', threadId: `${kind}-${randomUUID()}` };
}

export function eventsUrl(gatewayUrl: string, target: ThreadTarget): string {
  return `${gatewayUrl}/api/threads/${encodeURIComponent(target.resourceId)}/${encodeURIComponent(target.threadId)}/events`;
}

export async function sendOverHttp(gatewayUrl: string, message: string, target: ThreadTarget): Promise<void> {
  const response = await fetch(`${gatewayUrl}/api/agents/${benchAgent.id}/send-message`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, ...target }),
  });
  if (response.status !== 200) throw new Error(`send-message answered ${response.status}: ${await response.text()}`);
  await response.json();
}

/**
 * Opens an SSE stream (resolving once the response headers arrived: the gateway has subscribed) and reads it,
 * stamping each event on arrival, until `until(event)` says so; then it drops the connection.
 *
 * With `resume`, a stream the gateway cuts (it drops a subscriber that falls `maxSubscriberBufferBytes` behind, and
 * says it can resume) is opened again with `Last-Event-ID`, as a real client does, at most `resume` times; `resumes()`
 * counts them. Each event must then come once, in order (ids strictly increasing), or `received` rejects.
 */
export async function subscribeStamped(
  url: string,
  { lastEventId, until, resume = 0 }: { lastEventId?: string; until: (event: ThreadEvent) => boolean; resume?: number },
): Promise<{ received: Promise<Stamped[]>; resumes(): number; close(): void }> {
  let abort = new AbortController();
  let closed = false;
  let resumes = 0;
  const open = async (from: string | undefined) => {
    abort = new AbortController();
    const response = await fetch(url, { headers: from ? { 'Last-Event-ID': from } : {}, signal: abort.signal });
    if (response.status !== 200 || !response.body) throw new Error(`GET ${url} answered ${response.status}.`);
    return response.body;
  };
  let body = await open(lastEventId);
  const received = (async () => {
    const stamped: Stamped[] = [];
    try {
      for (;;) {
        try {
          for await (const item of parseSse(body)) {
            if (item.kind !== 'message') continue;
            const at = performance.now();
            const event = JSON.parse(item.message.data) as ThreadEvent;
            const before = stamped.at(-1)?.event.id;
            if (before !== undefined && compareIds(event.id, before) <= 0) {
              throw new Error(`Event ${event.id} came after ${before}: a duplicate or out of order.`);
            }
            stamped.push({ at, event });
            if (until(event)) return stamped;
          }
          throw new Error(`The SSE stream ended after ${stamped.length} events.`);
        } catch (err) {
          if (closed || resumes >= resume || (err as Error).message.includes('a duplicate or out of order')) throw err;
          resumes += 1;
          body = await open(stamped.at(-1)?.event.id ?? lastEventId);
        }
      }
    } finally {
      abort.abort();
    }
  })();
  received.catch(() => undefined); // awaited by the caller; a sample that is abandoned must not crash the bench
  return {
    received,
    resumes: () => resumes,
    close: () => {
      closed = true;
      abort.abort();
    },
  };
}

/** Event ids of either bus: the memory bus's counter (`"42"`) or a Redis stream id (`"1718000000000-3"`). */
function compareIds(a: string, b: string): number {
  const [x, y] = [a, b].map((id) => id.split('-').map(BigInt));
  for (let i = 0; i < 2; i++) {
    const d = (x![i] ?? 0n) - (y![i] ?? 0n);
    if (d !== 0n) return d > 0n ? 1 : -1;
  }
  return 0;
}

export function firstOf(events: Stamped[], type: ThreadEvent['type']): Stamped {
  const found = events.find((e) => e.event.type === type);
  if (!found) throw new Error(`No ${type} among ${events.map((e) => e.event.type).join(', ')}.`);
  return found;
}

/** CPU time (user + system) a process has used so far, in ms, from Linux's /proc; NaN elsewhere. */
async function cpuMsOf(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name, from field 3 (state): utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerSecond;
  } catch {
    return NaN;
  }
}

/** `getconf CLK_TCK`: 100 on every Linux Node runs on. */
const clockTicksPerSecond = 100;

/** A `performance.now()` reading as epoch milliseconds, to compare with an event's `at`. */
const wallClockOf = (t: number): number => performance.timeOrigin + t;
const round = (x: number) => Math.round(x * 100) / 100;
const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };
