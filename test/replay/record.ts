/**
 * Records the history of a thread that exercises every shape the workflow has (wake, mid-run message, queued run,
 * tool call, duplicate, invalid raw signal, persist/discard behaviours, continue-as-new) into
 * test/replay/histories/<name>.json.
 *
 *   npm run record-history -- thread-v1
 *
 * Commit the file: CI replays every history there against the current workflow code, so a change that would break
 * running threads fails the build (use `patched()` for such changes).
 */
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { NativeConnection } from '@temporalio/worker';
import { z } from 'zod';
import { defineAgent } from '../../activities/agent';
import { MemoryBus } from '../../client/bus/memory';
import { connect } from '../../client/connect';
import { sendMessageSignal } from '../../workflows/definitions';
import { threadKey } from '../../workflows/ids';
import { startDevServer } from '../../worker/dev-server';
import { createWorker } from '../../worker/index';
import { locateTemporalCli } from '../../worker/temporal-cli';
import { startModelServer } from '../support/model-server';

const name = process.argv[2] ?? 'thread-v1';
const here = dirname(fileURLToPath(import.meta.url));

const agent = defineAgent({
  id: 'recorder',
  instructions: 'Record.',
  model: 'openai/recorder',
  tools: {
    add: {
      description: 'Adds.',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => a + b,
    },
  },
});

const server = await startDevServer({ cliPath: await locateTemporalCli(), port: 0, headless: true });
const model = await startModelServer();
const bus = new MemoryBus();
const nativeConnection = await NativeConnection.connect({ address: server.address });
const taskQueue = 'record';
const worker = await createWorker({
  agents: [agent],
  bus,
  connection: nativeConnection,
  taskQueue,
  models: { openaiBaseUrl: model.url },
});
const running = worker.run();
const connection = await Connection.connect({ address: server.address });
const temporal = new Client({ connection });
const client = await connect({ bus, client: temporal, taskQueue, threadConfig: { continueAsNewAfterEvents: 60 } });
const t = { resourceId: 'recorder', threadId: 'thread-1' };
const a = client.agent('recorder');
const sub = a.subscribeToThread(t);
const finishes = async (n: number) => {
  let seen = 0;
  for await (const e of sub.stream) if (e.type === 'finish' && ++seen >= n) return;
};

model.enqueue({ text: ['Thinking', ' about', ' it'], chunkDelayMs: 150 }, { text: 'Both answered.' });
await a.sendMessage('first', t);
await model.waitForRequests(1);
await a.sendMessage({ contents: 'follow-up', attributes: { name: 'Jane' } }, t);
await a.queueMessage('queued one', t);
await a.sendMessage({ id: 'dup', contents: 'dup' }, t);
await a.sendMessage({ id: 'dup', contents: 'dup' }, t);
await finishes(2);
model.enqueue({ toolCalls: [{ name: 'add', args: { a: 1, b: 2 } }] }, { text: 'It is 3.' });
await a.sendMessage('add 1 and 2', t);
await temporal.workflow
  .getHandle(threadKey(t.resourceId, t.threadId))
  .signal(sendMessageSignal, { bad: true } as never);
await a.sendMessage('persist me', { ...t, ifIdle: { behavior: 'persist' }, ifActive: { behavior: 'persist' } });
await finishes(2);
for (let i = 0; i < 4; i++) {
  await a.sendMessage(`turn ${i}`, t);
  await finishes(1);
}

const handle = temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
const executions = [];
for await (const e of temporal.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) executions.push(e);
// The oldest execution: its history ends in continue-as-new, the shape most likely to break on a change.
const oldest = executions.sort((x, y) => x.startTime.getTime() - y.startTime.getTime())[0];
const history = await temporal.workflow.getHandle(handle.workflowId, oldest.runId).fetchHistory();
const path = join(here, 'histories', `${name}.json`);
await writeFile(path, historyToJSON(history));
console.log(`wrote ${path} (${history.events?.length} events; ${executions.length} executions)`);

sub.unsubscribe();
await worker.shutdown();
await running;
await nativeConnection.close();
await connection.close();
await model.close();
await server.stop();
process.exit(0);
