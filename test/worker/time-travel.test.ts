/**
 * Time travel end to end on the dev server, with a worker, the scripted model and real HTTP. One source thread (a
 * tool call, a processor signal, several turns, continued as new) is inspected step by step: each prompt rebuilt from
 * history is compared byte for byte with the request the model server received for that step. Forks from before a
 * step, with the step's own agent and with another one, make the same request again (or the other agent's) and
 * answer, and leave the source as it was. Through the TypeScript client, the CLI (in-process `runCli`), the gateway
 * and the HTTP SDK.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../agents/agent';
import { summarizeAgents } from '../../agents/summary';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { createHttpClient } from '../../http-client';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import type { StepList, StepPrompt } from '../../protocol/time-travel';
import type { MessagesPage } from '../../protocol/views';
import { runThreadline } from '../support/cli';
import { formatThreadName } from '../../worker/commands/thread-name';
import type { ReceivedRequest, ScriptedReply } from '../support/model-server';
import { afterFinishes, collectUntil, startHarness, type Harness } from '../support/harness';

const helper = defineAgent({
  id: 'helper',
  instructions: 'You help with the weather.',
  model: 'openai/test-model',
  tools: {
    lookup: {
      description: 'Looks up the weather of a city.',
      inputSchema: z.object({ city: z.string() }),
      execute: ({ city }: { city: string }) => ({ city, forecast: 'sunny' }),
    },
  },
  processors: [
    {
      id: 'units',
      // Its signal reaches the model with the step, and the history keeps it only in the step's result.
      async processInputStep({ messageList, sendSignal }) {
        const last = messageList.all().at(-1);
        if (last?.role === 'user' && JSON.stringify(last.contents).includes('weather')) {
          await sendSignal({ contents: 'Use degrees Celsius.' });
        }
      },
    },
  ],
});

const critic = defineAgent({
  id: 'critic',
  instructions: 'You criticise every forecast.',
  model: 'openai/other-model',
});

const run = randomUUID();
const source: ThreadTarget = { resourceId: `tt-${run}`, threadId: 'source' };
const elsewhere = `tt-elsewhere-${run}`;
const KEY = `tt-ops-${run}`;
const SCOPED = `tt-scoped-${run}`;

let h: Harness;
let env: Record<string, string>;
let gateway: ServedGateway;
/** The model server's requests for the source thread, one per step, in order. */
let requests: ReceivedRequest[];
let list: StepList;

/** One user turn, answered as scripted; resolves once its run finished. */
async function turn(t: ThreadTarget, text: string, ...replies: ScriptedReply[]): Promise<void> {
  const stream = h.client.subscribeToThread(t).stream;
  h.model.enqueue(...replies);
  await h.client.agent('helper').sendMessage(text, t);
  await collectUntil(stream, afterFinishes(1));
}

beforeAll(async () => {
  h = await startHarness({ agents: [helper, critic], threadConfig: { continueAsNewAfterEvents: 60 } });
  env = { HOME: '/nonexistent', XDG_CONFIG_HOME: '/nonexistent', TEMPORAL_ADDRESS: h.address };
  env.TEMPORAL_TASK_QUEUE = h.taskQueue;
  gateway = await serveGateway({
    client: h.client,
    agents: summarizeAgents([helper, critic]),
    port: 0,
    apiKeys: { [KEY]: ['*'], [SCOPED]: [source.resourceId] },
  });

  const first = h.model.requests.length;
  await turn(
    source,
    'What is the weather in Paris?',
    { toolCalls: [{ id: 'call-1', name: 'lookup', args: { city: 'Paris' } }] },
    { text: 'Sunny in Paris.' },
  );
  const handle = h.temporal.workflow.getHandle(threadKey(source.resourceId, source.threadId));
  const firstRunId = (await handle.describe()).runId;
  for (let n = 1; n <= 15 && (await handle.describe()).runId === firstRunId; n++) {
    await turn(source, `Tell me something, ${n}.`, { text: `Something ${n}.` });
  }
  expect((await handle.describe()).runId, 'the source continued as new').not.toBe(firstRunId);
  // One more turn after the continue-as-new: its step lives in the second execution.
  await turn(source, 'And the weather tomorrow?', { text: 'Rain tomorrow.' });
  requests = h.model.requests.slice(first);
  list = (await h.client.listSteps(source))!;
});

afterAll(async () => {
  await gateway?.close();
  await h?.close();
});

const cli = (args: string[]) => runThreadline(args, env);

const name = formatThreadName;

