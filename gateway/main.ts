/**
 * A standalone gateway process (production: several of them behind a load balancer, sharing Redis).
 *   TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 PORT=4111 npx tsx gateway/main.ts   (or `threadline gateway`)
 */
import { Client, Connection } from '@temporalio/client';
import { connect } from '../client/connect';
import { threadlineConnectionOptions } from '../client/grpc-retry';
import { isEntryPoint, runEntry } from '../config/entry';
import { readSettings, temporalAddress, temporalConnectionOptions, type Settings } from '../config/settings';
import { configureLogging, logger } from '../observability';
import { installTracing, temporalClientInterceptors } from '../observability/tracing';
import { describeAccess } from './auth';
import { serveGateway } from './serve';

/** Serves the gateway until SIGINT/SIGTERM. */
export async function runGateway(settings: Settings): Promise<void> {
  const { server: listen, gateway: access, temporal } = settings;
  configureLogging({ level: settings.observability.logLevel });
  const log = logger('gateway');
  // Before the Temporal client: it carries each request's span into the workflow only when tracing is on.
  const tracing = installTracing({ serviceName: 'threadline-gateway', ...settings.tracing });
  const address = temporalAddress(settings);
  if (!settings.redisUrl) {
    log.warn('REDIS_URL is not set: this gateway only sees events of workers in its own process.');
  }
  const connection = await Connection.connect(
    threadlineConnectionOptions(temporalConnectionOptions(temporal, address)),
  );
  const client = await connect({
    redisUrl: settings.redisUrl,
    client: new Client({ connection, namespace: temporal.namespace, interceptors: temporalClientInterceptors() }),
    taskQueue: temporal.taskQueue,
    limits: { maxInputBytes: listen.maxInputBytes },
    deliveryTimeoutMs: listen.deliveryTimeoutMs,
  });
  const server = await serveGateway({
    client,
    // Workers announce the agents they host on the bus; the gateway never loads agent code.
    agents: client.agents,
    port: listen.port,
    hostname: listen.host,
    keepAliveMs: listen.keepAliveMs,
    http: listen.http,
    ...access,
    // Rate limits are counted in Redis, so the gateways on it share one limit per caller.
    redisUrl: settings.redisUrl,
  });
  log.info({ url: `http://${listen.host}:${server.port}`, temporalAddress: address }, 'threadline gateway serving');
  log.info(describeAccess(access.apiKeys, access.apiKeysSource));
  const stop = async () => {
    await server.close();
    await client.close();
    await connection.close();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (isEntryPoint(import.meta.url)) await runEntry(() => runGateway(readSettings(process.env, 'gateway')));
