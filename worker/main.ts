/**
 * A standalone worker process (production: several of them, against a Temporal cluster and Redis).
 *   TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 npx tsx worker/main.ts
 */
import { createBus } from '../bus';
import { settingsFromEnv, temporalConnectionOptions } from '../config/settings';
import { NativeConnection } from '@temporalio/worker';
import { defaultModelName, modelSettingsFromEnv } from '../agents/models';
import { agents } from '../agents/served';
import { createWorker } from './index';

const settings = settingsFromEnv();
const address = settings.temporalAddress ?? `127.0.0.1:${settings.temporalPort}`;
if (!settings.redisUrl) {
  console.warn('REDIS_URL is not set: events stay in this process, so only a gateway in this process can stream them.');
}
const models = modelSettingsFromEnv();
console.log(
  `threadline worker: Temporal ${address}, task queue ${settings.temporalTaskQueue}, model ${defaultModelName(models)}`,
);
const connection = await NativeConnection.connect(temporalConnectionOptions(settings, address) as never);
const bus = createBus({ redisUrl: settings.redisUrl });
const worker = await createWorker({
  agents,
  bus,
  connection,
  namespace: settings.temporalNamespace,
  taskQueue: settings.temporalTaskQueue,
  models,
});
// The Temporal worker shuts down gracefully on SIGINT/SIGTERM: polling stops, in-flight tasks get the grace time.
await worker.run();
await bus.close();
await connection.close();