describe('steps and inspect', () => {
  it("lists every step of the chain with the thread's own numbering", () => {
    expect(list.steps.map((s) => s.step)).toEqual(requests.map((_, i) => i + 1));
    expect(list.steps[0]).toMatchObject({ step: 1, stepNumber: 1, agentId: 'helper', status: 'completed' });
    expect(list.steps[0].summary).toBe('step 1 · helper');
    expect(list.steps[1]).toMatchObject({ step: 2, stepNumber: 2, runId: list.steps[0].runId });
    expect(list.steps[2].stepNumber).toBe(1);
    expect(list.steps[2].runId).not.toBe(list.steps[0].runId);
    expect(new Set(list.steps.map((s) => s.execution)).size).toBeGreaterThan(1);
  });

  it('rebuilds every step, across continue-as-new, byte-identical to the request the model server received', async () => {
    for (const listing of list.steps) {
      const prompt = await h.client.inspectStep(source, listing.step);
      expect(prompt.request?.body, `step ${listing.step}`).toBe(requests[listing.step - 1].rawBody);
      expect(prompt.request?.url).toBe(`${h.model.url}/chat/completions`);
      expect(prompt).toMatchObject({
        step: listing.step,
        runId: listing.runId,
        stepNumber: listing.stepNumber,
        agentId: 'helper',
        status: 'completed',
        execution: listing.execution,
        model: 'openai/test-model',
        system: helper.instructions,
        complete: true,
        notes: [],
      });
      expect(Object.keys(prompt.tools)).toEqual(['lookup']);
    }
  });

  it("shows the processor's signal and the tool call the model saw", async () => {
    const [first, second] = [await h.client.inspectStep(source, 1), await h.client.inspectStep(source, 2)];
    expect(JSON.stringify(first.messages)).toContain('<system-reminder>Use degrees Celsius.</system-reminder>');
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool']);
    expect(second.tools.lookup.inputSchema).toMatchObject({ properties: { city: { type: 'string' } } });
  });

  it('inspects the step in flight: running, and incomplete (its processor signals come with its result)', async () => {
    const t = h.thread();
    const sent = h.model.requests.length;
    h.model.enqueue({ text: 'Thinking', hang: true });
    await h.client.agent('helper').sendMessage('Take your time.', t);
    const [inFlight] = (await h.model.waitForRequests(sent + 1, 30_000)).slice(sent);
    expect((await h.client.listSteps(t))!.steps).toMatchObject([{ step: 1, status: 'running' }]);
    const prompt = await h.client.inspectStep(t, 1);
    expect(prompt).toMatchObject({ status: 'running', complete: false });
    expect(prompt.notes.join(' ')).toContain('processors');
    // This step's processor added nothing, so the body is the one the model is answering.
    expect(prompt.request?.body).toBe(inFlight.rawBody);
    await h.client.abortThread(t);
  });

  it('refuses a step the thread does not have, and a thread that does not exist', async () => {
    await expect(h.client.inspectStep(source, 999)).rejects.toMatchObject({ name: 'NotFoundError' });
    await expect(h.client.inspectStep(source, 0)).rejects.toMatchObject({ name: 'ValidationError' });
    await expect(h.client.inspectStep(h.thread(), 1)).rejects.toMatchObject({ name: 'NotFoundError' });
    expect(await h.client.listSteps(h.thread())).toBeNull();
  });
});

describe('fork', () => {
  it('with another agent: the first request has the source’s messages before the step; the fork answers; the source is untouched', async () => {
    const before = (await h.client.getMessages(source, { limit: 1000 }))!;
    const to = { resourceId: source.resourceId, threadId: `fork-${randomUUID()}` };
    const stream = h.client.subscribeToThread(to).stream;
    const sent = h.model.requests.length;
    h.model.enqueue({ text: 'That forecast is wrong.' });

    const view = await h.client.forkThread(source, { atStep: 3, to, agentId: 'critic' });
    expect(view).toMatchObject({ resourceId: to.resourceId, threadId: to.threadId });
    const events = await collectUntil(stream, afterFinishes(1));
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['start', 'step-start', 'finish']));

    const [forked] = (await h.model.waitForRequests(sent + 1)).slice(sent);
    const sourced = requests[2];
    expect(forked.model).toBe('other-model');
    expect(forked.messages[0]).toEqual({ role: 'system', content: critic.instructions });
    expect(forked.messages.slice(1)).toEqual(sourced.messages.slice(1));
    expect(forked.body.tools).toBeUndefined();

    const page = (await h.client.getMessages(to, { limit: 1000 }))!;
    const sourceBeforeStep3 = before.messages.slice(0, page.messages.length - 1);
    expect(page.messages.slice(0, -1)).toEqual(sourceBeforeStep3);
    expect(page.messages.at(-1)).toMatchObject({
      role: 'assistant',
      content: [{ type: 'text', text: 'That forecast is wrong.' }],
    });

    expect(await h.client.getMessages(source, { limit: 1000 })).toEqual(before);
    expect(await h.client.listSteps(source)).toEqual(list);
    // The fork numbers on from the source: its first step is step 3 again.
    expect((await h.client.listSteps(to))!.steps.map((s) => [s.step, s.agentId])).toEqual([[3, 'critic']]);
  });

  it('with the step’s own agent, across continue-as-new: the same request byte for byte', async () => {
    const last = list.steps.at(-1)!;
    const to = { resourceId: source.resourceId, threadId: `fork-${randomUUID()}` };
    const stream = h.client.subscribeToThread(to).stream;
    const sent = h.model.requests.length;
    h.model.enqueue({ text: 'Snow tomorrow.' });
    const forked = await cli(['fork', name(source), '--at-step', String(last.step), '--to', name(to), '--json']);
    expect(forked.code, forked.err).toBe(0);
    expect(JSON.parse(forked.out)).toMatchObject({ resourceId: to.resourceId, threadId: to.threadId });
    await collectUntil(stream, afterFinishes(1));
    const [request] = (await h.model.waitForRequests(sent + 1)).slice(sent);
    expect(request.rawBody).toBe(requests[last.step - 1].rawBody);
  });

  it('refuses a target that exists (409 / exit 1) and an agent no worker hosts', async () => {
    await expect(h.client.forkThread(source, { atStep: 1, to: source })).rejects.toMatchObject({
      name: 'ConflictError',
    });
    const to = { resourceId: source.resourceId, threadId: `fork-${randomUUID()}` };
    await expect(h.client.forkThread(source, { atStep: 1, to, agentId: 'nobody' })).rejects.toMatchObject({
      name: 'ValidationError',
    });
    expect(await h.client.getThread(to)).toBeNull();
    const again = await cli(['fork', name(source), '--at-step', '1', '--to', name(source)]);
    expect(again.code).toBe(1);
    expect(again.err).toContain('exists already');
  });
});

