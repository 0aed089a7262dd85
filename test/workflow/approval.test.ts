/**
 * behaviour §2.4 on a real Temporal dev server: a tool with `requireApproval` parks the run; approve, decline (with and
 * without a reason), 404/409, inputs arriving while parked, a worker replaced while parked, an approval timeout on
 * a durable timer, a predicate, abort while parked, and a park that crosses continue-as-new.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, type AgentTool } from '../../agents/agent';
import type { ThreadEvent } from '../../protocol/events';
import { ConflictError, NotFoundError } from '../../protocol/errors';
import type { ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { afterFinishes, collectUntil, startHarness, testAgent, userTurns, type Harness } from '../support/harness';

const tool = <I, O>(definition: AgentTool<I, O>): AgentTool<I, O> => definition;
const deleted: string[] = [];
const resumed: unknown[] = [];

const admin = defineAgent({
  id: 'admin',
  instructions: 'You administer repositories.',
  model: 'openai/test-model',
  tools: {
    deleteRepo: tool({
      description: 'Deletes a repository.',
      inputSchema: z.object({ repo: z.string() }),
      requireApproval: true,
      execute: ({ repo }, { resumeData }) => {
        deleted.push(repo);
        resumed.push(resumeData);
        return `deleted ${repo}`;
      },
    }),
    deploy: tool({
      description: 'Deploys an environment.',
      inputSchema: z.object({ env: z.string() }),
      requireApproval: ({ env }) => env === 'prod',
      execute: ({ env }) => `deployed ${env}`,
    }),
    purge: tool({
      description: 'Purges a cache.',
      inputSchema: z.object({}),
      requireApproval: true,
      approvalTimeoutMs: 300,
      execute: () => 'purged',
    }),
  },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ agents: [admin, testAgent], threadConfig: { continueAsNewAfterEvents: 400 } });
});
afterEach(() => {
  deleted.length = 0;
  resumed.length = 0;
});
afterAll(async () => {
  await h?.close();
});

const agent = () => h.client.agent('admin');
const approvalsIn = (events: ThreadEvent[]) =>
  events.filter((e) => e.type === 'tool-call-approval').map((e) => e.payload as Record<string, unknown>);

/** Sends a message whose reply calls `toolName`, and waits until the run parks on it. */
async function parkOn(t: ThreadTarget, toolName: string, args: unknown, stream: AsyncIterable<ThreadEvent>) {
  h.model.enqueue({ toolCalls: [{ id: `call-${toolName}`, name: toolName, args }] });
  await agent().sendMessage(`please ${toolName}`, t);
  const events = await collectUntil(stream, (e) => e.type === 'tool-call-approval');
  return { events, toolCallId: `call-${toolName}` };
}

/** The tool results the model received in its latest request. */
function lastToolResults(): unknown[] {
  const messages = h.model.requests.at(-1)!.messages as { role: string; content: unknown }[];
  return messages.filter((m) => m.role === 'tool').map((m) => m.content);
}

