/**
 * A dev server and one worker on it, sharing its NativeConnection with a client: the A/B drivers' bare-Temporal
 * world (bench/ab-heartbeat.ts, bench/eager-start.ts), workflow code bundled from `workflowsFile`.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { defaultDynamicConfig, startDevServer } from '../../worker/dev-server';
import { locateTemporalCli } from '../../worker/temporal-cli';

export interface BareWorker {
  client: Client;
  taskQueue: string;
  close(): Promise<void>;
}

export async function startBareWorker(
  workflowsFile: string,
  activities: WorkerOptions['activities'],
): Promise<BareWorker> {
  const server = await startDevServer({
    cliPath: await locateTemporalCli(),
    port: 0,
    headless: true,
    dynamicConfig: defaultDynamicConfig,
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `bare-${randomUUID()}`;
  const { code } = await bundleWorkflowCode({
    workflowsPath: workflowsFile,
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  const worker = await Worker.create({ connection, taskQueue, workflowBundle: { code }, activities });
  const running = worker.run();
  return {
    client: new Client({ connection }),
    taskQueue,
    async close() {
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await server.stop();
    },
  };
}
