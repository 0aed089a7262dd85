/**
 * behaviour §2.2, §2.5, §6 and §8 over real HTTP: `POST /api/agents/:agentId/signals` (general and legacy types),
 * `/threads/abort` and `/threads/cancel-queued`, their validation, and a bad raw Temporal signal, on the real dev
 * server with the gateway served on loopback.
 */
import { summarizeAgents } from '../../agents/summary';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import type { InputResult, ThreadTarget } from '../../protocol/schemas';
import { sendSignalSignal } from '../../protocol/definitions';
import type { MessagesPage } from '../../protocol/views';
import { threadKey } from '../../protocol/ids';
import type { AbortResult, ThreadView } from '../../protocol/views';
import { startHarness, testAgent, userTurns, type Harness } from '../support/harness';
import { echoResponder, type ReceivedRequest, type ScriptedReply } from '../support/model-server';
import { openSse, type SseStream } from '../support/sse';

interface ErrorBody {
  error: { type: string; message: string };
}

let h: Harness;
let gateway: ServedGateway;
const releases: (() => void)[] = [];
beforeAll(async () => {
  h = await startHarness();
  gateway = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0 });
});
afterEach(() => {
  h.model.setResponder(undefined);
  for (const release of releases.splice(0)) release();
});
afterAll(async () => {
  await gateway?.close();
  await h?.close();
});

async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${gateway.url}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}
const post = <T = InputResult>(path: string, body: unknown, headers?: Record<string, string>) =>
  request<T>('POST', path, body, headers);
const get = <T>(path: string) => request<T>('GET', path);

const threadPath = (t: ThreadTarget) =>
  `/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`;

