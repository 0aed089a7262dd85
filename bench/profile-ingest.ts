/**
 * A focused driver for profiling HTTP ingest (issue #12, target 10c): the bench's world, a gateway on it, then runs of
 * persist-only signals round-robin over fresh threads, through the in-process `sendSignal` and through the gateway with
 * a client in this process (undici `fetch`, as the bench's ingest client was), alternating. Prints, per side and run,
 * signals accepted per second and the CPU time per signal of this process (every thread: worker, Core, client,
 * gateway, `fetch`) and of the dev server (its process, from /proc).
 *
 *   npx tsx bench/profile-ingest.ts [--signals=1000] [--threads=250] [--concurrency=32] [--runs=2]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-ingest.ts --side=gateway --signals=3000
 */
import type { ThreadTarget } from '../protocol/schemas';
import { arg } from './args';
import { benchAgent, serveBenchGateway, startBenchEnv } from './env';
import { freshThread } from './gateway-bus';
import { ingestSignal, persistOnly, runIngest } from './ingest-loop';
import { cpuSnapshot } from './signal-ingest';

const signals = Number(arg('signals', '1000'));
const threads = Number(arg('threads', '250'));
const concurrency = Number(arg('concurrency', '32'));
const runs = Number(arg('runs', '2'));
const sides = arg('side', 'in-process,gateway').split(',') as Side[];
type Side = 'in-process' | 'gateway';

const env = await startBenchEnv();
const gateway = await serveBenchGateway(env);
const send: Record<Side, (i: number, target: ThreadTarget) => Promise<void>> = {
  'in-process': async (i, target) => {
    await env.agent.sendSignal(ingestSignal(i), { ...target, ...persistOnly });
  },
  gateway: async (i, target) => {
    const response = await fetch(`${gateway.url}/api/agents/${benchAgent.id}/signals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ signal: ingestSignal(i), ...target, ...persistOnly }),
    });
    if (response.status !== 200) throw new Error(`signals answered ${response.status}: ${await response.text()}`);
    await response.json();
  },
};
try {
  for (let run = 0; run < runs; run++) {
    for (const side of sides) {
      const targets = Array.from({ length: threads }, () => freshThread('profile-ingest'));
      const before = cpuSnapshot();
      const result = await runIngest(signals, concurrency, (i) => send[side](i, targets[i % threads]));
      if (result.failed > 0) throw new Error(`${result.failed} sends failed, e.g. ${result.firstError}`);
      const after = cpuSnapshot();
      // Seconds of CPU over the run, per signal, in ms.
      const perSignal = (seconds: number) => ((seconds * 1000) / signals).toFixed(2);
      console.log(
        `${side}: ${((signals / result.durationMs) * 1000).toFixed(1)} signals/s; CPU ms per signal: this process ` +
          `${perSignal(after.process - before.process)}, dev server ${perSignal(after.server - before.server)}`,
      );
    }
  }
} finally {
  await gateway.close();
  await env.close();
}
