/**
 * Tool calls on a real Temporal dev server: each call runs as its own activity, its result reaches the model in the
 * OpenAI wire format, tool errors are results rather than failures, and `maxSteps` ends a tool loop.
 */
import { Context } from '@temporalio/activity';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, type AgentTool } from '../../agents/agent';
import type { ThreadEvent } from '../../protocol/events';
import { collectUntil, startHarness, textByRun, type Harness } from '../support/harness';

/** Keeps `execute`'s input typed by the schema (an agent's tool map is untyped). */
const tool = <I, O>(definition: AgentTool<I, O>): AgentTool<I, O> => definition;

interface ExecutedCall {
  tool: string;
  input: unknown;
  context: { resourceId: string; threadId: string; runId: string; toolCallId: string };
  activityType: string;
}
const executed: ExecutedCall[] = [];
function record(name: string, input: unknown, context: ExecutedCall['context']): void {
  const { resourceId, threadId, runId, toolCallId } = context;
  executed.push({
    tool: name,
    input,
    context: { resourceId, threadId, runId, toolCallId },
    activityType: Context.current().info.activityType,
  });
}

const toolAgent = defineAgent({
  id: 'toolsmith',
  instructions: 'You answer with the help of tools.',
  model: 'openai/test-model',
  tools: {
    add: tool({
      description: 'Adds two numbers.',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: (input, context) => {
        record('add', input, context);
        return { sum: input.a + input.b };
      },
    }),
    lookup: tool({
      description: 'Looks something up.',
      inputSchema: z.object({ q: z.string() }),
      execute: (input, context) => {
        record('lookup', input, context);
        return `found ${input.q}`;
      },
    }),
    explode: tool({
      description: 'Always fails.',
      inputSchema: z.object({}),
      execute: (input, context) => {
        record('explode', input, context);
        throw new Error('the disk is on fire');
      },
    }),
  },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ agents: [toolAgent] });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  executed.length = 0;
});

/* eslint-disable @typescript-eslint/no-explicit-any -- OpenAI request bodies, probed freely. */
const roles = (messages: any[]): string[] => messages.map((m) => m.role);
const toolMessages = (messages: any[]): any[] => messages.filter((m) => m.role === 'tool');
/* eslint-enable @typescript-eslint/no-explicit-any */

const ofType = (events: ThreadEvent[], type: ThreadEvent['type']) => events.filter((e) => e.type === type);

/** Sends `text` to a fresh thread and collects its events up to the run's `finish`. */
async function runOnce(text: string, options: { maxSteps?: number } = {}) {
  const t = h.thread();
  const agent = h.client.agent('toolsmith');
  const sub = agent.subscribeToThread(t);
  const before = h.model.requests.length;
  const target = options.maxSteps ? { ...t, ifIdle: { streamOptions: { maxSteps: options.maxSteps } } } : t;
  const sent = await agent.sendMessage(text, target);
  expect(sent.action).toBe('wake');
  const events = await collectUntil(sub.stream, (e) => e.type === 'finish', 60_000);
  sub.unsubscribe();
  return { t, sent, events, requests: h.model.requests.slice(before) };
}