/** POSTs a signal and expects 200; returns the result JSON. */
async function signal(t: ThreadTarget, body: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await post('/api/agents/tester/signals', { ...t, ...body }, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function message(t: ThreadTarget, text: string, route = 'send-message'): Promise<InputResult> {
  const res = await post(`/api/agents/tester/${route}`, { message: text, ...t });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const events = (t: ThreadTarget): Promise<SseStream> => openSse(`${gateway.url}${threadPath(t)}/events`);
const streams: SseStream[] = [];
afterEach(() => {
  for (const s of streams.splice(0)) s.close();
});
async function watch(t: ThreadTarget): Promise<SseStream> {
  const s = await events(t);
  streams.push(s);
  return s;
}

/**
 * Holds the model's next reply until `release()` (a hanging reply when `reply` has `hang`); later requests get an
 * echo. Resolves the held request once it arrives.
 */
function holdNextReply(reply: ScriptedReply = { text: 'first reply' }): {
  release(): void;
  request: () => Promise<ReceivedRequest>;
} {
  const index = h.model.requests.length;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  releases.push(release);
  h.model.setResponder((req) => (req.index === index ? released.then(() => reply) : echoResponder(req)));
  return { release, request: async () => (await h.model.waitForRequests(index + 1, 30_000))[index] };
}

/** A send answer's `signal` echo; `createdAt` is when the gateway received the send, so a resend has its own. */
const echoed = (answer: InputResult) => ({
  ...(answer as InputResult & { signal: object }).signal,
  createdAt: expect.any(String),
});

const ended = (runId: string | undefined) => (e: { type: string; runId?: string }) =>
  (e.type === 'finish' || e.type === 'abort') && e.runId === runId;

const notification = {
  type: 'notification',
  contents: 'CI failed on main',
  attributes: { source: 'github', pr: '123' },
};
const renderedNotification = '<notification source="github" pr="123">CI failed on main</notification>';

describe('POST /api/agents/:agentId/signals', () => {
  it('wakes an idle thread and answers the result as JSON; the model gets the wrapped signal', async () => {
    const t = h.thread();
    const sse = await watch(t);
    const before = h.model.requests.length;
    const res = await post('/api/agents/tester/signals', { signal: notification, ...t });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accepted: true,
      action: 'wake',
      runId: expect.any(String),
      signalId: expect.any(String),
      // Mastra's answer field: the signal as accepted.
      signal: { id: res.body.signalId, ...notification, createdAt: expect.any(String) },
    });

    const seen = await sse.untilEvent(ended(res.body.runId));
    expect(seen.slice(0, 3).map((e) => e.type)).toEqual(['start', 'data-signal', 'step-start']);
    expect(seen[1].payload).toMatchObject({
      id: res.body.signalId,
      type: 'notification',
      contents: notification.contents,
    });
    expect(seen.at(-1)!.type).toBe('finish');
    expect(userTurns(h.model.requests[before].messages)).toEqual([renderedNotification]);
  });

  it('applies ifActive behaviours and attributes while a run is active', async () => {
    const t = h.thread();
    const sse = await watch(t);
    const before = h.model.requests.length;
    const held = holdNextReply();
    const start = await message(t, 'start');
    await held.request();

    const ifActive = (behavior: string) => ({ behavior, attributes: { delivery: 'while-active' } });
    const delivered = await signal(t, { signal: notification, ifActive: ifActive('deliver') });
    const persisted = await signal(t, {
      signal: { type: 'reactive', contents: 'Noted for later.' },
      ifActive: ifActive('persist'),
    });
    const discarded = await signal(t, {
      signal: { type: 'reactive', contents: 'Drop me.' },
      ifActive: ifActive('discard'),
    });
    expect(delivered).toMatchObject({ accepted: true, action: 'deliver', runId: start.runId });
    // No run is involved: `runId` is the signal's id, as Mastra's server answers.
    expect(persisted).toMatchObject({ accepted: true, action: 'persist', runId: persisted.signalId });
    expect(discarded).toMatchObject({ accepted: true, action: 'discard', runId: discarded.signalId });
    held.release();

    const seen = await sse.untilEvent(ended(start.runId));
    const echoes = seen.filter((e) => e.type === 'data-signal').map((e) => e.payload as { id: string });
    expect(echoes.map((e) => e.id).sort()).toEqual([delivered.signalId, persisted.signalId].sort());
    expect(userTurns(h.model.requests[before + 1].messages)).toEqual([
      'start',
      '<system-reminder delivery="while-active">Noted for later.</system-reminder>',
      '<notification source="github" pr="123" delivery="while-active">CI failed on main</notification>',
    ]);
    expect(JSON.stringify(h.model.requests.slice(before))).not.toContain('Drop me.');
  });

  it('accepts the legacy types user-message and system-reminder, stored normalised', async () => {
    const t = h.thread();
    const sse = await watch(t);
    const before = h.model.requests.length;
    const idle = { ifIdle: { behavior: 'persist' } };
    const reminder = await signal(t, { signal: { type: 'system-reminder', contents: 'Lint is failing.' }, ...idle });
    const user = await signal(t, {
      signal: { type: 'user-message', contents: 'Sent by an old client.', attributes: { name: 'Ann' } },
      ...idle,
    });
    expect(reminder.action).toBe('persist');
    expect(user.action).toBe('persist');
    const page = await get<MessagesPage>(`${threadPath(t)}/messages`);
    expect(page.body.messages.map((m) => (m.role === 'user' ? [m.id, m.type] : []))).toEqual([
      [reminder.signalId, 'reactive'],
      [user.signalId, 'user'],
    ]);

    const go = await message(t, 'go');
    await sse.untilEvent(ended(go.runId));
    expect(userTurns(h.model.requests[before].messages)).toEqual([
      '<system-reminder>Lint is failing.</system-reminder>',
      '<user name="Ann">Sent by an old client.</user>',
      'go',
    ]);
  });

  it("takes the signal's id, or else the Idempotency-Key header, as the idempotency key", async () => {
    const t = h.thread();
    const id = `sig-${randomUUID()}`;
    const body = { signal: { ...notification, id }, ifIdle: { behavior: 'persist' } };
    const first = await signal(t, body, { 'Idempotency-Key': `other-${randomUUID()}` });
    expect(first).toMatchObject({ accepted: true, action: 'persist', signalId: id });
    expect(first.duplicate).toBeUndefined();
    expect(await signal(t, body)).toEqual({ ...first, signal: echoed(first), duplicate: true });

    const key = `key-${randomUUID()}`;
    const byHeader = { signal: { type: 'reactive', contents: 'Keyed by header.' }, ifIdle: { behavior: 'persist' } };
    const keyed = await signal(t, byHeader, { 'Idempotency-Key': key });
    expect(keyed).toMatchObject({ accepted: true, action: 'persist', signalId: key });
    expect(await signal(t, byHeader, { 'Idempotency-Key': key })).toEqual({
      ...keyed,
      signal: echoed(keyed),
      duplicate: true,
    });
    expect((await get<ThreadView>(threadPath(t))).body).toMatchObject({ messageCount: 2, runsCompleted: 0 });
  });

  describe('bad input', () => {
    /** Posts to an existing thread and to a new one: 400 with the message, and neither changes. */
    async function rejects(message: string | RegExp, makeBody: (t: ThreadTarget) => unknown, path = 'signals') {
      const existing = h.thread();
      await signal(existing, { signal: { type: 'reactive', contents: 'exists' }, ifIdle: { behavior: 'persist' } });
      const fresh = h.thread();
      const before = h.model.requests.length;
      for (const t of [existing, fresh]) {
        const res = await post<ErrorBody>(`/api/agents/tester/${path}`, makeBody(t));
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error.type).toBe('ValidationError');
        if (typeof message === 'string') expect(res.body.error.message).toContain(message);
        else expect(res.body.error.message).toMatch(message);
      }
      expect((await get<ThreadView>(threadPath(existing))).body.messageCount).toBe(1);
      expect((await get(threadPath(fresh))).status).toBe(404);
      expect(h.model.requests.length).toBe(before);
    }

    it('rejects an unknown type with the documented messages', async () => {
      await rejects(
        'Invalid signal type: shout. Use a supported signal type and set tagName for custom XML tags.',
        (t) => ({ ...t, signal: { type: 'shout', contents: 'x' } }),
      );
      // State signals have their own route.
      await rejects(/sendStateSignal/, (t) => ({ ...t, signal: { type: 'state', contents: 'x' } }));
    });

    it('rejects an invalid tag name and an invalid attribute name with the documented messages', async () => {
      await rejects('Invalid signal XML tag name: bad tag', (t) => ({
        ...t,
        signal: { type: 'reactive', tagName: 'bad tag', contents: 'x' },
      }));
      await rejects('Invalid signal XML tag name: 1st', (t) => ({
        ...t,
        signal: { type: 'reactive', tagName: '1st', contents: 'x' },
      }));
      const attribute = 'Invalid signal XML attribute name: bad name';
      await rejects(attribute, (t) => ({
        ...t,
        signal: { type: 'notification', contents: 'x', attributes: { 'bad name': 1 } },
      }));
      await rejects(attribute, (t) => ({
        ...t,
        signal: { type: 'notification', contents: 'x' },
        ifActive: { attributes: { 'bad name': 1 } },
      }));
      await rejects(attribute, (t) => ({
        ...t,
        signal: { type: 'notification', contents: 'x' },
        ifIdle: { attributes: { 'bad name': 1 } },
      }));
    });

    it('rejects a missing signal, a bad behaviour and a missing threadId, naming the field', async () => {
      await rejects(/signal/, (t) => ({ ...t }));
      await rejects(/ifActive\.behavior/, (t) => ({ ...t, signal: notification, ifActive: { behavior: 'wake' } }));
      await rejects(/ifIdle\.behavior/, (t) => ({ ...t, signal: notification, ifIdle: { behavior: 'interrupt' } }));
      await rejects(/threadId/, (t) => ({ resourceId: t.resourceId, signal: notification }));
    });
  });
});

