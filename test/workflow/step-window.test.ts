/**
 * The context window travels to the step activity as what changed since the previous step (protocol/step.ts
 * `StepWindow`), on a real dev server: a step's input stays the same size however long the conversation grows, and
 * the model still gets the whole window — also from a worker that never saw the thread (it asks the workflow).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepInput } from '../../protocol/step';
import { threadKey } from '../../protocol/ids';
import { collectUntil, startHarness, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** The step activities' inputs of a workflow's current execution, in order, with their encoded size. */
async function stepInputs(workflowId: string): Promise<{ input: StepInput; bytes: number }[]> {
  const history = await h.temporal.workflow.getHandle(workflowId).fetchHistory();
  const converter = h.temporal.options.loadedDataConverter.payloadConverter;
  return history
    .events!.map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a) => a?.activityType?.name === 'runStep')
    .map((a) => {
      const payload = a!.input!.payloads![0];
      return { input: converter.fromPayload<StepInput>(payload), bytes: payload.data!.length };
    });
}

async function turn(target: { resourceId: string; threadId: string }, text: string): Promise<void> {
  const agent = h.client.agent('tester');
  const sub = agent.subscribeToThread(target);
  const result = await agent.sendMessage(text, target);
  await collectUntil(sub.stream, (e) => e.type === 'finish' && e.runId === result.runId);
  sub.unsubscribe();
}

describe('step windows', () => {
  it('sends each step only what changed: step inputs stay flat while the conversation grows', async () => {
    const target = h.thread();
    const turns = 30;
    for (let i = 1; i <= turns; i++) await turn(target, `question ${i} ${'x'.repeat(200)}`);

    const inputs = await stepInputs(threadKey(target.resourceId, target.threadId));
    expect(inputs).toHaveLength(turns);
    expect(inputs[0].input.window).toHaveProperty('full');
    expect(inputs[0].input.messages).toBeUndefined();
    for (const { input } of inputs.slice(1)) {
      // The previous step's window, all of it kept (it fits the default window), then the new question and answer.
      expect(input.window).toMatchObject({ base: `${Number(input.stepKey) - 1}` });
      expect((input.window as { tail: unknown[] }).tail).toHaveLength(2);
    }
    // Flat: the last step's input is no bigger than the second's, with 29 more turns in the conversation.
    const second = inputs[1].bytes;
    const last = inputs[turns - 1].bytes;
    expect(last).toBeLessThanOrEqual(second + 64);

    // And the model saw the whole conversation at the last step: 30 questions and 29 answers.
    const lastPrompt = h.model.requests.at(-1)!.messages;
    expect(lastPrompt.filter((m) => m.role === 'user')).toHaveLength(turns);
    expect(lastPrompt.filter((m) => m.role === 'assistant')).toHaveLength(turns - 1);
  });

  it('a worker that never saw the thread asks the workflow for the window, and the model sees all of it', async () => {
    const target = h.thread();
    for (let i = 1; i <= 3; i++) await turn(target, `before the restart ${i}`);
    // A new worker process in all but name: the one that ran the earlier steps (and holds their windows) is gone.
    await h.worker!.shutdown();
    await h.startWorker();
    await turn(target, 'after the restart');

    const inputs = await stepInputs(threadKey(target.resourceId, target.threadId));
    expect(inputs.at(-1)!.input.window).toMatchObject({ base: '3' });
    const prompt = h.model.requests.at(-1)!.messages;
    expect(prompt.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content))).toEqual([
      expect.stringContaining('before the restart 1'),
      expect.stringContaining('before the restart 2'),
      expect.stringContaining('before the restart 3'),
      expect.stringContaining('after the restart'),
    ]);
    expect(prompt.filter((m) => m.role === 'assistant')).toHaveLength(3);
  });
});
