/**
 * A focused driver for profiling the idle-wake path (issue #12, targets 2 and 10): the bench's world, a gateway on it,
 * then rounds of a new thread and its idle next turn, through the in-process client and through the gateway + SSE,
 * interleaved. Prints the CPU time (`process.cpuUsage()`, every thread of this process: worker, Core, client, gateway,
 * model server) per idle turn, from the send to the run's `finish` at the subscriber, for each side.
 *
 *   npx tsx bench/profile-wake.ts [--rounds=100]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-wake.ts --rounds=200 --side=in-process
 */
import { randomUUID } from 'node:crypto';
import { arg } from './args';
import { performance } from 'node:perf_hooks';
import type { ServedGateway } from '../gateway/serve';
import type { ThreadTarget } from '../protocol/schemas';
import { serveBenchGateway, startBenchEnv, watchTurn, withTimeout, type BenchEnv } from './env';
import { eventsUrl, freshThread, sendOverHttp, subscribeStamped } from './gateway-bus';
import { settledHistory } from './history';
import { summarize } from './stats';

const rounds = Number(arg('rounds', '100'));
const warmup = Number(arg('warmup', '10'));
const sides = arg('side', 'in-process,gateway').split(',') as Side[];
type Side = 'in-process' | 'gateway';

interface Turn {
  wallMs: number;
  cpuUs: number;
}

async function inProcessTurn(env: BenchEnv, target: ThreadTarget): Promise<Turn> {
  const sub = env.agent.subscribeToThread(target);
  try {
    const watching = watchTurn(sub.stream);
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const [turn] = await withTimeout(
      Promise.all([watching, env.agent.sendMessage(`profile ${randomUUID()}`, target)]),
      'an in-process turn',
    );
    const used = process.cpuUsage(cpu);
    return { wallMs: turn.firstDelta - t0, cpuUs: used.user + used.system };
  } finally {
    sub.unsubscribe();
  }
}

async function gatewayTurn(gateway: ServedGateway, target: ThreadTarget): Promise<Turn> {
  const sse = await subscribeStamped(eventsUrl(gateway.url, target), { until: (e) => e.type === 'finish' });
  try {
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const [events] = await withTimeout(
      Promise.all([sse.received, sendOverHttp(gateway.url, `profile ${randomUUID()}`, target)]),
      'a gateway turn',
    );
    const used = process.cpuUsage(cpu);
    const delta = events.find((e) => e.event.type === 'text-delta');
    return { wallMs: (delta?.at ?? NaN) - t0, cpuUs: used.user + used.system };
  } finally {
    sse.close();
  }
}

const env = await startBenchEnv();
const gateway = await serveBenchGateway(env);
const results: Record<string, { idle: Turn[]; fresh: Turn[] }> = {};
try {
  for (let i = 0; i < warmup + rounds; i++) {
    const order = i % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const turn =
        side === 'gateway' ? (t: ThreadTarget) => gatewayTurn(gateway, t) : (t: ThreadTarget) => inProcessTurn(env, t);
      const target = freshThread('profile');
      const fresh = await turn(target);
      await settledHistory(env, target);
      const idle = await turn(target);
      await settledHistory(env, target);
      if (i < warmup) continue;
      (results[side] ??= { idle: [], fresh: [] }).idle.push(idle);
      results[side].fresh.push(fresh);
    }
  }
} finally {
  await gateway.close();
  await env.close();
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const [side, { idle, fresh }] of Object.entries(results)) {
  for (const [kind, turns] of [
    ['idle', idle],
    ['fresh', fresh],
  ] as const) {
    const cpu = summarize(turns.map((t) => t.cpuUs / 1000));
    const wall = summarize(turns.map((t) => t.wallMs));
    process.stdout.write(
      `${side} ${kind}: CPU ms per turn (send → finish) mean ${mean(turns.map((t) => t.cpuUs / 1000)).toFixed(2)} ` +
        `p50 ${cpu.p50.toFixed(2)} p90 ${cpu.p90.toFixed(2)}; wall → first delta p50 ${wall.p50.toFixed(1)} p90 ${wall.p90.toFixed(1)}\n`,
    );
  }
}
