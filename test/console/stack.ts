/**
 * The whole stack in one process for the console's scripts (screenshots, measurements): a Temporal dev server
 * (in memory, the cached CLI), the scripted model server, an in-process bus, a worker and a gateway. Tests use
 * test/support/harness.ts instead (it takes the dev server of vitest's global setup).
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { defineAgent, type AgentDefinition } from '../../agents/agent';
import { summarizeAgents } from '../../agents/summary';
import { MemoryBus } from '../../bus/memory';
import { connect, type ThreadlineClient } from '../../client/connect';
import type { ApiKeys } from '../../config/settings';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { configureLogging } from '../../observability';
import { startDevServer } from '../../worker/dev-server';
import { createWorker } from '../../worker/index';
import { locateTemporalCli } from '../../worker/temporal-cli';
import { startModelServer, type ModelServer, type Responder } from '../support/model-server';
import { adminAgent } from '../support/test-agents';

export interface ConsoleStack {
  client: ThreadlineClient;
  model: ModelServer;
  gateway: ServedGateway;
  /** Another gateway on the same client, with API keys. */
  keyedGateway(apiKeys: ApiKeys): Promise<ServedGateway>;
  temporalUiUrl: string;
  close(): Promise<void>;
}

/** A friendlier stand-in for a real assistant (the model is the scripted one). */
export const assistantAgent = defineAgent({
  id: 'assistant',
  instructions: 'You are a helpful assistant. Answer briefly and cite what the user told you.',
  model: 'openai/test-model',
});

export interface ConsoleStackOptions {
  agents?: AgentDefinition[];
  /** The model's answer when no scripted reply is queued (default: it echoes the last user message). */
  defaultReply?: Responder;
}

export async function startConsoleStack(options: ConsoleStackOptions = {}): Promise<ConsoleStack> {
  const agents = options.agents ?? [assistantAgent, adminAgent];
  configureLogging({ level: 'warn' });
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const server = await startDevServer({ cliPath: await locateTemporalCli(), port: 0, uiPort: 0 });
  const model = await startModelServer({ defaultReply: options.defaultReply });
  const bus = new MemoryBus();
  const taskQueue = `console-${randomUUID()}`;
  const connection = await Connection.connect({ address: server.address });
  const client = await connect({ bus, client: new Client({ connection }), taskQueue });
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const worker = await createWorker({
    agents,
    bus,
    connection: nativeConnection,
    taskQueue,
    models: { openaiBaseUrl: model.url, openaiApiKey: 'test' },
    shutdownGraceTimeMs: 500,
  });
  const running = worker.run();
  const temporalUiUrl = server.uiUrl ?? 'http://127.0.0.1:8233';
  const summaries = summarizeAgents(agents);
  const gateway = await serveGateway({ client, agents: summaries, port: 0, temporalUiUrl });
  const others: ServedGateway[] = [];
  return {
    client,
    model,
    gateway,
    temporalUiUrl,
    async keyedGateway(apiKeys) {
      const keyed = await serveGateway({ client, agents: summaries, port: 0, temporalUiUrl, apiKeys });
      others.push(keyed);
      return keyed;
    },
    async close() {
      for (const g of [gateway, ...others]) await g.close();
      await worker.shutdown();
      await running.catch(() => undefined);
      await nativeConnection.close();
      await connection.close();
      await bus.close();
      await model.close();
      await server.stop();
    },
  };
}
