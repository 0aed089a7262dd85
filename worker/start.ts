/**
 * `npm start`: the whole stack in one command. The Temporal dev server (built from the Go module proxy on first run,
 * data kept in THREADLINE_DATA_DIR), a worker and the gateway, sharing an in-process bus (or Redis with REDIS_URL).
 * With TEMPORAL_ADDRESS set, that server is used and none is started.
 */
import { resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { defaultModelName, modelSettingsFromEnv } from '../agents/models';
import { createBus } from '../bus';
import { connect } from '../client/connect';
import { describeAccess } from '../gateway/auth';
import { serveGateway } from '../gateway/serve';
import { gatewaySettingsFromEnv, settingsFromEnv, temporalConnectionOptions } from '../config/settings';
import { agents } from '../agents/served';
import { summarizeAgents } from '../agents/summary';
import { startDevServer, type DevServer } from './dev-server';
import { createWorker } from './index';
import { locateTemporalCli } from './temporal-cli';

const settings = settingsFromEnv();
// Read before anything starts: a bad key file or limit stops `npm start` at once, not after the dev server is up.
const gatewaySettings = gatewaySettingsFromEnv();
const models = modelSettingsFromEnv();
const modelName = defaultModelName(models);

let devServer: DevServer | null = null;
let address = settings.temporalAddress;
if (address) {
  console.log(`Using the Temporal server at ${address} (TEMPORAL_ADDRESS).`);
} else {
  const cliPath = await locateTemporalCli({ log: (line) => console.log(line) });
  const dataDir = resolve(settings.dataDir);
  devServer = await startDevServer({
    cliPath,
    port: settings.temporalPort,
    uiPort: settings.temporalUiPort,
    dataDir,
    namespace: settings.temporalNamespace,
  });
  address = devServer.address;
  console.log(`Temporal dev server: ${address} (UI ${devServer.uiUrl}), data in ${dataDir}`);
}

const bus = createBus({ redisUrl: settings.redisUrl });
const nativeConnection = await NativeConnection.connect(temporalConnectionOptions(settings, address) as never);
const worker = await createWorker({
  agents,
  bus,
  connection: nativeConnection,
  namespace: settings.temporalNamespace,
  taskQueue: settings.temporalTaskQueue,
  models,
});
const workerRun = worker.run();

const connection = await Connection.connect(temporalConnectionOptions(settings, address));
const client = await connect({
  bus,
  client: new Client({ connection, namespace: settings.temporalNamespace }),
  taskQueue: settings.temporalTaskQueue,
  limits: { maxInputBytes: settings.maxInputBytes },
});
const gateway = await serveGateway({
  client,
  agents: summarizeAgents(agents, models),
  port: settings.port,
  hostname: settings.host,
  keepAliveMs: settings.keepAliveMs,
  ...gatewaySettings,
});

if (modelName === 'demo') {
  console.log(
    'Model: the OFFLINE DEMO MODEL (it quotes your message back). Set OPENAI_API_KEY (or OPENAI_BASE_URL) and MODEL=openai/gpt-4o-mini for a real one.',
  );
} else {
  console.log(`Model: ${modelName}${models.openaiBaseUrl ? ` at ${models.openaiBaseUrl}` : ''}`);
}
console.log(`Bus: ${settings.redisUrl ? `Redis at ${settings.redisUrl}` : 'in-process'}`);
console.log(`Threadline gateway: ${gateway.url}  (agents: ${agents.map((a) => a.id).join(', ')})`);
console.log(describeAccess(gatewaySettings.apiKeys, gatewaySettings.apiKeysSource));
console.log(`Try:
  curl -N ${gateway.url}/api/threads/user_123/thread_456/events &
  curl -s ${gateway.url}/api/agents/${agents[0].id}/send-message -H 'content-type: application/json' \\
    -d '{"message":"Hello!","resourceId":"user_123","threadId":"thread_456"}'`);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: shutting down (in-flight steps get 10 s to finish)…`);
  await gateway.close();
  await worker.shutdown();
  await workerRun.catch(() => undefined);
  await bus.close();
  await connection.close();
  await nativeConnection.close();
  await devServer?.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
