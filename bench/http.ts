/**
 * Through the HTTP gateway, as users see it (issue #12, part 10), against the in-process client on the same worker:
 *
 * 1. Latency: `POST send-message` → the first `text-delta` on an SSE stream opened before it, timed at the client,
 *    for a new thread and for the idle thread's next turn; the same through the in-process client (`sendMessage`,
 *    `subscribeToThread`). Interleaved per round, the order alternating, each thread settled before its next turn.
 * 2. Ingest: persist-only signals (`ifIdle` and `ifActive` both `persist`) round-robin over fresh threads with a fixed
 *    number in flight, through `POST /api/agents/:agentId/signals` and through the in-process `sendSignal`, each side
 *    in two halves run A B C C B A (each half with half the signals over half the threads, fresh ones).
 *
 * The gateway is served in this process on the bench's in-process bus and client (its request lines written as in
 * production, to /dev/null), so the sides differ only in HTTP, the gateway and SSE. The gateway is driven by two
 * clients: one in a process of its own (bench/http-client-process.ts, Node's `http`), as users' are — the targets use
 * it —, and one in this process (undici `fetch`). The inside one shares this process's event loop and CPU with the
 * worker and the gateway: during a turn it reads its socket only once the step's burst is done (a scripted model
 * answers a whole reply at once), and during ingest its own work per request (about 1 ms of CPU, `fetch` and its web
 * streams, measured with `--cpu-prof`) is taken from the gateway and the worker.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import type { ServedGateway } from '../gateway/serve';
import type { ThreadTarget } from '../protocol/schemas';
import type { ThreadEvent } from '../protocol/events';
import { benchAgent, serveBenchGateway, wallClock, watchTurn, withTimeout, type BenchEnv } from './env';
import { eventsUrl, firstOf, freshThread, sendOverHttp, subscribeStamped } from './gateway-bus';
import { findEvent, settledHistory, splitAt, type HistoryEvent } from './history';
import { ingestSignal, persistOnly, runIngest, type IngestRun } from './ingest-loop';
import { cpuSnapshot, processCpuSeconds } from './signal-ingest';
import { summarize, type Summary } from './stats';

export interface HttpSizes {
  latency: { samples: number; warmup: number };
  ingest: { threads: number; signals: number; concurrency: number };
}

/** Each figure three ways: the in-process client, and the gateway driven by a client outside and inside this process. */
interface Sides<T> {
  inProcess: T;
  /** Through the gateway, driven and timed by a client in a process of its own (the targets use it). */
  gateway: T;
  /** Through the gateway, driven and timed by a client in the bench's process (undici `fetch`). */
  gatewayLocalClient: T;
}

/**
 * A turn split where the two paths part: the server recording the input (history, the server's clock), the first
 * `text-delta` published (a subscriber in the bench's process, which is the worker's and the gateway's), and the
 * first `text-delta` at the client (for the in-process client, that same subscriber: 0). One machine, one wall clock.
 */
export const gatewaySegments = [
  'send → start or update recorded by the server',
  "→ first text-delta published (a subscriber in the worker's process)",
  '→ first text-delta at the client',
] as const;

export type GatewaySegment = (typeof gatewaySegments)[number];

/** One turn on the wall clock (epoch ms); `publishedAt` is NaN where no subscriber in this process watched. */
interface TurnStamps {
  sentAt: number;
  publishedAt: number;
  receivedAt: number;
}

export interface HttpIngestCase {
  signals: number;
  /**
   * CPU ms per accepted signal of each process, from the half's start until its signals were handled (this process
   * and the dev server quiet again).
   */
  cpuMsPerSignal: Record<keyof CpuSeconds, number>;
  failed: number;
  durationMs: number;
  acceptedPerSecond: number;
  acceptLatency: Summary;
}

export interface HttpResult {
  samples: number;
  warmup: number;
  /** Send → first text-delta at the client, first message to a new thread. */
  newThread: Sides<Summary>;
  /** Send → first text-delta at the client, the next message once the thread is idle again. */
  idleThread: Sides<Summary>;
  /** The in-process client's turns and the outside client's, split at `gatewaySegments`. */
  segments: Record<'newThread' | 'idleThread', Record<'inProcess' | 'gateway', Record<GatewaySegment, Summary>>>;
  ingest: { threads: number; concurrency: number } & Sides<HttpIngestCase>;
}

