/**
 * behaviour §6 and issue 4 part 8: an unmodified `@mastra/client-js` (`new MastraClient({ baseUrl })`, `getAgent(id)`)
 * drives Threadline threads through the gateway served on loopback, on the real dev server: `sendMessage`,
 * `queueMessage`, `sendSignal`, `subscribeToThread` + `processDataStream`, `sendToolApproval` and `abortThread`, with
 * their real signatures and what their callers read back. Where Mastra's fields cannot map, the gateway answers a
 * 400 naming the field (docs/mastra-compat.md).
 */
import { summarizeAgents } from '../../agents/summary';
import { randomUUID } from 'node:crypto';
import { MastraClient, MastraClientError } from '@mastra/client-js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import type { ThreadTarget } from '../../protocol/schemas';
import { startHarness, testAgent, wakeEventTypes, type Harness } from '../support/harness';
import { echoResponder, type ScriptedReply } from '../support/model-server';
import { adminAgent } from '../support/test-agents';

/** A chunk as Mastra's `onChunk` receives it: the parsed JSON of one SSE block. */
interface Chunk {
  type: string;
  id?: string;
  runId?: string;
  from?: string;
  /* eslint-disable-next-line @typescript-eslint/no-explicit-any -- payloads differ per type; the test reads them freely. */
  payload?: any;
  data?: Record<string, unknown>;
}

type Subscription = Awaited<ReturnType<ReturnType<MastraClient['getAgent']>['subscribeToThread']>>;

let h: Harness;
let gateway: ServedGateway;
let mastra: MastraClient;
beforeAll(async () => {
  h = await startHarness({ agents: [testAgent, adminAgent] });
  gateway = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent, adminAgent]), port: 0 });
  mastra = new MastraClient({ baseUrl: gateway.url });
});
afterEach(() => {
  h.model.setResponder(undefined);
  vi.restoreAllMocks();
});
afterAll(async () => {
  await gateway?.close();
  await h?.close();
});

/** Mastra's SSE reader logs and drops a block it cannot parse: any such log means the gateway's framing is wrong. */
function watchParseErrors(): { errors: unknown[][] } {
  const errors: unknown[][] = [];
  const original = console.error;
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    if (String(args[0]).includes('JSON parse error')) errors.push(args);
    else original(...args);
  });
  return { errors };
}

