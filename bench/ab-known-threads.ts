/**
 * A/B: sends to running threads by plain update or signal (a client's `knownThreads`, the default) against
 * update-with-start or signal-with-start for every send (`knownThreads: 0`, as before), in one process on the bench's
 * world: two clients on the same bus and server, runs alternating cold, known, known, cold. Each run sends `inputs`
 * over fresh threads, `concurrency` in flight: persist-only signals, then notifications (updates). Prints inputs/s and
 * this process's CPU per input.
 *
 *   npx tsx bench/ab-known-threads.ts [--inputs=1500] [--threads=50] [--concurrency=32]
 */
import { randomUUID } from 'node:crypto';
import { arg } from './args';
import { connect, type ThreadlineClient } from '../client/connect';
import { benchAgent, startBenchEnv } from './env';
import { ingestSignal, persistOnly, runIngest } from './ingest-loop';

const inputs = Number(arg('inputs', '1500'));
const threads = Number(arg('threads', '50'));
const concurrency = Number(arg('concurrency', '32'));

const env = await startBenchEnv();
const cold = await connect({
  bus: env.client.bus,
  client: env.client.temporal,
  taskQueue: env.client.taskQueue,
  knownThreads: 0,
});
const clients: Record<'cold' | 'known', ThreadlineClient> = { cold, known: env.client };
const kinds = {
  'persist-only signals': (client: ThreadlineClient, i: number, threadId: string) =>
    client.agent(benchAgent.id).sendSignal(ingestSignal(i), { resourceId: 'bench', threadId, ...persistOnly }),
  'notifications (update)': (client: ThreadlineClient, i: number, threadId: string) =>
    client
      .agent(benchAgent.id)
      .sendNotificationSignal(
        { source: 'bench', kind: 'ab', priority: 'low', summary: `notification ${i}`, dedupeKey: `k${i % 7}` },
        { resourceId: 'bench', threadId },
      ),
};
try {
  for (const [kind, send] of Object.entries(kinds)) {
    for (const side of ['cold', 'known', 'known', 'cold'] as const) {
      const ids = Array.from({ length: threads }, () => `ab-known-${randomUUID()}`);
      const cpu = process.cpuUsage();
      const run = await runIngest(inputs, concurrency, async (i) => {
        await send(clients[side], i, ids[i % threads]);
      });
      if (run.failed > 0) throw new Error(`${run.failed} sends failed, e.g. ${run.firstError}`);
      const used = process.cpuUsage(cpu);
      console.log(
        `${kind}, ${side === 'cold' ? 'every send with start' : 'known threads'}: ` +
          `${((inputs / run.durationMs) * 1000).toFixed(1)} inputs/s; ` +
          `CPU ms per input ${((used.user + used.system) / 1000 / inputs).toFixed(2)}`,
      );
    }
  }
} finally {
  await cold.close();
  await env.close();
}