export async function benchHttp(
  env: BenchEnv,
  sizes: HttpSizes,
  progress: (line: string) => void = () => undefined,
): Promise<HttpResult> {
  const gateway = await serveBenchGateway(env);
  const outside = startOutsideClient(env);
  try {
    progress(`  latency: ${sizes.latency.warmup} warm-up + ${sizes.latency.samples} rounds…`);
    const newThread: Sides<number[]> = { inProcess: [], gateway: [], gatewayLocalClient: [] };
    const idleThread: Sides<number[]> = { inProcess: [], gateway: [], gatewayLocalClient: [] };
    const split = { newThread: { inProcess: [], gateway: [] }, idleThread: { inProcess: [], gateway: [] } } as Record<
      'newThread' | 'idleThread',
      Record<'inProcess' | 'gateway', Record<GatewaySegment, number>[]>
    >;
    const turns: Record<keyof Sides<unknown>, (t: ThreadTarget) => Promise<TurnStamps>> = {
      inProcess: (t) => inProcessTurn(env, t),
      gateway: (t) => outside.turn(gateway.url, t),
      gatewayLocalClient: (t) => httpTurn(gateway, t),
    };
    for (let i = 0; i < sizes.latency.warmup + sizes.latency.samples; i++) {
      // Each side first, second and last in turn.
      const order = ['inProcess', 'gateway', 'gatewayLocalClient'] as const;
      const sides = [0, 1, 2].map((k) => order[(k + i) % 3]);
      for (const side of sides) {
        const target = freshThread('http');
        const turn = turns[side];
        const first = await turn(target);
        const afterFirst = await settledHistory(env, target);
        const second = await turn(target);
        const afterSecond = await settledHistory(env, target);
        if (i < sizes.latency.warmup) continue;
        newThread[side].push(first.receivedAt - first.sentAt);
        idleThread[side].push(second.receivedAt - second.sentAt);
        if (side === 'gatewayLocalClient') continue;
        split.newThread[side].push(splitTurn(first, findEvent(afterFirst.events, 0, 'WorkflowExecutionStarted')));
        const woken = findEvent(afterSecond.events, afterFirst.events.length, 'WorkflowTaskScheduled');
        split.idleThread[side].push(splitTurn(second, woken));
      }
    }
    const { threads, signals, concurrency } = sizes.ingest;
    progress(`  ingest: ${signals} persist-only signals over ${threads} threads, ${concurrency} in flight, each way…`);
    // In halves, A B C C B A, so that no side has the machine's better or worse minutes to itself.
    const sendInProcess: Sender = (i, target) =>
      env.agent.sendSignal(ingestSignal(i), { ...target, ...persistOnly }).then(() => undefined);
    const sendViaGateway: Sender = (i, target) => postSignal(gateway.url, i, target);
    const half = Math.ceil(signals / 2);
    const halfThreads = Math.ceil(threads / 2);
    const runs: Record<IngestSide, IngestRun[]> = { inProcess: [], gateway: [], gatewayLocalClient: [] };
    const sides: readonly IngestSide[] = ['inProcess', 'gateway', 'gatewayLocalClient'];
    const cpu: Record<IngestSide, CpuSeconds[]> = { inProcess: [], gateway: [], gatewayLocalClient: [] };
    await untilQuiet();
    for (const side of [...sides, ...[...sides].reverse()]) {
      const before = cpuNow(outside.pid);
      runs[side].push(
        side === 'gateway'
          ? await outside.ingest(gateway.url, half, halfThreads, concurrency)
          : await ingest(half, halfThreads, concurrency, side === 'inProcess' ? sendInProcess : sendViaGateway),
      );
      // The signals accepted are handled (workflow tasks) after the half: their CPU is the half's too.
      await untilQuiet();
      cpu[side].push(cpuSince(before, cpuNow(outside.pid)));
    }
    return {
      samples: sizes.latency.samples,
      warmup: sizes.latency.warmup,
      newThread: summarizeSides(newThread),
      idleThread: summarizeSides(idleThread),
      segments: {
        newThread: {
          inProcess: summarizeSplit(split.newThread.inProcess),
          gateway: summarizeSplit(split.newThread.gateway),
        },
        idleThread: {
          inProcess: summarizeSplit(split.idleThread.inProcess),
          gateway: summarizeSplit(split.idleThread.gateway),
        },
      },
      ingest: {
        threads,
        concurrency,
        inProcess: combine(runs.inProcess, cpu.inProcess),
        gateway: combine(runs.gateway, cpu.gateway),
        gatewayLocalClient: combine(runs.gatewayLocalClient, cpu.gatewayLocalClient),
      },
    };
  } finally {
    outside.close();
    await gateway.close();
  }
}