describe('tool approval (behaviour §2.4)', () => {
  it('parks the run, shows the approval, and continues on the same subscription once approved', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const { events, toolCallId } = await parkOn(t, 'deleteRepo', { repo: 'acme/app' }, stream);
    expect(approvalsIn(events)).toEqual([
      { toolCallId, toolName: 'deleteRepo', args: { repo: 'acme/app' }, status: 'waiting' },
    ]);
    const view = await h.client.getThread(t);
    expect(view).toMatchObject({
      status: 'active',
      activeRun: {
        status: 'awaiting-approval',
        approvals: [{ toolCallId, toolName: 'deleteRepo', status: 'waiting' }],
      },
    });
    expect(deleted).toEqual([]);

    h.model.enqueue({ text: 'Deleted it.' });
    const result = await agent().sendToolApproval({ ...t, toolCallId, approved: true, resumeData: { by: 'ops' } });
    expect(result).toMatchObject({ accepted: true, toolCallId, status: 'approved' });
    const rest = await collectUntil(stream, afterFinishes(1));
    expect(rest.map((e) => e.type)).toEqual(
      expect.arrayContaining(['tool-call-approval', 'tool-result', 'step-start', 'text-delta', 'finish']),
    );
    expect(deleted).toEqual(['acme/app']);
    expect(resumed).toEqual([{ by: 'ops' }]);
    expect(JSON.stringify(lastToolResults())).toContain('deleted acme/app');
  });

  it('declines with the default reason or the approver’s, and the model reads it', async () => {
    for (const declineReason of [undefined, 'Not on a Friday.']) {
      const t = h.thread();
      const stream = h.client.subscribeToThread(t).stream;
      const { toolCallId } = await parkOn(t, 'deleteRepo', { repo: 'acme/app' }, stream);
      h.model.enqueue({ text: 'Understood.' });
      await agent().sendToolApproval({
        ...t,
        toolCallId,
        approved: false,
        ...(declineReason ? { declineReason } : {}),
      });
      await collectUntil(stream, afterFinishes(1));
      expect(deleted).toEqual([]);
      expect(JSON.stringify(lastToolResults())).toContain(declineReason ?? 'Tool call was not approved by the user');
    }
  });

  it('answers 404 for an unknown tool call or thread and 409 for a decided one', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const { toolCallId } = await parkOn(t, 'deleteRepo', { repo: 'x' }, stream);
    await expect(agent().sendToolApproval({ ...t, toolCallId: 'nope', approved: true })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(agent().sendToolApproval({ ...h.thread(), toolCallId, approved: true })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    h.model.enqueue({ text: 'Done.' });
    await agent().sendToolApproval({ ...t, toolCallId, approved: true });
    await expect(agent().sendToolApproval({ ...t, toolCallId, approved: false })).rejects.toBeInstanceOf(ConflictError);
    await collectUntil(stream, afterFinishes(1));
    await expect(agent().sendToolApproval({ ...t, toolCallId, approved: true })).rejects.toBeInstanceOf(ConflictError);
    await expect(agent().sendToolApproval({ ...t, toolCallId: '', approved: true })).rejects.toThrow(/toolCallId/);
  });

  it('holds deliver inputs while parked (they join when the loop resumes) and queues the rest', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const { toolCallId } = await parkOn(t, 'deleteRepo', { repo: 'r' }, stream);
    expect(await agent().sendMessage('also archive the issues', t)).toMatchObject({ action: 'deliver' });
    expect(await agent().queueMessage('then tell me a joke', t)).toMatchObject({ action: 'queued' });
    expect(await h.client.agent('tester').sendMessage('other agent', t)).toMatchObject({ action: 'queued' });
    const requestsBefore = h.model.requests.length;
    h.model.enqueue({ text: 'Deleted and archived.' });
    await agent().sendToolApproval({ ...t, toolCallId, approved: true });
    await collectUntil(stream, afterFinishes(3));
    const resumedPrompt = userTurns(h.model.requests[requestsBefore].messages);
    expect(resumedPrompt.at(-1)).toBe('also archive the issues');
    expect(userTurns(h.model.requests[requestsBefore + 1].messages).at(-1)).toBe('then tell me a joke');
  });

  it('runs a predicate: only the calls it flags wait', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    h.model.enqueue({ toolCalls: [{ id: 'staging', name: 'deploy', args: { env: 'staging' } }] }, { text: 'Staged.' });
    await agent().sendMessage('deploy staging', t);
    const events = await collectUntil(stream, afterFinishes(1));
    expect(approvalsIn(events)).toEqual([]);
    const { toolCallId } = await parkOn(t, 'deploy', { env: 'prod' }, stream);
    h.model.enqueue({ text: 'Prod is out.' });
    await agent().sendToolApproval({ ...t, toolCallId, approved: true });
    await collectUntil(stream, afterFinishes(1));
    expect(JSON.stringify(lastToolResults())).toContain('deployed prod');
  });

  it('declines on a durable timer when the approval times out', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const { events } = await parkOn(t, 'purge', {}, stream);
    expect(approvalsIn(events)[0]).toMatchObject({ status: 'waiting', expiresAt: expect.any(Number) });
    const rest = await collectUntil(stream, afterFinishes(1));
    expect(approvalsIn(rest)).toEqual([
      expect.objectContaining({ status: 'declined', declineReason: 'Tool call approval timed out' }),
    ]);
    const history = await h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId)).fetchHistory();
    expect(history.events!.some((e) => e.timerFiredEventAttributes)).toBe(true);
  });

  it('aborting a parked run answers its tool calls, so the next run’s conversation stays valid', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    await parkOn(t, 'deleteRepo', { repo: 'r' }, stream);
    expect(await agent().abortThread(t)).toMatchObject({ aborted: true });
    const aborted = await collectUntil(stream, (e) => e.type === 'abort');
    expect(aborted.find((e) => e.type === 'tool-result')?.payload).toMatchObject({ isError: true });
    h.model.enqueue({ text: 'Fine.' });
    await agent().sendMessage('never mind', t);
    await collectUntil(stream, afterFinishes(1));
    expect(JSON.stringify(lastToolResults())).toContain('the run was aborted');
    expect(deleted).toEqual([]);
  });
});

describe('an approval wait is durable', () => {
  it('survives a worker replacement and continue-as-new while parked', async () => {
    const small = await startHarness({ agents: [admin], threadConfig: { continueAsNewAfterEvents: 40 } });
    try {
      const t = small.thread();
      const a = small.client.agent('admin');
      const stream = small.client.subscribeToThread(t).stream;
      small.model.enqueue({ toolCalls: [{ id: 'c1', name: 'deleteRepo', args: { repo: 'durable' } }] });
      await a.sendMessage('delete durable', t);
      await collectUntil(stream, (e) => e.type === 'tool-call-approval');
      // Enough persisted signals to cross the continue-as-new threshold while the run is parked.
      for (let i = 0; i < 15; i++) {
        await a.sendSignal({ type: 'reactive', contents: `note ${i}` }, { ...t, ifActive: { behavior: 'persist' } });
      }
      const handle = small.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
      const { runId } = await handle.describe();
      const history = await small.temporal.workflow.getHandle(handle.workflowId, runId).fetchHistory();
      expect(history.events![0].workflowExecutionStartedEventAttributes!.continuedExecutionRunId).toBeTruthy();
      await small.worker!.shutdown();
      await small.startWorker();
      expect((await small.client.getThread(t))!.activeRun).toMatchObject({ status: 'awaiting-approval' });
      small.model.enqueue({ text: 'Deleted after all.' });
      await a.sendToolApproval({ ...t, toolCallId: 'c1', approved: true });
      await collectUntil(stream, afterFinishes(1));
      expect(deleted).toEqual(['durable']);
    } finally {
      await small.close();
    }
  });
});
