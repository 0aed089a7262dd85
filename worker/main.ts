/**
 * A standalone worker process (production: several of them, against a Temporal cluster and Redis).
 *   TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 npx tsx worker/main.ts   (or `threadline worker`)
 */
import { NativeConnection } from '@temporalio/worker';
import { defaultModelName } from '../agents/models';
import { agents } from '../agents/served';
import { createBus } from '../bus';
import { isEntryPoint, runEntry } from '../config/entry';
import { readSettings, temporalAddress, temporalConnectionOptions, type Settings } from '../config/settings';
import { createWorker } from './index';

/** Runs a worker hosting the deployment's agents until SIGINT/SIGTERM. */
export async function runWorker(settings: Settings): Promise<void> {
  const address = temporalAddress(settings);
  if (!settings.redisUrl) {
    console.warn(
      'REDIS_URL is not set: events stay in this process, so only a gateway in this process can stream them.',
    );
  }
  const { taskQueue, namespace } = settings.temporal;
  console.log(
    `threadline worker: Temporal ${address} (namespace ${namespace}), task queue ${taskQueue}, model ${defaultModelName(settings.models)}`,
  );
  const connection = await NativeConnection.connect(temporalConnectionOptions(settings.temporal, address));
  const bus = createBus({ redisUrl: settings.redisUrl });
  const worker = await createWorker({ agents, bus, connection, namespace, taskQueue, models: settings.models });
  // The Temporal worker shuts down gracefully on SIGINT/SIGTERM: polling stops, in-flight tasks get the grace time.
  await worker.run();
  await bus.close();
  await connection.close();
}

if (isEntryPoint(import.meta.url)) await runEntry(() => runWorker(readSettings(process.env, 'worker')));