function splitTurn(turn: TurnStamps, recorded: HistoryEvent): Record<GatewaySegment, number> {
  return splitAt(gatewaySegments, [turn.sentAt, recorded.at, turn.publishedAt, turn.receivedAt]);
}

function summarizeSplit(samples: Record<GatewaySegment, number>[]): Record<GatewaySegment, Summary> {
  return Object.fromEntries(
    gatewaySegments.map((name) => [name, summarize(samples.map((sample) => sample[name]))]),
  ) as Record<GatewaySegment, Summary>;
}

function summarizeSides(x: Sides<number[]>): Sides<Summary> {
  return {
    inProcess: summarize(x.inProcess),
    gateway: summarize(x.gateway),
    gatewayLocalClient: summarize(x.gatewayLocalClient),
  };
}

/** What the client process of bench/http-client-process.ts answers (one JSON line per job). */
interface OutsideAnswer {
  id: number;
  error?: string;
  /** A turn's answer: when the POST went out and the first text-delta came in (epoch ms). */
  sentAt?: number;
  firstDeltaAt?: number;
}

/**
 * The client process of bench/http-client-process.ts, one job at a time: a turn (send → first text-delta in ms), or an
 * ingest run over kept-alive connections.
 */
function startOutsideClient(env: BenchEnv): {
  turn(gatewayUrl: string, target: ThreadTarget): Promise<TurnStamps>;
  ingest(gatewayUrl: string, signals: number, threads: number, concurrency: number): Promise<IngestRun>;
  close(): void;
  pid: number | undefined;
} {
  const script = fileURLToPath(new URL('./http-client-process.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, { resolve(answer: OutsideAnswer): void; reject(err: Error): void }>();
  let exited: Error | undefined;
  child.on('exit', (code) => {
    exited = new Error(`The HTTP client process exited (${code}).`);
    for (const w of waiting.values()) w.reject(exited);
    waiting.clear();
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const answer = JSON.parse(line) as OutsideAnswer;
    const w = waiting.get(answer.id);
    waiting.delete(answer.id);
    if (answer.error !== undefined) w?.reject(new Error(answer.error));
    else w?.resolve(answer);
  });
  let nextId = 0;
  const ask = (job: Record<string, unknown>, what: string, timeoutMs?: number): Promise<OutsideAnswer> => {
    if (exited) return Promise.reject(exited);
    const id = nextId++;
    const answer = new Promise<OutsideAnswer>((resolve, reject) => waiting.set(id, { resolve, reject }));
    child.stdin.write(`${JSON.stringify({ id, ...job })}\n`);
    return withTimeout(answer, what, timeoutMs);
  };
  return {
    async turn(gatewayUrl, target) {
      const message = `http ${randomUUID()}`;
      const job = { gatewayUrl, agentId: benchAgent.id, ...target, message };
      // The subscriber stamps the first text-delta as published: the gateway's own subscription sees it as soon.
      const sub = env.agent.subscribeToThread(target);
      try {
        const published = firstDeltaOf(sub.stream);
        const { sentAt, firstDeltaAt } = await ask(job, 'a gateway turn timed by the outside client');
        return { sentAt: sentAt!, publishedAt: await published, receivedAt: firstDeltaAt! };
      } finally {
        sub.unsubscribe();
      }
    },
    async ingest(gatewayUrl, signals, threads, concurrency) {
      const targets = Array.from({ length: threads }, () => freshThread('http-ingest'));
      const job = { kind: 'ingest', gatewayUrl, agentId: benchAgent.id, targets, signals, concurrency };
      const answer = await ask(job, 'an ingest run by the outside client', 600_000);
      const { latencies, failed, firstError, durationMs } = answer as OutsideAnswer & IngestRun;
      return reportFailures({ latencies, failed, firstError, durationMs });
    },
    close() {
      child.stdin.end();
      child.kill();
    },
    pid: child.pid,
  };
}

async function inProcessTurn(env: BenchEnv, target: ThreadTarget): Promise<TurnStamps> {
  const sub = env.agent.subscribeToThread(target);
  try {
    const watching = watchTurn(sub.stream);
    const t0 = performance.now();
    const [turn] = await withTimeout(
      Promise.all([watching, env.agent.sendMessage(`http floor ${randomUUID()}`, target)]),
      'an in-process turn',
    );
    return { sentAt: wallClock(t0), publishedAt: wallClock(turn.firstDelta), receivedAt: wallClock(turn.firstDelta) };
  } finally {
    sub.unsubscribe();
  }
}

/** When the first `text-delta` reached this subscriber (epoch ms); NaN if the stream ended first. */
async function firstDeltaOf(stream: AsyncIterable<ThreadEvent>): Promise<number> {
  for await (const event of stream) {
    if (event.type === 'text-delta') return wallClock(performance.now());
  }
  return NaN;
}

async function httpTurn(gateway: ServedGateway, target: ThreadTarget): Promise<TurnStamps> {
  // Resolves once the response headers arrived: the gateway has subscribed.
  const sse = await subscribeStamped(eventsUrl(gateway.url, target), { until: (e) => e.type === 'finish' });
  try {
    const t0 = performance.now();
    const [events] = await withTimeout(
      Promise.all([sse.received, sendOverHttp(gateway.url, `http ${randomUUID()}`, target)]),
      'a gateway turn',
    );
    return { sentAt: wallClock(t0), publishedAt: NaN, receivedAt: wallClock(firstOf(events, 'text-delta').at) };
  } finally {
    sse.close();
  }
}

async function postSignal(gatewayUrl: string, i: number, target: ThreadTarget): Promise<void> {
  const response = await fetch(`${gatewayUrl}/api/agents/${benchAgent.id}/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ signal: ingestSignal(i), ...target, ...persistOnly }),
  });
  if (response.status !== 200) throw new Error(`signals answered ${response.status}: ${await response.text()}`);
  await response.json();
}

type Sender = (i: number, target: ThreadTarget) => Promise<void>;

type IngestSide = keyof Sides<unknown>;

async function ingest(signals: number, threads: number, concurrency: number, send: Sender): Promise<IngestRun> {
  const targets = Array.from({ length: threads }, () => freshThread('http-ingest'));
  return reportFailures(await runIngest(signals, concurrency, (i) => send(i, targets[i % threads])));
}

function reportFailures(run: IngestRun): IngestRun {
  if (run.failed > 0) process.stderr.write(`bench: ${run.failed} HTTP ingest sends failed, e.g. ${run.firstError}\n`);
  return run;
}

/** CPU seconds of the three processes a case runs on. */
interface CpuSeconds {
  /** The bench's process: the worker, the client, the gateway (and the inside HTTP client). */
  benchProcess: number;
  devServer: number;
  /** bench/http-client-process.ts: the outside HTTP client. */
  clientProcess: number;
}

function cpuNow(clientPid: number | undefined): CpuSeconds {
  const { process: benchProcess, server: devServer } = cpuSnapshot();
  return { benchProcess, devServer, clientProcess: processCpuSeconds(clientPid) };
}

function cpuSince(before: CpuSeconds, after: CpuSeconds): CpuSeconds {
  return {
    benchProcess: after.benchProcess - before.benchProcess,
    devServer: after.devServer - before.devServer,
    clientProcess: after.clientProcess - before.clientProcess,
  };
}

const QUIET_SHARE = 0.15;
const QUIET_WINDOW_MS = 300;
const QUIET_MAX_MS = 30_000;

/**
 * Waits until this process and the dev server together use less than 15 % of a core over 300 ms (at most 30 s): the
 * workflow tasks that handle the signals just accepted have run.
 */
async function untilQuiet(): Promise<void> {
  const deadline = performance.now() + QUIET_MAX_MS;
  while (performance.now() < deadline) {
    const before = cpuSnapshot();
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    const after = cpuSnapshot();
    const used = after.process - before.process + (after.server - before.server || 0);
    if (used < (QUIET_SHARE * QUIET_WINDOW_MS) / 1000) return;
  }
}

function combine(runs: IngestRun[], cpu: CpuSeconds[]): HttpIngestCase {
  const latencies = runs.flatMap((run) => run.latencies);
  const failed = runs.reduce((sum, run) => sum + run.failed, 0);
  const durationMs = runs.reduce((sum, run) => sum + run.durationMs, 0);
  const perSignalMs = (key: keyof CpuSeconds) =>
    (1000 * cpu.reduce((sum, x) => sum + x[key], 0)) / Math.max(1, latencies.length);
  return {
    cpuMsPerSignal: {
      benchProcess: perSignalMs('benchProcess'),
      devServer: perSignalMs('devServer'),
      clientProcess: perSignalMs('clientProcess'),
    },
    signals: latencies.length + failed,
    failed,
    durationMs: Math.round(durationMs),
    acceptedPerSecond: Math.round((latencies.length / durationMs) * 100_000) / 100,
    acceptLatency: summarize(latencies),
  };
}
