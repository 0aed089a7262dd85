/**
 * A new thread starts with its agent's profile in hand when the client knows it (workers announce it on the bus:
 * `AgentSummary.profile`): the first step is scheduled by the first workflow task, with no `describeAgent` round trip,
 * and the profile given is the one the execution uses. A client that knows nothing still gets a working thread: the
 * workflow asks a worker, as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../agents/agent';
import { MemoryBus } from '../../bus/memory';
import { connect } from '../../client/connect';
import { threadKey } from '../../protocol/ids';
import { collectUntil, startHarness, testAgent, type Harness } from '../support/harness';

/** Sees one message at a time: a window the thread defaults (100) would never give. */
const narrow = defineAgent({
  id: 'narrow',
  instructions: 'You see one message.',
  model: 'openai/test-model',
  contextWindow: { maxMessages: 1 },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ agents: [testAgent, narrow] });
});
afterAll(async () => {
  await h?.close();
});

/** The activity types a thread's current execution scheduled, in order. */
async function activities(target: { resourceId: string; threadId: string }): Promise<string[]> {
  const history = await h.temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId)).fetchHistory();
  return history
    .events!.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    .filter((name): name is string => !!name);
}

describe('agent profiles at thread start', () => {
  it('starts with the announced profile: no describeAgent, and the profile applies to every step', async () => {
    const t = h.thread();
    const agent = h.client.agent('narrow');
    for (const text of ['first', 'second']) {
      const sub = agent.subscribeToThread(t);
      const sent = await agent.sendMessage(text, t);
      await collectUntil(sub.stream, (e) => e.type === 'finish' && e.runId === sent.runId);
      sub.unsubscribe();
    }
    expect(await activities(t)).not.toContain('describeAgent');
    // The profile's window (one message) held at the second step, though no worker was asked for it.
    const prompt = h.model.requests.at(-1)!.messages.filter((m) => m.role !== 'system');
    expect(prompt).toHaveLength(1);
    expect(JSON.stringify(prompt[0].content)).toContain('second');
  });

  it('asks a worker when the client knows no profile (a bus nobody announced on)', async () => {
    const bus = new MemoryBus();
    const client = await connect({ client: h.temporal, bus, taskQueue: h.taskQueue });
    const t = h.thread();
    try {
      const sent = await client.agent('narrow').sendMessage('hello', t);
      expect(sent.action).toBe('wake');
      await expect.poll(() => client.getThread(t).then((v) => v?.status), { timeout: 20_000 }).toBe('idle');
    } finally {
      await bus.close();
    }
    expect(await activities(t)).toEqual(['describeAgent', 'runStep', 'publishEvents']);
  });
});