describe('the CLI', () => {
  it('inspect lists the steps, prints one, its JSON and its body byte for byte', async () => {
    const listed = await cli(['inspect', name(source)]);
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out).toContain(`${list.steps.length} step(s)`);
    expect(listed.out).toMatch(/^1\s+completed\s+helper\s/m);
    expect(JSON.parse((await cli(['inspect', name(source), '--json'])).out)).toEqual(list);

    const shown = await cli(['inspect', '--step', '2', name(source)]);
    expect(shown.code, shown.err).toBe(0);
    expect(shown.out).toContain('Step 2 of');
    expect(shown.out).toContain('You help with the weather.');
    expect(shown.out).toContain('lookup: Looks up the weather of a city.');
    expect(shown.out).toMatch(/tool\s+\[tool result lookup/);
    const prompt = JSON.parse((await cli(['inspect', '--step', '2', '--json', name(source)])).out) as StepPrompt;
    expect(prompt.request?.body).toBe(requests[1].rawBody);
    const body = await cli(['inspect', '--step', '2', '--body', name(source)]);
    expect(body.out).toBe(`${requests[1].rawBody}\n`);
  });

  it('exit 1 for a missing step, 2 for a bad step number or a missing --to', async () => {
    const missing = await cli(['inspect', '--step', '999', name(source)]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no step 999');
    expect((await cli(['inspect', '--step', 'two', name(source)])).code).toBe(2);
    expect((await cli(['fork', name(source), '--at-step', '1'])).code).toBe(2);
    const help = await cli(['inspect', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('threadline inspect --step 7 user-42/support');
  });
});

describe('over HTTP', () => {
  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const path = (t: ThreadTarget) =>
    `/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`;

  it('GET steps and a step’s prompt; 404 and 400 for steps that do not exist', async () => {
    const steps = await call('GET', `${path(source)}/steps`, SCOPED);
    expect(steps).toEqual({ status: 200, body: list });
    const prompt = await call('GET', `${path(source)}/steps/4/prompt`, SCOPED);
    expect(prompt.status).toBe(200);
    expect((prompt.body as unknown as StepPrompt).request?.body).toBe(requests[3].rawBody);
    expect((await call('GET', `${path(source)}/steps/999/prompt`, SCOPED)).status).toBe(404);
    expect((await call('GET', `${path(source)}/steps/x/prompt`, SCOPED)).status).toBe(400);
    expect((await call('GET', `${path(h.thread())}/steps`, KEY)).status).toBe(404);
  });

  it('both threads must be allowed for the key (403); the target must not exist (409); the HTTP SDK forks', async () => {
    const other = { resourceId: elsewhere, threadId: 'x' };
    expect((await call('GET', `${path(other)}/steps`, SCOPED)).status).toBe(403);
    const refused = await call('POST', `${path(source)}/fork`, SCOPED, { atStep: 1, to: other });
    expect(refused.status).toBe(403);
    expect(await h.client.getThread(other)).toBeNull();
    const taken = await call('POST', `${path(source)}/fork`, SCOPED, { atStep: 1, to: source });
    expect(taken.status).toBe(409);

    const http = createHttpClient({ baseUrl: gateway.url, apiKey: SCOPED });
    expect(await http.listSteps(source)).toEqual(list);
    const to = { resourceId: source.resourceId, threadId: `fork-${randomUUID()}` };
    const stream = h.client.subscribeToThread(to).stream;
    h.model.enqueue({ text: 'Forked over HTTP.' });
    const view = await http.forkThread(source, { atStep: 1, to });
    expect(view).toMatchObject({ resourceId: to.resourceId, threadId: to.threadId });
    await collectUntil(stream, afterFinishes(1));
    const page = (await h.client.getMessages(to)) as MessagesPage;
    expect(page.messages.at(-1)).toMatchObject({ role: 'assistant' });
    // The fork re-ran step 1 with the same agent, processor signal included: the same request again.
    expect((await http.inspectStep(to, 1)).request?.body).toBe(requests[0].rawBody);
  });
});