describe('tools', () => {
  it('runs a tool call as its own activity, then answers with its result in the same run', async () => {
    h.model.enqueue({ toolCalls: [{ name: 'add', args: { a: 2, b: 3 } }] }, { text: ['The sum ', 'is 5.'] });
    const { t, sent, events, requests } = await runOnce('What is 2 + 3?');

    expect(events.map((e) => e.type)).toEqual([
      'start',
      'data-user-message',
      'step-start',
      'tool-call',
      'step-finish',
      'tool-result',
      'step-start',
      'text-start',
      'text-delta',
      'text-delta',
      'text-end',
      'step-finish',
      'finish',
    ]);
    expect(new Set(events.map((e) => e.runId))).toEqual(new Set([sent.runId]));
    const [call] = ofType(events, 'tool-call');
    const { toolCallId } = call.payload as { toolCallId: string };
    expect(call.payload).toEqual({ toolCallId, toolName: 'add', input: { a: 2, b: 3 } });
    expect(ofType(events, 'tool-result')[0].payload).toEqual({
      type: 'tool-result',
      toolCallId,
      toolName: 'add',
      output: { sum: 5 },
    });
    expect(ofType(events, 'finish')[0].payload).toMatchObject({ runId: sent.runId, reason: 'stop', steps: 2 });
    expect(textByRun(events).get(sent.runId!)).toBe('The sum is 5.');

    // The tool ran once, inside a runTool activity, with the parsed args and the thread's ids.
    expect(executed).toEqual([
      {
        tool: 'add',
        input: { a: 2, b: 3 },
        context: { resourceId: t.resourceId, threadId: t.threadId, runId: sent.runId, toolCallId },
        activityType: 'runTool',
      },
    ]);

    // The model was offered the tools, and its second request carries the call and the result (OpenAI format).
    expect(requests).toHaveLength(2);
    expect(requests[0].body.tools.map((x: { function: { name: string } }) => x.function.name).sort()).toEqual([
      'add',
      'explode',
      'lookup',
    ]);
    const second = requests[1].messages;
    expect(roles(second)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(second[2].tool_calls).toEqual([
      { id: toolCallId, type: 'function', function: { name: 'add', arguments: expect.any(String) } },
    ]);
    expect(JSON.parse(second[2].tool_calls[0].function.arguments)).toEqual({ a: 2, b: 3 });
    expect(second[3]).toMatchObject({ role: 'tool', tool_call_id: toolCallId });
    expect(JSON.parse(second[3].content)).toEqual({ sum: 5 });
  });

  it('turns a throwing tool into an error result the model sees, and the run still finishes', async () => {
    h.model.enqueue({ toolCalls: [{ name: 'explode', args: {} }] }, { text: 'That tool failed.' });
    const { sent, events, requests } = await runOnce('Try the failing tool.');

    expect(executed.map((c) => c.tool)).toEqual(['explode']);
    const [result] = ofType(events, 'tool-result');
    expect(result.payload).toMatchObject({ toolName: 'explode', output: 'the disk is on fire', isError: true });
    expect(ofType(events, 'error')).toEqual([]);
    expect(ofType(events, 'finish')[0].payload).toMatchObject({ runId: sent.runId, reason: 'stop', steps: 2 });
    expect(requests).toHaveLength(2);
    const [toolMessage] = toolMessages(requests[1].messages);
    expect(toolMessage.tool_call_id).toBe((result.payload as { toolCallId: string }).toolCallId);
    expect(toolMessage.content).toContain('the disk is on fire');
    expect(textByRun(events).get(sent.runId!)).toBe('That tool failed.');
  });

  it.each([
    { case: 'an unknown tool', call: { name: 'nope', args: { x: 1 } }, error: /Unknown tool "nope"/ },
    { case: 'invalid args', call: { name: 'add', args: { a: 'two', b: 3 } }, error: /Invalid input for add/ },
  ])('answers a call with $case with an error result, not a failure', async ({ call, error }) => {
    h.model.enqueue({ toolCalls: [call] }, { text: 'Noted.' });
    const { sent, events, requests } = await runOnce(`Call ${call.name}.`);

    expect(executed).toEqual([]);
    const results = ofType(events, 'tool-result');
    expect(results).toHaveLength(1);
    expect(results[0].payload).toMatchObject({
      toolName: call.name,
      output: expect.stringMatching(error),
      isError: true,
    });
    expect(ofType(events, 'error')).toEqual([]);
    expect(ofType(events, 'finish')[0].payload).toMatchObject({ runId: sent.runId, reason: 'stop', steps: 2 });
    expect(requests).toHaveLength(2);
    const second = requests[1].messages;
    expect(roles(second)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(second[2].tool_calls[0].function.name).toBe(call.name);
    expect(second[3].content).toMatch(error);
  });

  it('runs two tool calls of one step, and both results reach the next request', async () => {
    h.model.enqueue(
      {
        toolCalls: [
          { name: 'add', args: { a: 1, b: 2 } },
          { name: 'lookup', args: { q: 'weather' } },
        ],
      },
      { text: 'Both done.' },
    );
    const { sent, events, requests } = await runOnce('Do two things.');

    const calls = ofType(events, 'tool-call').map((e) => e.payload as { toolCallId: string; toolName: string });
    expect(calls.map((c) => c.toolName)).toEqual(['add', 'lookup']);
    expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(2);
    expect(executed.map((c) => [c.tool, c.context.toolCallId]).sort()).toEqual(
      calls.map((c) => [c.toolName, c.toolCallId]).sort(),
    );
    const results = ofType(events, 'tool-result');
    expect(results.map((e) => (e.payload as { toolCallId: string }).toolCallId).sort()).toEqual(
      calls.map((c) => c.toolCallId).sort(),
    );
    // Both results are in before the model is asked again.
    const secondStep = events.findLastIndex((e) => e.type === 'step-start');
    for (const r of results) expect(events.indexOf(r)).toBeLessThan(secondStep);
    expect(ofType(events, 'finish')[0].payload).toMatchObject({ runId: sent.runId, reason: 'stop', steps: 2 });

    expect(requests).toHaveLength(2);
    const second = requests[1].messages;
    expect(roles(second)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(second[2].tool_calls.map((c: { id: string }) => c.id)).toEqual(calls.map((c) => c.toolCallId));
    const byId = new Map(toolMessages(second).map((m) => [m.tool_call_id, m.content]));
    expect(JSON.parse(byId.get(calls[0].toolCallId))).toEqual({ sum: 3 });
    expect(JSON.parse(byId.get(calls[1].toolCallId))).toBe('found weather');
  });

  it('publishes every tool result even when the provider repeats a tool call id', async () => {
    // Some OpenAI-compatible servers number calls per response (`call_0`), so ids repeat across steps.
    h.model.enqueue(
      { toolCalls: [{ id: 'call_0', name: 'lookup', args: { q: 'one' } }] },
      { toolCalls: [{ id: 'call_0', name: 'lookup', args: { q: 'two' } }] },
      { text: 'Found both.' },
    );
    const { sent, events, requests } = await runOnce('Look up two things, one at a time.');

    expect(requests).toHaveLength(3);
    expect(ofType(events, 'tool-result').map((e) => e.payload)).toEqual([
      { type: 'tool-result', toolCallId: 'call_0', toolName: 'lookup', output: 'found one' },
      { type: 'tool-result', toolCallId: 'call_0', toolName: 'lookup', output: 'found two' },
    ]);
    expect(ofType(events, 'finish')[0].payload).toMatchObject({ runId: sent.runId, reason: 'stop', steps: 3 });
  });

  it('stops a model that keeps calling tools after maxSteps, with reason max-steps', async () => {
    h.model.setResponder((req) => ({ toolCalls: [{ name: 'lookup', args: { q: `again ${req.index}` } }] }));
    try {
      const { sent, events, requests } = await runOnce('Look things up forever.', { maxSteps: 2 });

      expect(requests).toHaveLength(2);
      expect(ofType(events, 'step-start')).toHaveLength(2);
      expect(ofType(events, 'tool-result')).toHaveLength(2);
      expect(executed).toHaveLength(2);
      const finishes = ofType(events, 'finish');
      expect(finishes).toHaveLength(1);
      expect(finishes[0].payload).toEqual({ runId: sent.runId, reason: 'max-steps', steps: 2 });
    } finally {
      h.model.setResponder(undefined);
    }
  });
});

describe('a tool activity that fails for good', () => {
  const stallAgent = defineAgent({
    id: 'staller',
    instructions: 'You wait.',
    model: 'openai/test-model',
    tools: {
      stall: tool({
        description: 'Never finishes on its own.',
        inputSchema: z.object({}),
        execute: (_input, { abortSignal }) =>
          new Promise((_resolve, reject) => abortSignal.addEventListener('abort', () => reject(abortSignal.reason))),
      }),
    },
  });
  let slow: Harness;
  beforeAll(async () => {
    slow = await startHarness({
      agents: [stallAgent],
      threadConfig: { tool: { startToCloseTimeoutMs: 1_000, maxAttempts: 1 } },
    });
  });
  afterAll(async () => {
    await slow?.close();
  });

  it('becomes an error result the model sees, and the thread keeps its conversation', async () => {
    const t = slow.thread();
    const agent = slow.client.agent('staller');
    const sub = agent.subscribeToThread(t);
    slow.model.enqueue(
      { toolCalls: [{ name: 'stall', args: {} }] },
      { text: 'It timed out.' },
      { text: 'Still here.' },
    );
    const first = await agent.sendMessage('Wait for it.', t);
    const events = await collectUntil(sub.stream, (e) => e.type === 'finish', 60_000);

    const [result] = ofType(events, 'tool-result');
    expect(result.payload).toMatchObject({
      toolName: 'stall',
      output: expect.stringMatching(/timeout/i),
      isError: true,
    });
    expect(ofType(events, 'error')).toEqual([]);
    expect(ofType(events, 'finish')[0].payload).toMatchObject({ runId: first.runId, reason: 'stop', steps: 2 });
    expect(toolMessages(slow.model.requests[1].messages)[0].content).toMatch(/timeout/i);

    // The thread's workflow is still the same conversation: the next message is answered with all of it.
    const second = await agent.sendMessage('Are you there?', t);
    expect(second.action).toBe('wake');
    await collectUntil(sub.stream, (e) => e.type === 'finish', 60_000);
    sub.unsubscribe();
    expect(roles(slow.model.requests[2].messages)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
  });
});