describe('POST /api/agents/:agentId/threads/abort', () => {
  it('stops the active run; answers aborted: false for an idle or unknown thread', async () => {
    const t = h.thread();
    const sse = await watch(t);
    const held = holdNextReply({ text: ['thinking '], hang: true });
    const start = await message(t, 'start');
    const hanging = await held.request();
    const queued = await message(t, 'queued one', 'queue-message');
    expect(queued.action).toBe('queued');

    const res = await post<AbortResult>('/api/agents/tester/threads/abort', { ...t });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ aborted: true, runId: start.runId, clearedSignalIds: [] });
    held.release();
    await hanging.closed;
    // The queued message runs next.
    const seen = await sse.untilEvent(ended(queued.runId));
    expect(
      seen.filter((e) => e.runId === start.runId && ['abort', 'finish'].includes(e.type)).map((e) => e.type),
    ).toEqual(['abort']);
    expect(seen.at(-1)).toMatchObject({ type: 'finish', runId: queued.runId });

    const idle = await post<AbortResult>('/api/agents/tester/threads/abort', { ...t, clearPendingSignals: true });
    expect(idle).toEqual({ status: 200, body: { aborted: false, clearedSignalIds: [] } });
    const unknown = await post<AbortResult>('/api/agents/tester/threads/abort', h.thread());
    expect(unknown).toEqual({ status: 200, body: { aborted: false, clearedSignalIds: [] } });
  });

  it('drops the queue with clearPendingSignals', async () => {
    const t = h.thread();
    const sse = await watch(t);
    const before = h.model.requests.length;
    const held = holdNextReply();
    const start = await message(t, 'start');
    await held.request();
    const queued = await message(t, 'never runs', 'queue-message');

    const res = await post<AbortResult>('/api/agents/tester/threads/abort', { ...t, clearPendingSignals: true });
    expect(res.body).toEqual({ aborted: true, runId: start.runId, clearedSignalIds: [queued.signalId] });
    held.release();
    await sse.untilEvent(ended(start.runId));
    expect((await get<ThreadView>(threadPath(t))).body).toMatchObject({ status: 'idle', queue: [] });
    const next = await message(t, 'next');
    await sse.untilEvent(ended(next.runId));
    expect(h.model.requests.slice(before).map((r) => userTurns(r.messages).at(-1))).toEqual(['start', 'next']);
  });

  it('validates its body, naming the field', async () => {
    const t = h.thread();
    for (const [body, field] of [
      [{ resourceId: t.resourceId }, /threadId/],
      [{ ...t, threadId: '' }, /threadId: must not be empty/],
      [{ ...t, clearPendingSignals: 'yes' }, /clearPendingSignals/],
    ] as const) {
      const res = await post<ErrorBody>('/api/agents/tester/threads/abort', body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toEqual({ type: 'ValidationError', message: expect.stringMatching(field) });
    }
    const unknownAgent = await post<ErrorBody>('/api/agents/nobody/threads/abort', t);
    expect(unknownAgent.status).toBe(404);
  });
});

