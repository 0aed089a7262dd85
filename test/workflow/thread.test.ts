/**
 * behaviour §2.1 and §5 on a real Temporal dev server: waking, joining a running loop, queueing, idempotency,
 * subscriptions and resume.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { threadKey } from '../../protocol/ids';
import { sendMessageSignal, submitInputUpdate, threadStateQuery } from '../../protocol/definitions';
import {
  afterFinishes,
  collectUntil,
  startHarness,
  textByRun,
  userTurns,
  wakeEventTypes,
  type Harness,
} from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('messages', () => {
  it('wakes an idle thread and streams the reply in the documented order', async () => {
    const t = h.thread();
    const sub = h.client.agent('tester').subscribeToThread(t);
    h.model.enqueue({ text: ['Hello', ' there'] });
    const result = await h.client.agent('tester').sendMessage('Hi', t);
    expect(result).toMatchObject({ accepted: true, action: 'wake', signalId: expect.any(String) });
    await expect(result.persisted).resolves.toBeUndefined();
    const events = await collectUntil(sub.stream, (e) => e.type === 'finish');
    sub.unsubscribe();
    expect(events.map((e) => e.type)).toEqual(wakeEventTypes(2));
    expect(new Set(events.map((e) => e.runId))).toEqual(new Set([result.runId]));
    const ids = events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(textByRun(events).get(result.runId!)).toBe('Hello there');
    expect(await h.client.getThread(t)).toMatchObject({ status: 'idle', messageCount: 2, runsCompleted: 1 });
  });

  it('joins a running loop at the next step boundary as separate turns, and answers every message', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const sub = agent.subscribeToThread(t);
    const before = h.model.requests.length;
    h.model.enqueue({ text: ['one ', 'two ', 'three'], chunkDelayMs: 300 }, { text: 'answered both' });
    const first = await agent.sendMessage('first', t);
    await h.model.waitForRequests(before + 1);
    const second = await agent.sendMessage('second', t);
    const third = await agent.sendMessage({ contents: 'third', attributes: { name: 'Jane', sentFrom: 'slack' } }, t);
    expect(second).toMatchObject({ action: 'deliver', runId: first.runId });
    expect(third).toMatchObject({ action: 'deliver', runId: first.runId });
    const events = await collectUntil(sub.stream, (e) => e.type === 'finish');
    sub.unsubscribe();
    const requests = h.model.requests.slice(before);
    expect(requests).toHaveLength(2);
    expect(userTurns(requests[1].messages)).toEqual([
      'first',
      'second',
      '<user name="Jane" sentFrom="slack">third</user>',
    ]);
    expect(requests[1].messages.map((m: { role: string }) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'user',
    ]);
    // The mid-run inputs are echoed at the step boundary, after the first step's output.
    const types = events.map((e) => e.type);
    expect(types.filter((x) => x === 'step-start')).toHaveLength(2);
    expect(types.indexOf('data-user-message', 2)).toBeGreaterThan(types.indexOf('step-finish'));
    expect(events.filter((e) => e.type === 'finish')).toHaveLength(1);
  });

  it('runs queued messages one after another, in acceptance order, as separate runs', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const sub = agent.subscribeToThread(t);
    const before = h.model.requests.length;
    h.model.setResponder(async (req) => ({
      text: `reply to ${userTurns(req.messages).at(-1)}`,
      chunkDelayMs: req.index === before ? 300 : 0,
    }));
    try {
      const first = await agent.sendMessage('m0', t);
      await h.model.waitForRequests(before + 1);
      const queued = [];
      for (const text of ['q1', 'q2', 'q3']) queued.push(await agent.queueMessage(text, t));
      for (const q of queued) expect(q.action).toBe('queued');
      const runIds = [first.runId, ...queued.map((q) => q.runId)];
      expect(new Set(runIds).size).toBe(4);
      const events = await collectUntil(sub.stream, afterFinishes(4));
      sub.unsubscribe();
      const starts = events.filter((e) => e.type === 'start').map((e) => e.runId);
      expect(starts).toEqual(runIds);
      const requests = h.model.requests.slice(before);
      expect(requests.map((r) => userTurns(r.messages).at(-1))).toEqual(['m0', 'q1', 'q2', 'q3']);
      // Each queued run sees the whole conversation before it.
      expect(userTurns(requests[3].messages)).toEqual(['m0', 'q1', 'q2', 'q3']);
      const texts = textByRun(events);
      expect(runIds.map((id) => texts.get(id!))).toEqual(['reply to m0', 'reply to q1', 'reply to q2', 'reply to q3']);
    } finally {
      h.model.setResponder(undefined);
    }
  });

  it('queueMessage on an idle thread starts a run at once', async () => {
    const t = h.thread();
    const result = await h.client.agent('tester').queueMessage('hello', t);
    expect(result.action).toBe('wake');
  });

  it('accepts a retried send once (client-supplied ids are idempotency keys)', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const sub = agent.subscribeToThread(t);
    const before = h.model.requests.length;
    const first = await agent.sendMessage({ id: 'retry-me', contents: 'once' }, t);
    const again = await agent.sendMessage({ id: 'retry-me', contents: 'once' }, t);
    expect(again).toMatchObject({ action: first.action, runId: first.runId, signalId: 'retry-me', duplicate: true });
    expect(first.duplicate).toBeUndefined();
    const events = await collectUntil(sub.stream, (e) => e.type === 'finish');
    sub.unsubscribe();
    expect(events.filter((e) => e.type === 'data-user-message')).toHaveLength(1);
    const mine = h.model.requests.slice(before).filter((r) => userTurns(r.messages).includes('once'));
    expect(mine).toHaveLength(1);
    expect(userTurns(mine[0].messages)).toEqual(['once']);
  });

  it('starts exactly one execution when 20 callers race first messages to a new thread', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const sub = agent.subscribeToThread(t);
    const before = h.model.requests.length;
    // A slow first reply, so that most racers join the first run; how many runs it takes does not matter.
    h.model.enqueue({ text: ['slow', ' start'], firstChunkDelayMs: 200 });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => agent.sendMessage({ id: `race-${i}`, contents: `racer ${i}` }, t)),
    );
    for (const r of results) expect(['wake', 'deliver']).toContain(r.action);
    const wakes = results.filter((r) => r.action === 'wake');
    expect(wakes.length).toBeGreaterThanOrEqual(1);
    const events = await collectUntil(sub.stream, afterFinishes(wakes.length));
    sub.unsubscribe();
    // Every run was started by exactly one wake, and every input entered the conversation exactly once.
    expect(
      events
        .filter((e) => e.type === 'start')
        .map((e) => e.runId)
        .sort(),
    ).toEqual(wakes.map((w) => w.runId).sort());
    const echoed = events.filter((e) => e.type === 'data-user-message').map((e) => (e.payload as { id: string }).id);
    expect(echoed.sort()).toEqual(results.map((r) => r.signalId).sort());
    const lastRequest = h.model.requests.at(-1)!;
    const turns = userTurns(lastRequest.messages);
    for (let i = 0; i < 20; i++) expect(turns.filter((x) => x === `racer ${i}`)).toHaveLength(1);
    expect(h.model.requests.length).toBeGreaterThan(before);
    const executions = h.temporal.workflow.list({ query: `WorkflowId = '${threadKey(t.resourceId, t.threadId)}'` });
    let count = 0;
    for await (const _ of executions) count++;
    expect(count).toBe(1);
  });
});

describe('subscriptions', () => {
  it('gives two subscribers and a late one the same events, in order', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const a = agent.subscribeToThread(t);
    const b = agent.subscribeToThread(t);
    h.model.enqueue({ text: ['a', 'b', 'c', 'd', 'e', 'f'], chunkDelayMs: 150 });
    await agent.sendMessage('go', t);
    const aEvents = collectUntil(a.stream, (e) => e.type === 'finish');
    // Joins mid-run: it gets the active run from its start.
    const firstDelta = await collectUntil(agent.subscribeToThread(t).stream, (e) => e.type === 'text-delta');
    expect(firstDelta[0].type).toBe('start');
    const late = agent.subscribeToThread(t);
    expect(late.activeRunId()).toBeNull();
    const [aSeen, bSeen, lateSeen] = await Promise.all([
      aEvents,
      collectUntil(b.stream, (e) => e.type === 'finish'),
      collectUntil(late.stream, (e) => e.type === 'finish'),
    ]);
    for (const s of [a, b, late]) s.unsubscribe();
    expect(bSeen).toEqual(aSeen);
    expect(lateSeen).toEqual(aSeen);
  });

  it('resumes after Last-Event-ID with every later event exactly once', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const sub = agent.subscribeToThread(t);
    h.model.enqueue({ text: ['1', '2', '3', '4', '5', '6'], chunkDelayMs: 50 });
    await agent.sendMessage('count', t);
    const all = await collectUntil(sub.stream, (e) => e.type === 'finish');
    sub.unsubscribe();
    const cut = 3;
    const resumed = agent.subscribeToThread(t, { lastEventId: all[cut].id });
    const rest = await collectUntil(resumed.stream, (e) => e.type === 'finish');
    resumed.unsubscribe();
    expect(rest).toEqual(all.slice(cut + 1));
  });
});

describe('bad input', () => {
  it('drops an invalid raw Temporal signal, logs it, and leaves the thread working', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    await agent.sendMessage('set up', t);
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    await handle.signal(sendMessageSignal, { nonsense: true } as never);
    await handle.signal(sendMessageSignal, {
      id: 'bad-attr',
      agentId: 'tester',
      delivery: 'send',
      type: 'user',
      contents: 'x',
      attributes: { 'bad name': 1 },
    });
    const sub = agent.subscribeToThread(t);
    const ok = await agent.sendMessage('still fine', t);
    expect(['wake', 'deliver']).toContain(ok.action);
    await collectUntil(sub.stream, (e) => e.type === 'finish');
    sub.unsubscribe();
    const view = await handle.query(threadStateQuery);
    expect(view.messageCount).toBeGreaterThanOrEqual(3);
    const turns = h.model.requests.flatMap((r) => userTurns(r.messages));
    expect(turns).not.toContain('x');
  });

  it('rejects invalid input at ingress, naming the field, and creates no thread', async () => {
    const t = h.thread();
    await expect(
      h.client.agent('tester').sendMessage({ contents: 'x', attributes: { 'bad name': 1 } }, t),
    ).rejects.toThrow(/Invalid signal XML attribute name: bad name/);
    expect(await h.client.getThread(t)).toBeNull();
  });

  it('rejects an invalid update in the workflow validator, leaving the thread untouched', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    await agent.sendMessage('exists', t);
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    await expect(
      handle.executeUpdate(submitInputUpdate, {
        args: [{ id: 'u1', agentId: 'tester', delivery: 'send', type: 'bogus', contents: 'x' } as never],
      }),
    ).rejects.toThrow();
    const page = await h.client.getMessages(t);
    expect(page!.messages.map((m) => m.id)).not.toContain('u1');
    // The id was not remembered either: a valid input with it is accepted as new.
    const retry = await agent.sendMessage({ id: 'u1', contents: 'valid now' }, t);
    expect(retry.duplicate).toBeUndefined();
  });
});
