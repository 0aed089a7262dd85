/**
 * A standalone gateway process (production: several of them behind a load balancer, sharing Redis).
 *   TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 PORT=4111 npx tsx client/gateway/main.ts
 */
import { Client, Connection } from '@temporalio/client';
import { agents } from '../../worker/agents';
import { createBus } from '../bus';
import { connect } from '../connect';
import { gatewaySettingsFromEnv, settingsFromEnv, temporalConnectionOptions } from '../settings';
import { describeAccess } from './auth';
import { serveGateway } from './serve';

const settings = settingsFromEnv();
const gatewaySettings = gatewaySettingsFromEnv();
const address = settings.temporalAddress ?? `127.0.0.1:${settings.temporalPort}`;
if (!settings.redisUrl)
  console.warn('REDIS_URL is not set: this gateway only sees events of workers in its own process.');
const connection = await Connection.connect(temporalConnectionOptions(settings, address));
const bus = createBus({ redisUrl: settings.redisUrl });
const client = await connect({
  bus,
  client: new Client({ connection, namespace: settings.temporalNamespace }),
  taskQueue: settings.temporalTaskQueue,
  limits: { maxInputBytes: settings.maxInputBytes },
});
const server = await serveGateway({
  client,
  agents,
  port: settings.port,
  hostname: settings.host,
  keepAliveMs: settings.keepAliveMs,
  ...gatewaySettings,
});
console.log(`threadline gateway: http://${settings.host}:${server.port} (Temporal ${address})`);
console.log(describeAccess(gatewaySettings.apiKeys, gatewaySettings.apiKeysSource));
const stop = async () => {
  await server.close();
  await bus.close();
  await connection.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
