/**
 * A standalone worker process (production: several of them, against a Temporal cluster and Redis).
 *   TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 npx tsx worker/main.ts   (or `threadline worker`)
 *
 * Its HTTP listener (THREADLINE_WORKER_HTTP_PORT, default 9464) serves `/health` and `/metrics`.
 */
import { NativeConnection } from '@temporalio/worker';
import { defaultModelName } from '../agents/models';
import { agents } from '../agents/served';
import { createBus } from '../bus';
import { isEntryPoint, runEntry } from '../config/entry';
import { readSettings, temporalAddress, temporalConnectionOptions, type Settings } from '../config/settings';
import { configureLogging, logger } from '../observability';
import { installTracing } from '../observability/tracing';
import { serveWorkerHttp } from './http';
import { createWorker } from './index';
import { installTemporalRuntime } from './telemetry';

/** Runs a worker hosting the deployment's agents until SIGINT/SIGTERM. */
export async function runWorker(settings: Settings): Promise<void> {
  const { logLevel, workerHttpPort } = settings.observability;
  configureLogging({ level: logLevel });
  const log = logger('worker');
  // Before the worker: it adds the tracing interceptors only when tracing is on.
  const tracing = installTracing({ serviceName: 'threadline-worker', ...settings.tracing });
  // Before any connection: the Runtime is built with the first one.
  await installTemporalRuntime({ logLevel, coreLogFilter: settings.observability.temporalCoreLogFilter });
  const address = temporalAddress(settings);
  if (!settings.redisUrl) {
    log.warn('REDIS_URL is not set: events stay in this process, so only a gateway in this process can stream them.');
  }
  const { taskQueue, namespace } = settings.temporal;
  log.info(
    { temporalAddress: address, namespace, taskQueue, model: defaultModelName(settings.models) },
    'threadline worker starting',
  );
  const connection = await NativeConnection.connect(temporalConnectionOptions(settings.temporal, address));
  const bus = createBus({ redisUrl: settings.redisUrl });
  const worker = await createWorker({
    agents,
    bus,
    connection,
    namespace,
    taskQueue,
    models: settings.models,
    stickyQueueTimeoutMs: settings.worker.stickyQueueTimeoutMs,
  });
  const http =
    workerHttpPort === 'off'
      ? null
      : await serveWorkerHttp({
          worker: worker.worker,
          port: workerHttpPort,
          host: settings.server.host,
          limits: settings.server.http,
          log,
        });
  if (http) log.info({ health: `${http.url}/health`, metrics: `${http.url}/metrics` }, 'health and metrics');
  // The Temporal worker shuts down gracefully on SIGINT/SIGTERM: polling stops, in-flight tasks get the grace time.
  await worker.run();
  await http?.close();
  await bus.close();
  await connection.close();
  await tracing?.shutdown();
}

if (isEntryPoint(import.meta.url)) await runEntry(() => runWorker(readSettings(process.env, 'worker')));
