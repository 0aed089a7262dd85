/**
 * `npm run bench [-- --quick]`: starts its own dev server, model server, worker and client on loopback, runs every
 * benchmark in one process, prints the results as JSON on stdout and writes BENCHMARKS.md.
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { startBenchEnv } from './env';
import { benchHistory } from './history';
import { benchIdleWake } from './idle-wake';
import { benchInjection } from './injection';
import { benchInterrupt } from './interrupt';
import { renderReport, targets, type BenchResults } from './report';
import { benchSignalIngest } from './signal-ingest';

const quick = process.argv.includes('--quick');
const sizes = quick
  ? {
      wake: { samples: 30, warmup: 5 },
      injection: { samples: 10, warmup: 2 },
      history: { threads: 2, turnsPerThread: 3 },
      ingest: {
        oneThread: 300,
        manyThreads: 500,
        threads: 100,
        concurrency: 32,
        belowCapConcurrency: 8,
        maxSecondsPerCase: 60,
      },
      interrupt: { samples: 5, warmup: 1 },
    }
  : {
      wake: { samples: 300, warmup: 10 },
      injection: { samples: 100, warmup: 5 },
      history: { threads: 10, turnsPerThread: 10 },
      ingest: {
        oneThread: 3_000,
        manyThreads: 5_000,
        threads: 1_000,
        concurrency: 32,
        belowCapConcurrency: 8,
        maxSecondsPerCase: 240,
      },
      interrupt: { samples: 30, warmup: 2 },
    };
const reportPath = fileURLToPath(new URL('../BENCHMARKS.md', import.meta.url));
const progress = (line: string) => process.stderr.write(`bench: ${line}\n`);

// The dev server is a child process; exiting (also on Ctrl-C) kills it (see worker/dev-server.ts).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const loadAtStart = os.loadavg();
progress('starting the dev server, model server and worker…');
const env = await startBenchEnv();
try {
  progress(`(a) idle wake: ${sizes.wake.warmup} warm-up + ${sizes.wake.samples} rounds…`);
  const idleWake = await benchIdleWake(env, sizes.wake);
  progress(`(b) active injection: ${sizes.injection.warmup} warm-up + ${sizes.injection.samples} samples…`);
  const injection = await benchInjection(env, sizes.injection);
  progress(`(c) history: ${sizes.history.threads} threads × ${sizes.history.turnsPerThread} turns…`);
  const history = await benchHistory(env, sizes.history);
  const { ingest: i } = sizes;
  progress(
    `(d) signal ingest: ${i.oneThread} to one thread (${i.concurrency} and ${i.belowCapConcurrency} in flight), ` +
      `${i.manyThreads} over ${i.threads} threads (${i.concurrency} in flight); at most ${i.maxSecondsPerCase} s each…`,
  );
  const signalIngest = await benchSignalIngest(env, i, progress);
  progress(`(e) interrupt: ${sizes.interrupt.warmup} warm-up + ${sizes.interrupt.samples} samples per variant…`);
  const interrupt = await benchInterrupt(env, sizes.interrupt);

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
  };
  process.stdout.write(`${JSON.stringify({ ...results, targets }, null, 2)}\n`);
  await writeFile(reportPath, renderReport(results));
  progress(`wrote ${reportPath}`);
} finally {
  await env.close();
}
