/**
 * State lanes (behaviour §3), tool approval (behaviour §2.4) and the notification inbox (behaviour §4) over real HTTP, driven by the HTTP client SDK: the
 * `/state-signals` and `/send-tool-approval` routes, their errors (400/404/409), lanes in the thread view, and an
 * approval from a second client continuing the answer on the first client's subscription.
 */
import { summarizeAgents } from '../../agents/summary';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThreadEvent } from '../../protocol/events';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { createHttpClient, isThreadlineHttpError, type ThreadlineHttpClient } from '../../http-client';
import { startHarness, testAgent, type Harness } from '../support/harness';
import { adminAgent } from '../support/test-agents';

let h: Harness;
let gateway: ServedGateway;
let browser: ThreadlineHttpClient;
let phone: ThreadlineHttpClient;
beforeAll(async () => {
  h = await startHarness({ agents: [testAgent, adminAgent] });
  gateway = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent, adminAgent]), port: 0 });
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
    const subscription = await browser.agent(adminAgent.id).subscribeToThread(t);
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
    await browser.agent(adminAgent.id).sendMessage('delete acme/app', t);
    await asked;

    expect(
      await httpStatus(phone.agent(adminAgent.id).sendToolApproval({ ...t, toolCallId: 'nope', approved: true })),
    ).toBe(404);
    h.model.enqueue({ text: 'Deleted.' });
    const approved = await phone.agent(adminAgent.id).sendToolApproval({ ...t, toolCallId: 'del-1', approved: true });
    expect(approved).toMatchObject({ accepted: true, toolCallId: 'del-1', status: 'approved' });
    expect(
      await httpStatus(phone.agent(adminAgent.id).sendToolApproval({ ...t, toolCallId: 'del-1', approved: false })),
    ).toBe(409);
    await done;
    await subscription.unsubscribe();
    await reading;
    const types = seen.map((e) => e.type);
    expect(types.indexOf('tool-call-approval')).toBeLessThan(types.indexOf('tool-result'));
    expect(seen.find((e) => e.type === 'tool-result')?.payload).toMatchObject({ output: 'deleted acme/app' });
    expect(types.at(-1)).toBe('finish');
    expect(
      await httpStatus(phone.agent(adminAgent.id).sendToolApproval({ ...h.thread(), toolCallId: 'x', approved: true })),
    ).toBe(404);
  });
});

describe('notifications over HTTP (behaviour §4, §6)', () => {
  it('sends, lists with filters and paging, changes status, and answers 404 for unknown records', async () => {
    const t = h.thread();
    const agent = browser.agent('tester');
    const sent = await agent.sendNotificationSignal(
      [
        { source: 'github', kind: 'ci-status', priority: 'low', summary: 'CI failed on main.', dedupeKey: 'ci' },
        { source: 'email', kind: 'mail', priority: 'low', summary: 'Invoice 42', payload: { amount: 42 } },
      ],
      t,
    );
    expect(sent).toMatchObject({ accepted: true, notifications: [{ action: 'summarize' }, { action: 'summarize' }] });
    const again = await agent.sendNotificationSignal(
      { source: 'github', kind: 'ci-status', priority: 'low', summary: 'CI failed again.', dedupeKey: 'ci' },
      t,
    );
    expect(again.notifications[0]).toMatchObject({ id: sent.notifications[0].id, coalesced: true, coalescedCount: 2 });

    const github = await agent.listNotifications(t, { source: ['github'] });
    expect(github!.notifications.map((n) => n.summary)).toEqual(['CI failed again.']);
    const text = await agent.listNotifications(t, { q: 'invoice' });
    expect(text!.notifications[0]).toMatchObject({ source: 'email', payload: { amount: 42 } });
    const first = await agent.listNotifications(t, { limit: 1 });
    expect(first).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    const second = await agent.listNotifications(t, { limit: 1, cursor: first!.nextCursor! });
    expect(second!.notifications[0].id).not.toBe(first!.notifications[0].id);

    const seen = await agent.markNotificationSeen(t, sent.notifications[1].id);
    expect(seen).toMatchObject({ id: sent.notifications[1].id, status: 'seen' });
    expect(await agent.archiveNotification(t, sent.notifications[1].id)).toMatchObject({ status: 'archived' });
    expect((await agent.listNotifications(t, { status: ['archived'] }))!.notifications).toHaveLength(1);
    expect(((await agent.getThread(t)) as { inbox: Record<string, number> }).inbox).toMatchObject({
      pending: 1,
      archived: 1,
    });
    expect(await agent.listArchivedNotifications(t)).toEqual({ notifications: [], nextCursor: null });
    expect(await httpStatus(agent.dismissNotification(t, 'nope'))).toBe(404);
    expect(await httpStatus(agent.listNotifications(t, { status: ['bogus' as never] }))).toBe(400);
    expect(await agent.listNotifications(h.thread())).toBeNull();
  });

  it('rejects a bad notification naming the field, and changes nothing', async () => {
    const t = h.thread();
    const res = await fetch(`${gateway.url}/api/agents/tester/notifications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ notification: { source: 'github', summary: 'no kind', priority: 'meh' }, ...t }),
    });
    expect(res.status).toBe(400);
    const message = ((await res.json()) as { error: { message: string } }).error.message;
    expect(message).toMatch(/kind/);
    expect(message).toMatch(/priority/);
    expect(await browser.agent('tester').getThread(t)).toBeNull();
  });
});
