/**
 * behaviour §6 "Temporal-native": the documented signal, with the documented payload, from the `temporal` CLI itself.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { threadKey } from '../../protocol/ids';
import { collectUntil, startHarness, userTurns, type Harness } from '../support/harness';

const run = promisify(execFile);

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

it('starts and answers a thread signalled with `temporal workflow signal-with-start`', async () => {
  const t = { resourceId: 'user:cli', threadId: 'thread/1' };
  const sub = h.client.agent('tester').subscribeToThread(t);
  h.model.enqueue({ text: 'Hello from the model' });
  const cli = inject('temporalCliPath');
  const common = ['--address', h.address, '--namespace', 'default'];
  await run(cli, [
    'workflow',
    'signal-with-start',
    ...common,
    '--workflow-id',
    threadKey(t.resourceId, t.threadId),
    '--type',
    'threadWorkflow',
    '--task-queue',
    h.taskQueue,
    '--input',
    JSON.stringify(t),
    '--signal-name',
    'sendMessage',
    '--signal-input',
    JSON.stringify({ id: 'cli-1', agentId: 'tester', delivery: 'send', type: 'user', contents: 'Hello from the CLI' }),
  ]);
  const events = await collectUntil(sub.stream, (e) => e.type === 'finish');
  sub.unsubscribe();
  expect(events.find((e) => e.type === 'data-user-message')?.payload).toMatchObject({ id: 'cli-1' });
  expect(userTurns(h.model.requests.at(-1)!.messages)).toEqual(['Hello from the CLI']);

  // A bad payload through the same route is dropped; the thread keeps working.
  await run(cli, [
    'workflow',
    'signal',
    ...common,
    '--workflow-id',
    threadKey(t.resourceId, t.threadId),
    '--name',
    'sendMessage',
    '--input',
    JSON.stringify({ id: 'cli-bad', agentId: 'tester', delivery: 'send', type: 'shout', contents: 'x' }),
  ]);
  const { stdout } = await run(cli, [
    'workflow',
    'query',
    ...common,
    '--workflow-id',
    threadKey(t.resourceId, t.threadId),
    '--name',
    'threadState',
    '--output',
    'json',
  ]);
  expect(stdout).toContain('"messageCount": 2');
});

it('ends as cancelled when the workflow is cancelled (`temporal workflow cancel`), not stuck failing its tasks', async () => {
  const t = h.thread();
  const agent = h.client.agent('tester');
  const sub = agent.subscribeToThread(t);
  const sent = await agent.sendMessage('hello', t);
  await collectUntil(sub.stream, (e) => e.type === 'finish' && e.runId === sent.runId);
  sub.unsubscribe();
  const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
  await handle.cancel();
  await expect.poll(async () => (await handle.describe()).status.name, { timeout: 20_000 }).toBe('CANCELLED');
  const history = await handle.fetchHistory();
  // A completion the server turns away because an event arrived meanwhile (UnhandledCommand) is Temporal's normal
  // retry; a failure of the workflow code is not.
  const failures = history.events!.flatMap((e) => (e.workflowTaskFailedEventAttributes ? [e] : []));
  // (The cause arrives as the enum's name or its number, 1, depending on how the history was decoded.)
  const unhandledCommand = (cause: unknown) => cause === 'WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND' || cause === 1;
  expect(failures.filter((e) => !unhandledCommand(e.workflowTaskFailedEventAttributes!.cause))).toEqual([]);
});
