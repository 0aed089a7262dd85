/**
 * A standalone gateway process (production: several of them behind a load balancer, sharing Redis).
 *   TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 PORT=4111 npx tsx gateway/main.ts
 */
import { Client, Connection } from '@temporalio/client';
import { connect } from '../client/connect';
import { gatewaySettingsFromEnv, settingsFromEnv, temporalConnectionOptions } from '../config/settings';
import { describeAccess } from './auth';
import { serveGateway } from './serve';

const settings = settingsFromEnv();
const gatewaySettings = gatewaySettingsFromEnv();
const address = settings.temporalAddress ?? `127.0.0.1:${settings.temporalPort}`;
if (!settings.redisUrl)
  console.warn('REDIS_URL is not set: this gateway only sees events of workers in its own process.');
const connection = await Connection.connect(temporalConnectionOptions(settings, address));
const client = await connect({
  redisUrl: settings.redisUrl,
  client: new Client({ connection, namespace: settings.temporalNamespace }),
  taskQueue: settings.temporalTaskQueue,
  limits: { maxInputBytes: settings.maxInputBytes },
});
const server = await serveGateway({
  client,
  // Workers announce the agents they host on the bus; the gateway never loads agent code.
  agents: () => client.listAgents(),
  port: settings.port,
  hostname: settings.host,
  keepAliveMs: settings.keepAliveMs,
  ...gatewaySettings,
});
console.log(`threadline gateway: http://${settings.host}:${server.port} (Temporal ${address})`);
console.log(describeAccess(gatewaySettings.apiKeys, gatewaySettings.apiKeysSource));
const stop = async () => {
  await server.close();
  await client.close();
  await connection.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
