/**
 * `npm start`: the whole stack in one command. The Temporal dev server (built from the Go module proxy on first run,
 * data kept in THREADLINE_DATA_DIR), a worker and the gateway, sharing an in-process bus (or Redis with REDIS_URL).
 * With a Temporal address configured (TEMPORAL_ADDRESS, or the temporal.toml profile), that server is used and none
 * is started.
 *
 * One process, one `/metrics` and one `/health`: the gateway's, which cover the worker too (there is no worker
 * listener here).
 */
import { resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { defaultModelName } from '../agents/models';
import { agents } from '../agents/served';
import { summarizeAgents } from '../agents/summary';
import { createBus } from '../bus';
import { connect } from '../client/connect';
import { threadlineConnectionOptions } from '../client/grpc-retry';
import { isEntryPoint, runEntry } from '../config/entry';
import { readSettings, temporalConnectionOptions, type Settings } from '../config/settings';
import { describeAccess } from '../gateway/auth';
import { serveGateway } from '../gateway/serve';
import { configureLogging, logger } from '../observability';
import { installTracing, temporalClientInterceptors } from '../observability/tracing';
import { startDevServer, type DevServer } from './dev-server';
import { createWorker } from './index';
import { installTemporalRuntime } from './telemetry';
import { locateTemporalCli } from './temporal-cli';

/**
 * Starts the stack and returns once the gateway serves; SIGINT/SIGTERM shut it down. `env` is passed to the Temporal
 * CLI lookup (PATH, the Go build); the settings were read from it already (`readSettings(env, 'start')`).
 */
export async function startStack(settings: Settings, env: NodeJS.ProcessEnv): Promise<void> {
  const { models, temporal, server: listen, gateway: access } = settings;
  const modelName = defaultModelName(models);
  configureLogging({ level: settings.observability.logLevel });
  const log = logger('start');
  // Before the worker and the Temporal client: they add their tracing interceptors only when tracing is on.
  const tracing = installTracing({ serviceName: 'threadline', ...settings.tracing });
  // Before any connection: the Runtime is built with the first one.
  await installTemporalRuntime({
    logLevel: settings.observability.logLevel,
    coreLogFilter: settings.observability.temporalCoreLogFilter,
  });

  let devServer: DevServer | null = null;
  let address = temporal.address;
  if (address) {
    log.info({ temporalAddress: address, source: temporal.addressSource }, 'using the configured Temporal server');
  } else {
    const cliPath = await locateTemporalCli({ log: (line) => log.info(line), env });
    const dataDir = resolve(settings.devServer.dataDir);
    devServer = await startDevServer({
      cliPath,
      port: settings.devServer.port,
      uiPort: settings.devServer.uiPort,
      dataDir,
      namespace: temporal.namespace,
    });
    address = devServer.address;
    log.info({ temporalAddress: address, ui: devServer.uiUrl, dataDir }, 'Temporal dev server started');
  }

  const bus = createBus({ redisUrl: settings.redisUrl });
  const nativeConnection = await NativeConnection.connect(temporalConnectionOptions(temporal, address));
  const worker = await createWorker({
    agents,
    bus,
    connection: nativeConnection,
    namespace: temporal.namespace,
    taskQueue: temporal.taskQueue,
    models,
    stickyQueueTimeoutMs: settings.worker.stickyQueueTimeoutMs,
  });
  const workerRun = worker.run();

  const connection = await Connection.connect(
    threadlineConnectionOptions(temporalConnectionOptions(temporal, address)),
  );
  const client = await connect({
    bus,
    client: new Client({ connection, namespace: temporal.namespace, interceptors: temporalClientInterceptors() }),
    taskQueue: temporal.taskQueue,
    limits: { maxInputBytes: listen.maxInputBytes },
    deliveryTimeoutMs: listen.deliveryTimeoutMs,
  });
  const gateway = await serveGateway({
    client,
    agents: summarizeAgents(agents, models),
    port: listen.port,
    hostname: listen.host,
    keepAliveMs: listen.keepAliveMs,
    http: listen.http,
    ...access,
    temporalUiUrl: access.temporalUiUrl ?? devServer?.uiUrl,
    redisUrl: settings.redisUrl,
  });

  if (modelName === 'demo') {
    log.info(
      'Model: the OFFLINE DEMO MODEL (it quotes your message back). Set OPENAI_API_KEY (or OPENAI_BASE_URL) and MODEL=openai/gpt-4o-mini for a real one.',
    );
  } else {
    log.info({ model: modelName, openaiBaseUrl: models.openaiBaseUrl }, 'model');
  }
  log.info({ bus: settings.redisUrl ? 'redis' : 'in-process' }, 'bus');
  log.info(
    {
      url: gateway.url,
      agents: agents.map((a) => a.id),
      health: `${gateway.url}/health`,
      metrics: `${gateway.url}/metrics`,
    },
    'Threadline gateway serving',
  );
  log.info(describeAccess(access.apiKeys, access.apiKeysSource));
  log.info(
    {
      try: [
        `curl -N ${gateway.url}/api/threads/user_123/thread_456/events &`,
        `curl -s ${gateway.url}/api/agents/${agents[0].id}/send-message -H 'content-type: application/json' ` +
          `-d '{"message":"Hello!","resourceId":"user_123","threadId":"thread_456"}'`,
      ],
    },
    'try it',
  );
  log.info({ console: `${gateway.url}/console` }, `Console: open ${gateway.url}/console in a browser`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down (in-flight steps get 10 s to finish)');
    await gateway.close();
    await worker.shutdown();
    await workerRun.catch(() => undefined);
    await bus.close();
    await connection.close();
    await nativeConnection.close();
    await devServer?.stop();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

// Settings are read before anything starts: a bad key file or limit stops `npm start` at once, not after the dev
// server is up.
if (isEntryPoint(import.meta.url)) await runEntry(() => startStack(readSettings(process.env, 'start'), process.env));
