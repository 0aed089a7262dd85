/**
 * Through the HTTP gateway, as users see it (issue #12, part 10), against the in-process client on the same worker:
 *
 * 1. Latency: `POST send-message` → the first `text-delta` on an SSE stream opened before it, timed at the client,
 *    for a new thread and for the idle thread's next turn; the same through the in-process client (`sendMessage`,
 *    `subscribeToThread`). Interleaved per round, the order alternating, each thread settled before its next turn.
 * 2. Ingest: persist-only signals (`ifIdle` and `ifActive` both `persist`) round-robin over fresh threads with a fixed
 *    number in flight, through `POST /api/agents/:agentId/signals` and through the in-process `sendSignal`, each in
 *    two halves run A B B A (each half with half the signals over half the threads, fresh ones).
 *
 * The gateway is served in this process on the bench's in-process bus and client (its request lines written as in
 * production, to /dev/null), so the two sides differ only in HTTP, the gateway and SSE. The gateway's latency is timed
 * by two clients: one in a process of its own (bench/http-client-process.ts), as users see it — the targets use it —,
 * and one in this process (undici `fetch`), which shares its event loop with the worker's step: a scripted model
 * answers a whole reply in one burst, and this client reads its socket only once the step's burst is done.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { summarizeAgents } from '../agents/summary';
import { serveGateway, type ServedGateway } from '../gateway/serve';
import type { ThreadTarget } from '../protocol/schemas';
import { benchAgent, gatewayLogger, watchTurn, withTimeout, type BenchEnv } from './env';
import { eventsUrl, firstOf, freshThread, sendOverHttp, subscribeStamped } from './gateway-bus';
import { settledHistory } from './history';
import { summarize, type Summary } from './stats';

export interface HttpSizes {
  latency: { samples: number; warmup: number };
  ingest: { threads: number; signals: number; concurrency: number };
}

interface Side<T> {
  inProcess: T;
  /** Through the gateway, timed by a client in a process of its own. */
  gateway: T;
}

/** Latency sides: also the gateway timed by a client in the bench's process. */
interface LatencySide<T> extends Side<T> {
  gatewayLocalClient: T;
}

export interface HttpIngestCase {
  signals: number;
  failed: number;
  durationMs: number;
  acceptedPerSecond: number;
  acceptLatency: Summary;
}

export interface HttpResult {
  samples: number;
  warmup: number;
  /** Send → first text-delta at the client, first message to a new thread. */
  newThread: LatencySide<Summary>;
  /** Send → first text-delta at the client, the next message once the thread is idle again. */
  idleThread: LatencySide<Summary>;
  ingest: { threads: number; concurrency: number } & Side<HttpIngestCase>;
}

export async function benchHttp(
  env: BenchEnv,
  sizes: HttpSizes,
  progress: (line: string) => void = () => undefined,
): Promise<HttpResult> {
  const gateway = await serveGateway({
    client: env.client,
    agents: summarizeAgents([benchAgent]),
    port: 0,
    logger: gatewayLogger,
  });
  const outside = startOutsideClient();
  try {
    progress(`  latency: ${sizes.latency.warmup} warm-up + ${sizes.latency.samples} rounds…`);
    const newThread: LatencySide<number[]> = { inProcess: [], gateway: [], gatewayLocalClient: [] };
    const idleThread: LatencySide<number[]> = { inProcess: [], gateway: [], gatewayLocalClient: [] };
    const turns: Record<keyof LatencySide<unknown>, (t: ThreadTarget) => Promise<number>> = {
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
        await settledHistory(env, target);
        const second = await turn(target);
        await settledHistory(env, target);
        if (i < sizes.latency.warmup) continue;
        newThread[side].push(first);
        idleThread[side].push(second);
      }
    }
    const { threads, signals, concurrency } = sizes.ingest;
    progress(`  ingest: ${signals} persist-only signals over ${threads} threads, ${concurrency} in flight, each way…`);
    // In halves, A B B A, so that neither side has the machine's better or worse minutes to itself.
    const sendInProcess: Sender = (message, target) =>
      env.agent.sendSignal(message, { ...target, ...persistOnly }).then(() => undefined);
    const sendViaGateway: Sender = (signal, target) => postSignal(gateway.url, signal, target);
    const half = Math.ceil(signals / 2);
    const runs: Record<'inProcess' | 'gateway', IngestRun[]> = { inProcess: [], gateway: [] };
    for (const side of ['inProcess', 'gateway', 'gateway', 'inProcess'] as const) {
      runs[side].push(
        await ingest(half, Math.ceil(threads / 2), concurrency, side === 'gateway' ? sendViaGateway : sendInProcess),
      );
    }
    const inProcess = combine(runs.inProcess);
    const viaGateway = combine(runs.gateway);
    return {
      samples: sizes.latency.samples,
      warmup: sizes.latency.warmup,
      newThread: summarizeSides(newThread),
      idleThread: summarizeSides(idleThread),
      ingest: { threads, concurrency, inProcess, gateway: viaGateway },
    };
  } finally {
    outside.close();
    await gateway.close();
  }
}