/** Reads a Mastra subscription with `processDataStream`; `until(type, n)` waits for the n-th chunk of a type. */
function read(subscription: Subscription) {
  const chunks: Chunk[] = [];
  const waiters = new Set<() => void>();
  const reading = subscription.processDataStream({
    onChunk: (chunk) => {
      chunks.push(chunk as unknown as Chunk);
      for (const waiter of [...waiters]) waiter();
    },
  });
  const until = (type: string, n = 1, timeoutMs = 30_000): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (chunks.filter((c) => c.type === type).length < n) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`Timed out waiting for ${n} "${type}"; saw ${chunks.map((c) => c.type).join(', ')}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return { chunks, reading, until };
}

/** Holds the model's next reply until `release()`, so its run is surely active meanwhile. Later requests echo. */
function holdNextReply(reply: ScriptedReply): { release(): void } {
  const index = h.model.requests.length;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  h.model.setResponder((req) => (req.index === index ? released.then(() => reply) : echoResponder(req)));
  return { release };
}

const textOf = (chunks: Chunk[], runId?: string): string =>
  chunks
    .filter((c) => c.type === 'text-delta' && (runId === undefined || c.runId === runId))
    .map((c) => c.payload.text as string)
    .join('');

async function mastraError(promise: Promise<unknown>): Promise<MastraClientError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof MastraClientError) return err;
    throw err;
  }
  throw new Error('Expected a MastraClientError, but the call succeeded.');
}

/** The Threadline error message inside a Mastra client error's body. */
const messageOf = (err: MastraClientError): string => (err.body as { error: { message: string } }).error.message;

describe('@mastra/client-js against the gateway', () => {
  it('subscribes, sends a message, and reads start … text-delta … finish through processDataStream', async () => {
    const parse = watchParseErrors();
    const t = h.thread();
    const agent = mastra.getAgent('tester');
    const subscription = await agent.subscribeToThread(t);
    expect(subscription.status).toBe(200);
    const { chunks, reading, until } = read(subscription);

    h.model.enqueue({ text: ['Hello', ' there'] });
    const sent = await agent.sendMessage({ ...t, message: 'Hi' });
    expect(sent).toMatchObject({
      accepted: true,
      runId: expect.any(String),
      signal: { id: expect.any(String), type: 'user', contents: 'Hi', createdAt: expect.any(String) },
    });
    expect(Number.isNaN(Date.parse((sent.signal as { createdAt: string }).createdAt))).toBe(false);

    await until('finish');
    subscription.unsubscribe();
    await expect(reading).resolves.toBeUndefined();

    expect(chunks.map((c) => c.type)).toEqual(wakeEventTypes(2));
    expect(textOf(chunks)).toBe('Hello there');
    for (const chunk of chunks) expect(chunk).toMatchObject({ from: 'AGENT', runId: sent.runId });
    // Threadline's event id stays inside every chunk, strictly increasing.
    const ids = chunks.map((c) => Number(c.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
    const echo = chunks.find((c) => c.type === 'data-user-message')!;
    expect(echo.data).toMatchObject({ id: (sent.signal as { id: string }).id, contents: 'Hi' });
    expect(chunks.at(-1)!.payload).toMatchObject({ reason: 'stop', stepResult: { reason: 'stop' } });
    expect(chunks.find((c) => c.type === 'step-finish')!.payload).toMatchObject({
      stepResult: { reason: 'stop' },
      output: { usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) } },
    });
    expect(parse.errors).toEqual([]);
  });

  it('queues a message behind the active run and sends signals; every answer carries a runId', async () => {
    const parse = watchParseErrors();
    const t = h.thread();
    const agent = mastra.getAgent('tester');
    const subscription = await agent.subscribeToThread(t);
    const { chunks, reading, until } = read(subscription);
    const before = h.model.requests.length;
    const held = holdNextReply({ text: ['first ', 'answer'] });

    const first = await agent.sendMessage({ ...t, message: [{ type: 'text', text: 'first' }] });
    await h.model.waitForRequests(before + 1, 30_000);
    const queued = await agent.queueMessage({ ...t, message: { contents: 'second', attributes: { from: 'mastra' } } });
    expect(queued).toMatchObject({ accepted: true, action: 'queued', runId: expect.any(String) });
    expect(queued.runId).not.toBe(first.runId);

    // A signal kept for later: no run is involved, so the answer's runId is the signal's id, as Mastra answers.
    const createdAt = new Date('2025-01-02T03:04:05.000Z');
    const note = await agent.sendSignal({
      ...t,
      signal: { type: 'system-reminder', contents: 'the user is on mobile', createdAt },
      ifActive: { behavior: 'persist' },
    });
    const signal = note.signal as { id: string; type: string; createdAt: string };
    expect(note).toMatchObject({ accepted: true, action: 'persist', runId: signal.id, signalId: signal.id });
    expect(signal).toMatchObject({
      type: 'reactive',
      contents: 'the user is on mobile',
      createdAt: createdAt.toISOString(),
    });

    const joined = await agent.sendSignal({ ...t, signal: { type: 'user', contents: 'and be brief' } });
    expect(joined).toMatchObject({ accepted: true, action: 'deliver', runId: first.runId });

    held.release();
    await until('finish', 2);
    subscription.unsubscribe();
    await reading;

    const finishes = chunks.filter((c) => c.type === 'finish').map((c) => c.runId);
    expect(finishes).toEqual([first.runId, queued.runId]);
    expect(textOf(chunks, first.runId)).toMatch(/^first answer/);
    expect(textOf(chunks, queued.runId)).toBe('Echo: <user from="mastra">second</user>');
    const persisted = chunks.find((c) => c.type === 'data-signal' && c.data?.id === signal.id);
    expect(persisted?.data).toMatchObject({ type: 'reactive', contents: 'the user is on mobile', persisted: true });
    expect(parse.errors).toEqual([]);
  });

  it('approves a parked tool call with sendToolApproval; the answer continues on the same subscription', async () => {
    const t = h.thread();
    const agent = mastra.getAgent(adminAgent.id);
    const subscription = await agent.subscribeToThread(t);
    const { chunks, reading, until } = read(subscription);

    h.model.enqueue({ toolCalls: [{ id: 'del-1', name: 'deleteRepo', args: { repo: 'acme/app' } }] });
    const sent = await agent.sendMessage({ ...t, message: 'delete acme/app' });
    await until('tool-call-approval');
    const asked = chunks.find((c) => c.type === 'tool-call-approval')!;
    expect(asked.payload).toMatchObject({
      toolCallId: 'del-1',
      toolName: 'deleteRepo',
      args: { repo: 'acme/app' },
      resumeSchema: '{}',
    });
    expect(chunks.find((c) => c.type === 'tool-call')!.payload).toMatchObject({ args: { repo: 'acme/app' } });

    h.model.enqueue({ text: 'Deleted.' });
    const approved = await agent.sendToolApproval({ ...t, toolCallId: 'del-1', approved: true });
    expect(approved).toMatchObject({ accepted: true, runId: sent.runId, toolCallId: 'del-1' });
    await until('finish');

    const again = await mastraError(agent.sendToolApproval({ ...t, toolCallId: 'del-1', approved: false }));
    expect(again.status).toBe(409);
    const unknown = await mastraError(agent.sendToolApproval({ ...t, toolCallId: 'nope', approved: true }));
    expect(unknown.status).toBe(404);
    subscription.unsubscribe();
    await reading;

    const types = chunks.map((c) => c.type);
    expect(types.indexOf('tool-call-approval')).toBeLessThan(types.indexOf('tool-result'));
    expect(chunks.find((c) => c.type === 'tool-result')!.payload).toMatchObject({
      toolCallId: 'del-1',
      result: 'deleted acme/app',
    });
    expect(textOf(chunks)).toBe('Deleted.');
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', runId: sent.runId });
  });

  it('aborts only the run named by expectedRunId; subscription.abort() aborts the active run', async () => {
    const t = h.thread();
    const agent = mastra.getAgent('tester');
    const subscription = await agent.subscribeToThread(t);
    const { chunks, reading, until } = read(subscription);

    const before = h.model.requests.length;
    const held = holdNextReply({ text: 'never finished' });
    const run = await agent.sendMessage({ ...t, message: 'long task' });
    await h.model.waitForRequests(before + 1, 30_000);
    expect(await agent.abortThread({ ...t, expectedRunId: `run-${randomUUID()}` })).toMatchObject({ aborted: false });
    expect(await agent.abortThread({ ...t, expectedRunId: run.runId })).toMatchObject({ aborted: true });
    await until('abort');
    held.release();
    expect(chunks.find((c) => c.type === 'abort')).toMatchObject({ runId: run.runId, from: 'AGENT' });

    const second = holdNextReply({ text: 'also never finished' });
    const next = await agent.sendMessage({ ...t, message: 'another' });
    await until('start', 2);
    expect(await subscription.abort()).toBe(true);
    await until('abort', 2);
    second.release();
    expect(chunks.filter((c) => c.type === 'abort').map((c) => c.runId)).toEqual([run.runId, next.runId]);
    expect(await agent.abortThread({ ...t, expectedRunId: next.runId })).toMatchObject({ aborted: false });
    subscription.unsubscribe();
    await reading;
  });

  it('maps ifIdle.streamOptions: requestContext, Mastra-only keys ignored, modelSettings reach the model', async () => {
    const t = h.thread();
    const agent = mastra.getAgent('tester');
    const before = h.model.requests.length;
    const sent = await agent.sendMessage({
      ...t,
      message: 'tuned',
      ifIdle: {
        behavior: 'wake',
        streamOptions: {
          requestContext: { tenant: 'acme' },
          memory: { thread: t.threadId, resource: t.resourceId },
          modelSettings: { temperature: 0.25, maxRetries: 5 },
          maxSteps: 3,
          tracingOptions: {},
        },
      },
    });
    expect(sent).toMatchObject({ accepted: true, action: 'wake', runId: expect.any(String) });
    const requests = await h.model.waitForRequests(before + 1, 30_000);
    expect(requests[before].body.temperature).toBe(0.25);
  });
});

describe('what Threadline refuses, naming the field', () => {
  it('answers 400 for client tools, part-level providerOptions, a runId without its thread, and state signals', async () => {
    const t = h.thread();
    const agent = mastra.getAgent('tester');
    const cases: [Promise<unknown>, RegExp][] = [
      [
        agent.sendMessage({ ...t, message: 'x', ifIdle: { streamOptions: { instructions: 'be a pirate' } } }),
        /ifIdle\.streamOptions\.instructions is not supported by Threadline/,
      ],
      [
        agent.sendMessage({
          ...t,
          message: [{ type: 'text', text: 'x', providerOptions: { openai: { cache: true } } }],
        }),
        /message\[0\]\.providerOptions: Threadline does not support providerOptions on a part/,
      ],
      [
        agent.sendMessage({ runId: `run-${randomUUID()}`, message: 'x' }),
        /Threadline addresses threads by resourceId and threadId; send them along with runId/,
      ],
      [
        agent.sendSignal({ ...t, signal: { type: 'state', contents: 'x' } }),
        /State signals are sent with sendStateSignal/,
      ],
      [agent.subscribeToThread({ threadId: t.threadId }), /resourceId is required/],
      [agent.abortThread({ threadId: t.threadId }), /resourceId is required/],
    ];
    for (const [call, message] of cases) {
      const err = await mastraError(call);
      expect(err.status).toBe(400);
      expect(messageOf(err)).toMatch(message);
    }
    expect(await h.client.getThread(t)).toBeNull();
  });
});

describe('with an API key bound to one resource', () => {
  let keyed: ServedGateway;
  const resourceId = `tenant-${randomUUID()}`;
  beforeAll(async () => {
    keyed = await serveGateway({
      client: h.client,
      agents: summarizeAgents([testAgent]),
      port: 0,
      apiKeys: { 'key-one': [resourceId] },
    });
  });
  afterAll(async () => {
    await keyed?.close();
  });

  it("subscribes and aborts without resourceId (the key's resource), and cannot reach another", async () => {
    const client = new MastraClient({ baseUrl: keyed.url, headers: { Authorization: 'Bearer key-one' } });
    const agent = client.getAgent('tester');
    const t: ThreadTarget = { resourceId, threadId: `thr-${randomUUID()}` };
    const subscription = await agent.subscribeToThread({ threadId: t.threadId });
    const { chunks, reading, until } = read(subscription);
    await agent.sendMessage({ ...t, message: 'hello' });
    await until('finish');
    expect(textOf(chunks)).toBe('Echo: hello');
    expect(await agent.abortThread({ threadId: t.threadId })).toMatchObject({ aborted: false });
    subscription.unsubscribe();
    await reading;

    const other = await mastraError(
      agent.sendMessage({ resourceId: 'someone-else', threadId: t.threadId, message: 'x' }),
    );
    expect(other.status).toBe(403);
  });
});
