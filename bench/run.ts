/**
 * `npm run bench [-- --quick]`: starts its own dev server, model server, worker and client on loopback, runs every
 * benchmark in one process, prints the results as JSON on stdout and writes BENCHMARKS.md.
 * `npm run bench -- --only=state-ingest[,gateway-bus…]` runs just those and prints their JSON (BENCHMARKS.md is left
 * alone: it needs every result).
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startBenchEnv, type BenchEnv } from './env';
import { benchHistory } from './history';
import { benchIdleWake } from './idle-wake';
import { benchInjection } from './injection';
import { benchGatewayBus } from './gateway-bus';
import { benchGatewayFuzzMemory } from './gateway-fuzz-memory';
import { benchGatewayMemory } from './gateway-memory';
import { floorIngest } from './floor/ingest';
import { benchHttp } from './http';
import { benchMemory } from './memory';
import { benchInterrupt } from './interrupt';
import { benchNotifications } from './notifications';
import { renderReport, type BenchResults } from './report';
import { evaluateTargets } from './targets';
import { benchSignalIngest } from './signal-ingest';
import { benchStateIngest } from './state-ingest';

const quick = process.argv.includes('--quick');
const sizes = quick
  ? {
      wake: { samples: 30, warmup: 5 },
      injection: { samples: 10, warmup: 2 },
      history: { threads: 1, turnsPerThread: 50 },
      ingest: {
        oneThread: 300,
        manyThreads: 500,
        threads: 100,
        concurrency: 32,
        belowCapConcurrency: 8,
        maxSecondsPerCase: 60,
      },
      interrupt: { samples: 5, warmup: 1 },
      gatewayBus: {
        firstDelta: { samples: 20, warmup: 3 },
        fanOut: { subscribers: [1, 100], runs: 2, deltas: 500 },
        resume: { samples: 10, warmup: 2 },
      },
      stateIngest: { ratePerSecond: 50, seconds: 10, duplicateShare: 0.9 },
      notifications: {
        notifications: 1_000,
        threads: 10,
        concurrency: 48,
        dedupeRun: 10,
        digestWindowMs: 1_000,
        maxSeconds: 120,
        settleSeconds: 120,
      },
      pacedNotifications: { notifications: 300, threads: 10, ratePerSecond: 46.5 },
      http: { latency: { samples: 10, warmup: 2 }, ingest: { threads: 50, signals: 100, concurrency: 32 } },
      memory: { cacheSize: 100, stages: [100, 400, 700, 1_000], concurrency: 32 },
      gatewayMemory: { subscribers: 100, chunks: 8_000, rounds: 1 },
    }
  : {
      wake: { samples: 300, warmup: 10 },
      injection: { samples: 100, warmup: 5 },
      history: { threads: 3, turnsPerThread: 50 },
      ingest: {
        oneThread: 3_000,
        manyThreads: 3_000,
        threads: 1_000,
        concurrency: 32,
        belowCapConcurrency: 8,
        maxSecondsPerCase: 240,
      },
      interrupt: { samples: 20, warmup: 2 },
      gatewayBus: {
        firstDelta: { samples: 200, warmup: 10 },
        fanOut: { subscribers: [1, 100], runs: 5, deltas: 2_000 },
        resume: { samples: 50, warmup: 3 },
      },
      stateIngest: { ratePerSecond: 50, seconds: 60, duplicateShare: 0.9 },
      notifications: {
        notifications: 10_000,
        threads: 100,
        concurrency: 48,
        dedupeRun: 10,
        digestWindowMs: 1_000,
        maxSeconds: 600,
        settleSeconds: 300,
      },
      pacedNotifications: { notifications: 2_000, threads: 100, ratePerSecond: 46.5 },
      http: { latency: { samples: 100, warmup: 5 }, ingest: { threads: 500, signals: 4_000, concurrency: 32 } },
      memory: { cacheSize: 500, stages: [500, 1_500, 4_000, 7_000, 10_000], concurrency: 32 },
      gatewayMemory: { subscribers: 1_000, chunks: 8_000, rounds: 2 },
    };
const reportPath = fileURLToPath(new URL('../BENCHMARKS.md', import.meta.url));
const progress = (line: string) => process.stderr.write(`bench [${Math.round(performance.now() / 1000)} s]: ${line}\n`);
const only = process.argv
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',')
  .filter(Boolean);

/** Each benchmark by its command-line name (`--only=`), returning its results under their key. */
const benchmarks = {
  'idle-wake': async (env: BenchEnv) => {
    progress(`(a) idle wake: ${sizes.wake.warmup} warm-up + ${sizes.wake.samples} rounds…`);
    return { idleWake: await benchIdleWake(env, sizes.wake) };
  },
  injection: async (env: BenchEnv) => {
    progress(`(b) active injection: ${sizes.injection.warmup} warm-up + ${sizes.injection.samples} samples…`);
    return { injection: await benchInjection(env, sizes.injection) };
  },
  history: async (env: BenchEnv) => {
    progress(`(c) history: ${sizes.history.threads} threads × ${sizes.history.turnsPerThread} turns…`);
    return { history: await benchHistory(env, sizes.history) };
  },
  'signal-ingest': async (env: BenchEnv) => {
    const { ingest: i } = sizes;
    progress(
      `(d) signal ingest: ${i.oneThread} to one thread (${i.concurrency} and ${i.belowCapConcurrency} in flight), ` +
        `${i.manyThreads} over ${i.threads} threads (${i.concurrency} in flight); at most ${i.maxSecondsPerCase} s each…`,
    );
    return { signalIngest: await benchSignalIngest(env, i, progress) };
  },
  interrupt: async (env: BenchEnv) => {
    progress(`(e) interrupt: ${sizes.interrupt.warmup} warm-up + ${sizes.interrupt.samples} samples per variant…`);
    return { interrupt: await benchInterrupt(env, sizes.interrupt) };
  },
  'gateway-bus': async (env: BenchEnv) => {
    progress('(f) gateway and event bus: in-process vs Redis Streams…');
    return { gatewayBus: await benchGatewayBus(env, sizes.gatewayBus, progress) };
  },
  'state-ingest': async (env: BenchEnv) => {
    const s = sizes.stateIngest;
    progress(
      `(g) state ingest: ${s.ratePerSecond}/s for ${s.seconds} s to one active thread, ` +
        `${Math.round(s.duplicateShare * 100)} % duplicates…`,
    );
    return { stateIngest: await benchStateIngest(env, s, progress) };
  },
  notifications: async (env: BenchEnv) => {
    const n = sizes.notifications;
    progress(
      `(h) notifications: ${n.notifications} over ${n.threads} threads, one per call, ${n.concurrency} in flight, ` +
        `dedupe keys in runs of ${n.dedupeRun}, digest window ${n.digestWindowMs} ms…`,
    );
    progress(`  floor: update-with-start accept-only, same shape…`);
    const floor = await floorIngest(env.floor, {
      label: `${n.threads} workflows, update-with-start, accept only`,
      via: 'update-with-start',
      workflows: n.threads,
      inputs: n.notifications,
      concurrency: n.concurrency,
      maxSeconds: n.maxSeconds,
    });
    const notifications = await benchNotifications(env, n, progress);
    const p = sizes.pacedNotifications;
    progress(`(h2) notifications paced at ${p.ratePerSecond}/s: ${p.notifications} over ${p.threads} threads…`);
    const paced = await benchNotifications(env, { ...n, ...p }, progress);
    return { notifications: { ...notifications, floor, paced } };
  },
  http: async (env: BenchEnv) => {
    progress('(i) HTTP gateway vs in-process client…');
    return { http: await benchHttp(env, sizes.http, progress) };
  },
  memory: async (env: BenchEnv) => {
    const m = sizes.memory;
    progress(
      `(j) worker memory: worker processes caching ${m.cacheSize} threads each, one per malloc configuration, ` +
        `measured at ${m.stages.join(', ')} idle threads created…`,
    );
    return { memory: await benchMemory(env, m, progress) };
  },
  'gateway-memory': async (env: BenchEnv) => {
    const g = sizes.gatewayMemory;
    progress(
      `(k) gateway memory: ${g.subscribers} stalled SSE subscribers of one thread while ${g.chunks} chunks stream, ` +
        `${g.rounds} round(s)…`,
    );
    return { gatewayMemory: await benchGatewayMemory(env, g, progress) };
  },
  // Only with --only: docs/limits.md records its run (issue #14, "Found from outside" 5).
  'gateway-fuzz-memory': async (env: BenchEnv) => {
    const requests = Number(process.env.THREADLINE_FUZZ_RUNS ?? 10_000);
    progress(`(l) gateway memory under ${requests} fuzzed requests, measured every 1,000: the gateway alone…`);
    const gatewayOnly = await benchGatewayFuzzMemory(env, { requests, batch: 1_000, workerInGateway: false }, progress);
    progress(`(l) … and with the worker in its process, as npm start runs them…`);
    const withWorker = await benchGatewayFuzzMemory(env, { requests, batch: 1_000, workerInGateway: true }, progress);
    return { gatewayFuzzMemory: { gatewayOnly, withWorker } };
  },
};

