/**
 * A Threadline gateway as a process of its own, serving the test agents: for tests (and benchmarks) that run several
 * gateways on one Redis and kill them for real. It mirrors `gateway/main.ts`, which serves the deployment's
 * agents instead (the gateway answers 404 for agent ids it does not know). Started by `startGatewayProcess()`
 * (test/support/processes.ts); prints `READY <url>` once it listens, then runs until killed.
 *
 * Settings (environment):
 *   TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE   the dev server and the test's task queue
 *   REDIS_URL                               the event bus shared with the workers
 *   PORT, HOST                              where to listen (PORT=0: any free port, announced in the READY line)
 *   THREADLINE_TEST_AGENTS                  comma-separated ids of the test agents to accept (default `tester`;
 *                                           the table is test/support/test-agents.ts)
 *   THREADLINE_THREAD_CONFIG                JSON settings of the threads this gateway creates (`threadConfig`)
 *   THREADLINE_API_KEYS, THREADLINE_RATE_LIMIT_*, …  the gateway settings, read as `gateway/main.ts` reads them;
 *                                           rate limits are shared in Redis only when THREADLINE_RATE_LIMIT_SHARED
 *                                           is set (so benchmarks that send from one address through several
 *                                           gateways keep one limit per gateway, as before)
 *   LOG_LEVEL                               the gateway's log level (default info)
 */
import { Client, Connection } from '@temporalio/client';
import { RedisBus } from '../../bus/redis';
import { connect } from '../../client/connect';
import { serveGateway } from '../../gateway/serve';
import type { ThreadConfigInput } from '../../protocol/thread-config';
import { summarizeAgents } from '../../agents/summary';
import { gatewaySettingsFromEnv } from '../../config/settings';
import { configureLogging, type LogLevel } from '../../observability';
import { testAgentsFromEnv } from './test-agents';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set. startGatewayProcess() passes it; set it when running this by hand.`);
  return value;
}

function threadConfigFromEnv(): ThreadConfigInput | undefined {
  const raw = process.env.THREADLINE_THREAD_CONFIG;
  return raw ? (JSON.parse(raw) as ThreadConfigInput) : undefined;
}

configureLogging({ level: (process.env.LOG_LEVEL as LogLevel | undefined) ?? 'info' });
const settings = gatewaySettingsFromEnv(process.env);
const connection = await Connection.connect({ address: required('TEMPORAL_ADDRESS') });
const bus = new RedisBus(required('REDIS_URL'));
const client = await connect({
  bus,
  client: new Client({ connection }),
  taskQueue: required('TEMPORAL_TASK_QUEUE'),
  threadConfig: threadConfigFromEnv(),
});
const server = await serveGateway({
  ...settings,
  ...(process.env.THREADLINE_RATE_LIMIT_SHARED && { redisUrl: required('REDIS_URL') }),
  client,
  // The same table as worker-process.ts hosts: a gateway only needs to know which agents exist.
  agents: summarizeAgents(testAgentsFromEnv()),
  port: Number(process.env.PORT ?? 0),
  hostname: process.env.HOST || '127.0.0.1',
});
console.log(`READY ${server.url}`);

const stop = async () => {
  await server.close();
  await bus.close();
  await connection.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
