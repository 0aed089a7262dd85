/**
 * State lanes (SPEC §3) and tool approval (SPEC §2.4) over real HTTP, driven by the HTTP client SDK: the
 * `/state-signals` and `/send-tool-approval` routes, their errors (400/404/409), lanes in the thread view, and an
 * approval from a second client continuing the answer on the first client's subscription.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../activities/agent';
import type { ThreadEvent } from '../../client/bus/types';
import { serveGateway, type ServedGateway } from '../../client/gateway/serve';
import { createHttpClient, isThreadlineHttpError, type ThreadlineHttpClient } from '../../client/http';
import { startHarness, testAgent, type Harness } from '../support/harness';

const ops = defineAgent({
  id: 'ops',
  instructions: 'You run operations.',
  model: 'openai/test-model',
  tools: {
    deleteRepo: {
      description: 'Deletes a repository.',
      inputSchema: z.object({ repo: z.string() }),
      requireApproval: true,
      execute: (input: unknown) => `deleted ${(input as { repo: string }).repo}`,
    },
  },
});

let h: Harness;
let gateway: ServedGateway;
let browser: ThreadlineHttpClient;
let phone: ThreadlineHttpClient;
beforeAll(async () => {
  h = await startHarness({ agents: [testAgent, ops] });
  gateway = await serveGateway({ client: h.client, agents: [testAgent, ops], port: 0 });
  browser = createHttpClient({ baseUrl: gateway.url });
  phone = createHttpClient({ baseUrl: gateway.url });
});
afterAll(async () => {
  await gateway?.close();
  await h?.close();
});

async function httpStatus(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (err) {
    if (isThreadlineHttpError(err)) return err.status;
    throw err;
  }
}

describe('POST /api/agents/:agentId/state-signals', () => {
  it('accepts, skips the unchanged state, shows the lane, and names bad fields', async () => {
    const t = h.thread();
    const agent = browser.agent('tester');
    const state = {
      id: 'browser',
      mode: 'snapshot' as const,
      cacheKey: 'browser:https://example.com:3-tabs',
      contents: 'Browser is open. Active tab URL: https://example.com. 3 open tabs.',
      value: { activeUrl: 'https://example.com', tabCount: 3, open: true },
    };
    const first = await agent.sendStateSignal(state, { ...t, ifIdle: { behavior: 'persist' } });
    expect(first).toMatchObject({ accepted: true, action: 'persist', version: 1 });
    const again = await agent.sendStateSignal(state, { ...t, ifIdle: { behavior: 'persist' } });
    expect(again).toMatchObject({ accepted: true, action: 'skipped', reason: 'unchanged', version: 1 });
    const view = (await browser.agent('tester').getThread(t)) as { lanes: unknown[] };
    expect(view.lanes).toEqual([
      expect.objectContaining({ id: 'browser', version: 1, currentCacheKey: state.cacheKey, value: state.value }),
    ]);
    const missing = await fetch(`${gateway.url}/api/agents/tester/state-signals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ signal: { id: 'browser', contents: 'x' }, ...t }),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain(
      'state signal cacheKey is required',
    );
  });
});

describe('POST /api/agents/:agentId/send-tool-approval', () => {
  it('parks on tool-call-approval; an approval from another client continues the same subscription', async () => {
    const t = h.thread();
    const seen: ThreadEvent[] = [];
    const subscription = await browser.agent('ops').subscribeToThread(t);
    let approvalAsked!: () => void;
    const asked = new Promise<void>((resolve) => (approvalAsked = resolve));
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const reading = subscription.processDataStream({
      onChunk: (event) => {
        seen.push(event);
        if (event.type === 'tool-call-approval') approvalAsked();
        if (event.type === 'finish') finished();
      },
    });

    h.model.enqueue({ toolCalls: [{ id: 'del-1', name: 'deleteRepo', args: { repo: 'acme/app' } }] });
    await browser.agent('ops').sendMessage('delete acme/app', t);
    await asked;

    expect(await httpStatus(phone.agent('ops').sendToolApproval({ ...t, toolCallId: 'nope', approved: true }))).toBe(
      404,
    );
    h.model.enqueue({ text: 'Deleted.' });
    const approved = await phone.agent('ops').sendToolApproval({ ...t, toolCallId: 'del-1', approved: true });
    expect(approved).toMatchObject({ accepted: true, toolCallId: 'del-1', status: 'approved' });
    expect(await httpStatus(phone.agent('ops').sendToolApproval({ ...t, toolCallId: 'del-1', approved: false }))).toBe(
      409,
    );
    await done;
    await subscription.unsubscribe();
    await reading;
    const types = seen.map((e) => e.type);
    expect(types.indexOf('tool-call-approval')).toBeLessThan(types.indexOf('tool-result'));
    expect(seen.find((e) => e.type === 'tool-result')?.payload).toMatchObject({ output: 'deleted acme/app' });
    expect(types.at(-1)).toBe('finish');
    expect(
      await httpStatus(phone.agent('ops').sendToolApproval({ ...h.thread(), toolCallId: 'x', approved: true })),
    ).toBe(404);
  });
});
