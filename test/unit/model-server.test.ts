import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText, tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startModelServer, type ModelServer } from '../support/model-server';

let server: ModelServer;

beforeEach(async () => {
  server = await startModelServer();
});

afterEach(async () => {
  await server.close();
});

const model = () => createOpenAI({ baseURL: server.url, apiKey: 'test' }).chat('test-model');

const ignoreErrors = () => {};

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

describe('model server through the AI SDK OpenAI chat provider', () => {
  it('streams text in the scripted chunks', async () => {
    server.enqueue({ text: ['Hel', 'lo, ', 'world'] }, { text: 'one two  three' });

    const first = streamText({ model: model(), prompt: 'hi', maxRetries: 0 });
    expect(await collect(first.textStream)).toEqual(['Hel', 'lo, ', 'world']);
    expect(await first.finishReason).toBe('stop');

    const second = streamText({ model: model(), prompt: 'again', maxRetries: 0 });
    expect(await collect(second.textStream)).toEqual(['one ', 'two  ', 'three']);
  });

  it('returns a scripted tool call with parsed arguments', async () => {
    server.enqueue({
      text: 'Let me check.',
      toolCalls: [{ id: 'call_weather', name: 'getWeather', args: { city: 'Paris', days: 3 } }],
    });

    const result = streamText({
      model: model(),
      prompt: 'Weather in Paris?',
      maxRetries: 0,
      tools: {
        getWeather: tool({
          description: 'Get the forecast for a city',
          inputSchema: z.object({ city: z.string(), days: z.number() }),
        }),
      },
    });

    expect(await result.text).toBe('Let me check.');
    expect(await result.finishReason).toBe('tool-calls');
    const calls = await result.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      toolCallId: 'call_weather',
      toolName: 'getWeather',
      input: { city: 'Paris', days: 3 },
    });
    expect(server.requests[0].body.tools[0].function.name).toBe('getWeather');
  });

  it('surfaces a scripted HTTP error as an error', async () => {
    server.enqueue({ error: { status: 400, message: 'Context length exceeded' } });

    const result = streamText({ model: model(), prompt: 'hi', maxRetries: 0, onError: ignoreErrors });
    const errors = (await collect(result.fullStream)).filter((part) => part.type === 'error');

    expect(errors).toHaveLength(1);
    expect(errors[0].error).toMatchObject({ statusCode: 400, message: 'Context length exceeded' });
  });

  it('sees the client disconnect when a call on a hanging reply is aborted', async () => {
    server.enqueue({ text: 'partial answer', hang: true });
    const controller = new AbortController();

    const result = streamText({
      model: model(),
      prompt: 'hi',
      maxRetries: 0,
      abortSignal: controller.signal,
      onError: ignoreErrors,
    });
    const chunks: string[] = [];
    for await (const chunk of result.textStream) {
      chunks.push(chunk);
      if (chunks.join('') === 'partial answer') break;
    }
    const [request] = await server.waitForRequests(1);
    expect(request.closedEarly).toBe(false);

    controller.abort();
    await request.closed;
    expect(request.closedEarly).toBe(true);
  });

  it('records each request with the messages the model saw', async () => {
    server.enqueue({ text: 'ok', usage: { promptTokens: 11, completionTokens: 7 } });

    const result = streamText({
      model: model(),
      system: 'You are terse.',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'noted' },
        { role: 'user', content: 'second' },
      ],
      maxRetries: 0,
    });
    const usage = await result.usage;

    const [request] = await server.waitForRequests(1);
    expect(request).toMatchObject({ index: 0, model: 'test-model', closedEarly: false });
    expect(request.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'noted' },
      { role: 'user', content: 'second' },
    ]);
    expect(request.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(usage).toMatchObject({ inputTokens: 11, outputTokens: 7, totalTokens: 18 });
  });

  it('echoes the last user message when nothing is scripted', async () => {
    const result = streamText({ model: model(), prompt: 'hello there', maxRetries: 0 });
    expect(await result.text).toBe('Echo: hello there');
  });

  it('lets a responder take precedence over the queue', async () => {
    server.enqueue({ text: 'queued' });
    server.setResponder((req) => ({ text: `request ${req.index}` }));

    expect(await streamText({ model: model(), prompt: 'a', maxRetries: 0 }).text).toBe('request 0');
    server.setResponder(undefined);
    expect(await streamText({ model: model(), prompt: 'b', maxRetries: 0 }).text).toBe('queued');
  });

  it('answers non-streaming requests with a chat.completion object', async () => {
    server.enqueue({ toolCalls: [{ name: 'lookup', args: { q: 'x' } }] }, { text: 'plain answer' });
    const tools = { lookup: tool({ description: 'Look something up', inputSchema: z.object({ q: z.string() }) }) };

    const withTool = await generateText({ model: model(), prompt: 'find x', tools, maxRetries: 0 });
    expect(withTool.toolCalls[0]).toMatchObject({ toolCallId: 'call_0_0', toolName: 'lookup', input: { q: 'x' } });

    const plain = await generateText({ model: model(), prompt: 'hi', maxRetries: 0 });
    expect(plain.text).toBe('plain answer');
    expect(server.requests[1].body.stream).toBeUndefined();
  });

  it('lists a model', async () => {
    const response = await fetch(`${server.url}/models`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ object: 'list', data: [{ id: 'test-model' }] });
  });
});
