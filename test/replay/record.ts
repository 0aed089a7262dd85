/**
 * Records the history of a thread that exercises every shape the workflow has (wake, mid-run message, queued run,
 * tool call, duplicate, invalid raw signal, persist/discard behaviours, continue-as-new) into
 * test/replay/histories/<name>.json.
 *
 *   npm run record-history            (writes thread-conversation.json, thread-signals.json, …)
 *   npm run record-history -- settle  (writes settle-conversation.json, …)
 *
 * Commit the files: CI replays every history there against the current workflow code, so a change that would break
 * running threads fails the build. Until the first release, a change of the workflow's history shape re-records
 * this set in the same commit; from a release on, its histories stay and such a change is gated (docs/operations.md).
 * The `thread-*` set was recorded before the `settle-before-acting` patch and stays (threads of that code must keep
 * replaying); the `settle-*` set was recorded with it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { NativeConnection } from '@temporalio/worker';
import { z } from 'zod';
import { defineAgent } from '../../agents/agent';
import { createNotificationInboxTool } from '../../agents/tools/notification-inbox';
import { MemoryBus } from '../../bus/memory';
import { connect } from '../../client/connect';
import { sendMessageSignal } from '../../protocol/definitions';
import { threadKey } from '../../protocol/ids';
import { startDevServer } from '../../worker/dev-server';
import { createWorker } from '../../worker/index';
import { locateTemporalCli } from '../../worker/temporal-cli';
import { startModelServer } from '../support/model-server';

const name = process.argv[2] ?? 'thread';
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
    'notification-inbox': createNotificationInboxTool(),
    wipe: {
      description: 'Wipes a scratch folder.',
      inputSchema: z.object({ folder: z.string() }),
      requireApproval: true,
      execute: ({ folder }) => `wiped ${folder}`,
    },
  },
  notifications: { digestWindow: 200 },
  processors: [
    {
      id: 'clock-lane',
      stateId: 'clock',
      computeStateSignal: (args) =>
        args.contextWindow.hasSnapshot ? undefined : { mode: 'snapshot', cacheKey: 'noon', contents: 'It is noon.' },
    },
  ],
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

// Signals, interrupt, abort and cancel on a second thread.
const s2 = { resourceId: 'recorder', threadId: 'thread-2' };
const sub2 = a.subscribeToThread(s2);
const until = async (type: string) => {
  for await (const e of sub2.stream) if (e.type === type) return;
};
model.enqueue({ text: ['never', ' finished'], hang: true }, { text: 'Answered the interruption.' });
let seen = model.requests.length;
await a.sendSignal({ type: 'notification', contents: 'CI failed', attributes: { source: 'github' } }, s2);
await model.waitForRequests(seen + 1);
await a.sendMessage('actually, something else', { ...s2, ifActive: { behavior: 'interrupt' } });
await until('finish');
model.enqueue({ text: ['long', ' answer'], hang: true }, { text: 'Queued one answered.' });
seen = model.requests.length;
await a.sendMessage('start a long one', s2);
await model.waitForRequests(seen + 1);
await a.queueMessage({ id: 'keep', contents: 'keep me' }, s2);
await a.queueMessage({ id: 'drop', contents: 'drop me' }, s2);
await a.cancelQueuedMessages({ ...s2, signalIds: ['drop'] });
await a.sendSignal({ type: 'reactive', contents: 'remember this' }, { ...s2, ifActive: { behavior: 'persist' } });
await a.abortThread(s2);
await until('finish');

// State lanes and a tool approval on a third thread.
const s3 = { resourceId: 'recorder', threadId: 'thread-3' };
const sub3 = a.subscribeToThread(s3);
const until3 = async (type: string) => {
  for await (const e of sub3.stream) if (e.type === type) return;
};
await a.sendStateSignal(
  { id: 'browser', cacheKey: 'A', contents: 'On page A.' },
  { ...s3, ifIdle: { behavior: 'persist' } },
);
await a.sendStateSignal(
  { id: 'browser', cacheKey: 'A', contents: 'On page A.' },
  { ...s3, ifIdle: { behavior: 'persist' } },
);
// Whatever earlier threads left in the reply queue, this thread's replies follow its own conversation.
model.setResponder((req) =>
  req.messages.some((m) => m.role === 'tool')
    ? { text: 'Wiped.' }
    : { toolCalls: [{ id: 'wipe-1', name: 'wipe', args: { folder: 'tmp' } }] },
);
await a.sendMessage('wipe tmp', s3);
await until3('tool-call-approval');
await a.sendStateSignal({ id: 'browser', mode: 'delta', cacheKey: 'B', contents: 'Now on page B.' }, s3);
await a.sendToolApproval({ ...s3, toolCallId: 'wipe-1', approved: true });
await until3('finish');

// Notifications: a low one digested without waking, an urgent one waking the thread, the inbox read by a tool.
const s4 = { resourceId: 'recorder', threadId: 'thread-4' };
const sub4 = a.subscribeToThread(s4);
const until4 = async (test: (e: { type: string; payload: unknown }) => boolean) => {
  for await (const e of sub4.stream) if (test(e)) return;
};
const low = await a.sendNotificationSignal(
  { source: 'github', kind: 'ci-status', priority: 'low', summary: 'CI flaky.', dedupeKey: 'ci' },
  s4,
);
await until4((e) => e.type === 'notification-updated' && (e.payload as { change: string }).change === 'summarized');
model.setResponder((req) =>
  req.messages.some((m) => m.role === 'tool')
    ? { text: 'Read it.' }
    : {
        toolCalls: [
          { id: 'inbox-1', name: 'notification-inbox', args: { action: 'read', id: low.notifications[0].id } },
        ],
      },
);
await a.sendNotificationSignal({ source: 'pagerduty', kind: 'incident', priority: 'urgent', summary: 'API down.' }, s4);
await until4((e) => e.type === 'finish');

async function oldestHistory(target: { resourceId: string; threadId: string }) {
  const workflowId = threadKey(target.resourceId, target.threadId);
  const executions = [];
  for await (const e of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) executions.push(e);
  // The oldest execution: when there are several, its history ends in continue-as-new.
  const oldest = executions.sort((x, y) => x.startTime.getTime() - y.startTime.getTime())[0];
  return { history: await temporal.workflow.getHandle(workflowId, oldest.runId).fetchHistory(), executions };
}

for (const [suffix, target] of [
  ['conversation', t],
  ['signals', s2],
  ['lanes-approval', s3],
  ['notifications', s4],
] as const) {
  const { history, executions } = await oldestHistory(target);
  const path = join(here, 'histories', `${name}-${suffix}.json`);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, historyToJSON(history));
  console.log(`wrote ${path} (${history.events?.length} events; ${executions.length} executions)`);
}

sub.unsubscribe();
sub2.unsubscribe();
await worker.shutdown();
await running;
await nativeConnection.close();
await connection.close();
await model.close();
await server.stop();
process.exit(0);