function summarizeSides(x: LatencySide<number[]>): LatencySide<Summary> {
  return {
    inProcess: summarize(x.inProcess),
    gateway: summarize(x.gateway),
    gatewayLocalClient: summarize(x.gatewayLocalClient),
  };
}

/** The client process of bench/http-client-process.ts: one turn at a time, send → first text-delta in ms. */
function startOutsideClient(): { turn(gatewayUrl: string, target: ThreadTarget): Promise<number>; close(): void } {
  const script = fileURLToPath(new URL('./http-client-process.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, { resolve(ms: number): void; reject(err: Error): void }>();
  let exited: Error | undefined;
  child.on('exit', (code) => {
    exited = new Error(`The HTTP client process exited (${code}).`);
    for (const w of waiting.values()) w.reject(exited);
    waiting.clear();
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const answer = JSON.parse(line) as { id: number; firstDeltaMs?: number; error?: string };
    const w = waiting.get(answer.id);
    waiting.delete(answer.id);
    if (answer.error !== undefined) w?.reject(new Error(answer.error));
    else w?.resolve(answer.firstDeltaMs!);
  });
  let nextId = 0;
  return {
    turn(gatewayUrl, target) {
      if (exited) return Promise.reject(exited);
      const id = nextId++;
      const answer = new Promise<number>((resolve, reject) => waiting.set(id, { resolve, reject }));
      const message = `http ${randomUUID()}`;
      child.stdin.write(`${JSON.stringify({ id, gatewayUrl, agentId: benchAgent.id, ...target, message })}\n`);
      return withTimeout(answer, 'a gateway turn timed by the outside client');
    },
    close() {
      child.stdin.end();
      child.kill();
    },
  };
}

const persistOnly = { ifIdle: { behavior: 'persist' }, ifActive: { behavior: 'persist' } } as const;

async function inProcessTurn(env: BenchEnv, target: ThreadTarget): Promise<number> {
  const sub = env.agent.subscribeToThread(target);
  try {
    const watching = watchTurn(sub.stream);
    const t0 = performance.now();
    const [turn] = await withTimeout(
      Promise.all([watching, env.agent.sendMessage(`http floor ${randomUUID()}`, target)]),
      'an in-process turn',
    );
    return turn.firstDelta - t0;
  } finally {
    sub.unsubscribe();
  }
}

async function httpTurn(gateway: ServedGateway, target: ThreadTarget): Promise<number> {
  // Resolves once the response headers arrived: the gateway has subscribed.
  const sse = await subscribeStamped(eventsUrl(gateway.url, target), { until: (e) => e.type === 'finish' });
  try {
    const t0 = performance.now();
    const [events] = await withTimeout(
      Promise.all([sse.received, sendOverHttp(gateway.url, `http ${randomUUID()}`, target)]),
      'a gateway turn',
    );
    return firstOf(events, 'text-delta').at - t0;
  } finally {
    sse.close();
  }
}

type Signal = { type: 'notification'; contents: string; attributes: Record<string, string> };

async function postSignal(gatewayUrl: string, signal: Signal, target: ThreadTarget): Promise<void> {
  const response = await fetch(`${gatewayUrl}/api/agents/${benchAgent.id}/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ signal, ...target, ...persistOnly }),
  });
  if (response.status !== 200) throw new Error(`signals answered ${response.status}: ${await response.text()}`);
  await response.json();
}

type Sender = (signal: Signal, target: ThreadTarget) => Promise<void>;

interface IngestRun {
  latencies: number[];
  failed: number;
  durationMs: number;
}

async function ingest(signals: number, threads: number, concurrency: number, send: Sender): Promise<IngestRun> {
  const targets = Array.from({ length: threads }, () => freshThread('http-ingest'));
  const latencies: number[] = [];
  let failed = 0;
  let firstError = '';
  let next = 0;
  const t0 = performance.now();
  const sender = async () => {
    for (let i = next++; i < signals; i = next++) {
      const start = performance.now();
      try {
        await send(
          { type: 'notification', contents: `http ingest ${i}`, attributes: { source: 'bench' } },
          targets[i % threads],
        );
        latencies.push(performance.now() - start);
      } catch (err) {
        failed += 1;
        firstError ||= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, sender));
  if (failed > 0) process.stderr.write(`bench: ${failed} HTTP ingest sends failed, e.g. ${firstError}\n`);
  return { latencies, failed, durationMs: performance.now() - t0 };
}

function combine(runs: IngestRun[]): HttpIngestCase {
  const latencies = runs.flatMap((run) => run.latencies);
  const failed = runs.reduce((sum, run) => sum + run.failed, 0);
  const durationMs = runs.reduce((sum, run) => sum + run.durationMs, 0);
  return {
    signals: latencies.length + failed,
    failed,
    durationMs: Math.round(durationMs),
    acceptedPerSecond: Math.round((latencies.length / durationMs) * 100_000) / 100,
    acceptLatency: summarize(latencies),
  };
}