describe('POST /api/agents/:agentId/threads/cancel-queued', () => {
  it('removes the named queued messages and answers the ids removed', async () => {
    const t = h.thread();
    const sse = await watch(t);
    const before = h.model.requests.length;
    const held = holdNextReply();
    const start = await message(t, 'm0');
    await held.request();
    const q1 = await message(t, 'q1', 'queue-message');
    const q2 = await message(t, 'q2', 'queue-message');

    const res = await post<{ cancelledSignalIds: string[] }>('/api/agents/tester/threads/cancel-queued', {
      ...t,
      signalIds: [q1.signalId, start.signalId, 'no-such-id'],
    });
    expect(res).toEqual({ status: 200, body: { cancelledSignalIds: [q1.signalId] } });
    held.release();
    await sse.untilEvent(ended(q2.runId));
    expect(h.model.requests.slice(before).map((r) => userTurns(r.messages).at(-1))).toEqual(['m0', 'q2']);
    const unknown = await post('/api/agents/tester/threads/cancel-queued', { ...h.thread(), signalIds: ['x'] });
    expect(unknown).toEqual({ status: 200, body: { cancelledSignalIds: [] } });
  });

  it('validates its body, naming the field', async () => {
    const t = h.thread();
    for (const body of [{ ...t }, { ...t, signalIds: 'q1' }, { ...t, signalIds: [] }, { ...t, signalIds: [''] }]) {
      const res = await post<ErrorBody>('/api/agents/tester/threads/cancel-queued', body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toEqual({ type: 'ValidationError', message: expect.stringContaining('signalIds') });
    }
    const noThread = await post<ErrorBody>('/api/agents/tester/threads/cancel-queued', { signalIds: ['x'] });
    expect(noThread.status).toBe(400);
    expect(noThread.body.error.message).toMatch(/resourceId/);
  });
});

describe('Temporal-native sendSignal', () => {
  it('drops a raw signal with an invalid payload; the thread keeps working', async () => {
    const t = h.thread();
    const sse = await watch(t);
    const before = h.model.requests.length;
    await signal(t, { signal: { type: 'reactive', contents: 'set up' }, ifIdle: { behavior: 'persist' } });
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    const valid = { agentId: 'tester', delivery: 'send', contents: 'x' } as const;
    const bad = [
      { ...valid, id: 'raw-type', type: 'shout' },
      { ...valid, id: 'raw-tag', type: 'reactive', tagName: 'bad tag' },
      { ...valid, id: 'raw-attr', type: 'notification', attributes: { 'bad name': 1 } },
      { ...valid, id: 'raw-extra', type: 'reactive', surprise: true },
      { id: 'raw-no-agent', delivery: 'send', type: 'reactive', contents: 'x' },
    ];
    for (const payload of bad) await handle.signal(sendSignalSignal, payload as never);
    await handle.signal(sendSignalSignal, { ...valid, id: 'raw-ok', type: 'notification', contents: 'raw and valid' });

    // The signals are in history before this send, so the thread handled them before it.
    const go = await message(t, 'go');
    await sse.untilEvent(ended(go.runId));
    const page = await get<MessagesPage>(`${threadPath(t)}/messages`);
    const ids = page.body.messages.map((m) => m.id);
    for (const payload of bad) expect(ids).not.toContain(payload.id);
    expect(ids).toContain('raw-ok');
    const turns = h.model.requests.slice(before).flatMap((r) => userTurns(r.messages));
    expect(turns).toContain('<notification>raw and valid</notification>');
    // None of the dropped payloads (all with contents "x") reached the model.
    expect(turns.filter((turn) => /(^|>)x(<|$)/.test(turn))).toEqual([]);
    expect((await get<ThreadView>(threadPath(t))).body).toMatchObject({ status: 'idle' });
  });
});