const unknown = only?.filter((name) => !(name in benchmarks)) ?? [];
if (unknown.length > 0) {
  throw new Error(`Unknown benchmark ${unknown.join(', ')}. Known: ${Object.keys(benchmarks).join(', ')}.`);
}

// The dev server is a child process; exiting (also on Ctrl-C) kills it (see worker/dev-server.ts).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const loadAtStart = os.loadavg();
const startedAt = performance.now();
progress('starting the dev server, model server and worker…');
const env = await startBenchEnv();
try {
  if (only) {
    const selected = {};
    for (const name of only) Object.assign(selected, await benchmarks[name as keyof typeof benchmarks](env));
    process.stdout.write(
      `${JSON.stringify({ quick, loadAverage: { start: loadAtStart, end: os.loadavg() }, ...selected }, null, 2)}\n`,
    );
    progress('--only: BENCHMARKS.md left as it was');
  } else {
    const { idleWake } = await benchmarks['idle-wake'](env);
    const { injection } = await benchmarks.injection(env);
    const { history } = await benchmarks.history(env);
    const { signalIngest } = await benchmarks['signal-ingest'](env);
    const { interrupt } = await benchmarks.interrupt(env);
    const { gatewayBus } = await benchmarks['gateway-bus'](env);
    const { stateIngest } = await benchmarks['state-ingest'](env);
    const { notifications } = await benchmarks.notifications(env);
    const { http } = await benchmarks.http(env);
    const { memory } = await benchmarks.memory(env);
    // The last and longest-running case alone: a failure of it leaves the rest of the run's report standing.
    const gatewayMemory = await benchmarks['gateway-memory'](env).then(
      (result) => result.gatewayMemory,
      (err: Error) => {
        progress(`(k) failed: ${err.stack ?? err.message}`);
        return { failed: err.message };
      },
    );

    const results: BenchResults = {
      machine: {
        cpu: os.cpus()[0]?.model ?? 'unknown',
        cores: os.cpus().length,
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
        node: process.version,
        os: `${os.type()} ${os.release()} ${os.arch()}`,
        temporalCli: env.cliVersion,
        temporalDynamicConfig: env.serverConfig,
        loadAverage: { start: loadAtStart, end: os.loadavg() },
        date: new Date().toISOString(),
        command: `npm run bench${quick ? ' -- --quick' : ''}`,
      },
      quick,
      idleWake,
      injection,
      history,
      signalIngest,
      interrupt,
      gatewayBus,
      stateIngest,
      notifications,
      http,
      memory,
      gatewayMemory,
      durationSeconds: Math.round((performance.now() - startedAt) / 1000),
      floorWorkerSettings: env.floor.sharedSettings,
    };
    process.stdout.write(`${JSON.stringify({ ...results, targets: evaluateTargets(results) }, null, 2)}\n`);
    await writeFile(reportPath, renderReport(results));
    progress(`wrote ${reportPath}`);
  }
} catch (err) {
  // Printed before the clean-up: a retry timer of a closed connection can end the process first.
  progress(`failed: ${(err as Error).stack ?? err}`);
  throw err;
} finally {
  await env.close();
}
