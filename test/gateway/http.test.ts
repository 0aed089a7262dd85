/**
 * behaviour §2.1, §5, §6 and §8 over real HTTP: the gateway served on loopback, driven with `fetch`, on the real dev
 * server. Sends and their results, idempotency keys, SSE streams and resume, thread state, and bad input.
 *
 * Long on purpose: one gateway and one harness for every route's cases; split, each part would start its own.
 */
import type { AgentSummary } from '../../protocol/api';
import { summarizeAgents } from '../../agents/summary';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBus } from '../../bus/memory';
import type { BusItem, EventBus, SubscribeFrom } from '../../bus/types';
import type { EventDraft, ThreadEvent } from '../../protocol/events';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import type { InputResult, ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import type { MessagesPage } from '../../protocol/views';
import type { ThreadView } from '../../protocol/views';
import {
  afterFinishes,
  startHarness,
  testAgent,
  textByRun,
  userTurns,
  wakeEventTypes,
  type Harness,
} from '../support/harness';
import { echoResponder, type ScriptedReply } from '../support/model-server';
import { openSse, sseEvents, type SseStream } from '../support/sse';

/**
 * The harness's bus, counting the subscriptions that are still open per thread, so a test can see the gateway end
 * one when its client goes away; `endSubscriptions` ends them from the bus's side, as a closing bus does.
 */
class WatchedBus implements EventBus {
  private readonly open = new Map<string, number>();
  private readonly listeners = new Set<() => void>();
  private readonly enders = new Map<string, Set<AbortController>>();

  constructor(private readonly inner: EventBus) {}

  publish(key: string, events: EventDraft[]): Promise<ThreadEvent[]> {
    return this.inner.publish(key, events);
  }

  announceAgents(agents: readonly AgentSummary[]): Promise<void> {
    return this.inner.announceAgents(agents);
  }

  agents(): Promise<AgentSummary[]> {
    return this.inner.agents();
  }

  archive: EventBus['archive'] = (key, records) => this.inner.archive(key, records);
  archived: EventBus['archived'] = (key, page) => this.inner.archived(key, page);
  sendNotice: EventBus['sendNotice'] = (notice) => this.inner.sendNotice(notice);
  onNotice: EventBus['onNotice'] = (listener) => this.inner.onNotice(listener);

  /** Ends every open subscription to `key` as if the bus had closed: their streams end normally. */
  endSubscriptions(key: string): void {
    for (const ender of this.enders.get(key) ?? []) ender.abort();
  }

  subscribe(key: string, from: SubscribeFrom, signal?: AbortSignal): AsyncIterable<BusItem> {
    const ender = new AbortController();
    const enders = this.enders.get(key) ?? new Set<AbortController>();
    this.enders.set(key, enders.add(ender));
    const items = this.inner.subscribe(key, from, signal ? AbortSignal.any([signal, ender.signal]) : ender.signal);
    this.count(key, +1);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      enders.delete(ender);
      this.count(key, -1);
    };
    signal?.addEventListener('abort', end, { once: true });
    return (async function* () {
      try {
        yield* items;
      } finally {
        end();
      }
    })();
  }

  openSubscriptions(key: string): number {
    return this.open.get(key) ?? 0;
  }

  /** Resolves once `condition()` holds (checked on every subscribe and unsubscribe); fails after `timeoutMs`. */
  waitFor(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.listeners.add(check);
      check();
    });
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private count(key: string, delta: number): void {
    this.open.set(key, this.openSubscriptions(key) + delta);
    for (const listener of this.listeners) listener();
  }
}

interface ErrorBody {
  error: { type: string; message: string };
}

let h: Harness;
let bus: WatchedBus;
let gateway: ServedGateway;
beforeAll(async () => {
  bus = new WatchedBus(new MemoryBus());
  h = await startHarness({ bus });
  gateway = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0, keepAliveMs: 200 });
});
afterEach(() => {
  h.model.setResponder(undefined);
});
afterAll(async () => {
  await gateway?.close();
  await h?.close();
  await bus?.close();
});

async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T; contentType: string }> {
  const res = await fetch(`${gateway.url}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T, contentType: res.headers.get('content-type') ?? '' };
}

const post = <T = InputResult>(path: string, body: unknown, headers?: Record<string, string>) =>
  request<T>('POST', path, body, headers);
const get = <T>(path: string) => request<T>('GET', path);

const threadPath = (t: ThreadTarget) =>
  `/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`;

async function send(t: ThreadTarget, message: unknown, extra: Record<string, unknown> = {}): Promise<InputResult> {
  const res = await post('/api/agents/tester/send-message', { message, ...t, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const events = (t: ThreadTarget, headers: Record<string, string> = {}): Promise<SseStream> =>
  openSse(`${gateway.url}${threadPath(t)}/events`, { headers });

/**
 * Holds the model's next reply until `release()`: its run is surely still active while the test sends more, however
 * fast or slow the machine. Later requests get an echo.
 */
function holdNextReply(reply: ScriptedReply): { release(): void } {
  const index = h.model.requests.length;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  h.model.setResponder((req) => (req.index === index ? released.then(() => reply) : echoResponder(req)));
  return { release };
}

/** A send answer's `signal` echo; `createdAt` is when the gateway received the send, so a resend has its own. */
const echoed = (answer: InputResult) => ({
  ...(answer as InputResult & { signal: object }).signal,
  createdAt: expect.any(String),
});

async function messageCount(t: ThreadTarget): Promise<number | null> {
  const res = await get<ThreadView>(threadPath(t));
  return res.status === 404 ? null : res.body.messageCount;
}

describe('sending messages', () => {
  it('wakes an idle thread, then delivers a second send into the run while it streams', async () => {
    const t = h.thread();
    const sse = await events(t);
    const before = h.model.requests.length;
    const held = holdNextReply({ text: ['one ', 'two ', 'three'] });

    const first = await post('/api/agents/tester/send-message', { message: 'first', ...t });
    expect(first.status).toBe(200);
    expect(first.contentType).toMatch(/^application\/json/);
    expect(first.body).toEqual({
      accepted: true,
      action: 'wake',
      runId: expect.any(String),
      signalId: expect.any(String),
      // Mastra's answer field: the input as accepted.
      signal: { id: first.body.signalId, type: 'user', contents: 'first', createdAt: expect.any(String) },
    });

    await h.model.waitForRequests(before + 1, 30_000);
    const attributes = { name: 'Jane', sentFrom: 'slack' };
    const second = await send(t, { contents: 'second', attributes });
    expect(second).toEqual({
      accepted: true,
      action: 'deliver',
      runId: first.body.runId,
      signalId: expect.any(String),
      signal: { id: second.signalId, type: 'user', contents: 'second', attributes, createdAt: expect.any(String) },
    });
    expect(second.signalId).not.toBe(first.body.signalId);
    held.release();

    const seen = await sse.untilEvent((e) => e.type === 'finish');
    sse.close();
    expect(new Set(seen.map((e) => e.runId))).toEqual(new Set([first.body.runId]));
    const echoed = seen.filter((e) => e.type === 'data-user-message').map((e) => (e.payload as { id: string }).id);
    expect(echoed).toEqual([first.body.signalId, second.signalId]);
    const requests = h.model.requests.slice(before);
    expect(requests).toHaveLength(2);
    expect(userTurns(requests[1].messages)).toEqual(['first', '<user name="Jane" sentFrom="slack">second</user>']);
    expect(textByRun(seen).get(first.body.runId!)).toBe(
      'one two threeEcho: <user name="Jane" sentFrom="slack">second</user>',
    );
  });

  it('queues a /queue-message behind the active run, and the thread view shows it', async () => {
    const t = h.thread();
    const sse = await events(t);
    const before = h.model.requests.length;
    const held = holdNextReply({ text: 'first reply' });
    const first = await send(t, 'm0');
    await h.model.waitForRequests(before + 1, 30_000);

    const queued = await post('/api/agents/tester/queue-message', { message: 'q1', ...t });
    expect(queued.status).toBe(200);
    expect(queued.body).toMatchObject({
      accepted: true,
      action: 'queued',
      runId: expect.any(String),
      signalId: expect.any(String),
    });
    expect(queued.body.runId).not.toBe(first.runId);

    const active = await get<ThreadView>(threadPath(t));
    expect(active.status).toBe(200);
    expect(active.body).toMatchObject({
      resourceId: t.resourceId,
      threadId: t.threadId,
      status: 'active',
      activeRun: { runId: first.runId, agentId: 'tester' },
      queue: [{ runId: queued.body.runId, agentId: 'tester', inputIds: [queued.body.signalId] }],
    });
    held.release();

    const seen = await sse.untilEvent(afterFinishes(2));
    sse.close();
    expect(seen.filter((e) => e.type === 'start').map((e) => e.runId)).toEqual([first.runId, queued.body.runId]);
    expect(h.model.requests.slice(before).map((r) => userTurns(r.messages).at(-1))).toEqual(['m0', 'q1']);

    const idle = await get<ThreadView>(threadPath(t));
    // toMatchObject: the view also carries the inbox counts (behaviour §6), which this test does not exercise.
    expect(idle.body).toMatchObject({
      resourceId: t.resourceId,
      threadId: t.threadId,
      status: 'idle',
      activeRun: null,
      queue: [],
      messageCount: 4,
      runsCompleted: 2,
      lanes: [],
    });
  });

  it('starts a run at once for a /queue-message to an idle thread', async () => {
    const t = h.thread();
    const sse = await events(t);
    const res = await post('/api/agents/tester/queue-message', { message: 'alone', ...t });
    expect(res.body).toMatchObject({ accepted: true, action: 'wake', runId: expect.any(String) });
    const seen = await sse.untilEvent((e) => e.type === 'finish');
    sse.close();
    expect(textByRun(seen).get(res.body.runId!)).toBe('Echo: alone');
  });

  it('passes ifIdle and ifActive (behaviour, attributes, stream options) through to the thread', async () => {
    const t = h.thread();
    const sse = await events(t);
    const before = h.model.requests.length;

    // No run is involved: `runId` is the signal's id, as Mastra's server answers.
    const persisted = await send(t, 'background note', { ifIdle: { behavior: 'persist' } });
    expect(persisted).toMatchObject({ accepted: true, action: 'persist', runId: persisted.signalId });
    const discarded = await send(t, 'nobody hears this', { ifIdle: { behavior: 'discard' } });
    expect(discarded).toMatchObject({ accepted: true, action: 'discard', runId: discarded.signalId });
    expect((await get<ThreadView>(threadPath(t))).body).toMatchObject({
      status: 'idle',
      messageCount: 1,
      runsCompleted: 0,
    });
    expect(h.model.requests.length).toBe(before);

    const held = holdNextReply({ text: 'first reply' });
    const woke = await send(
      t,
      { contents: 'hello', attributes: { name: 'Jane' } },
      {
        ifIdle: { attributes: { delivery: 'while-idle' }, streamOptions: { modelSettings: { temperature: 0.25 } } },
        ifActive: { attributes: { delivery: 'while-active' } },
      },
    );
    expect(woke.action).toBe('wake');
    await h.model.waitForRequests(before + 1, 30_000);

    const dropped = await send(t, 'drop me', { ifActive: { behavior: 'discard' } });
    expect(dropped).toMatchObject({ accepted: true, action: 'discard', runId: dropped.signalId });
    const kept = await send(t, 'for the record', { ifActive: { behavior: 'persist' } });
    expect(kept).toMatchObject({ accepted: true, action: 'persist', runId: kept.signalId });
    const joined = await send(
      t,
      { contents: 'join', attributes: { name: 'Jane' } },
      { ifActive: { behavior: 'deliver', attributes: { delivery: 'while-active' } }, ifIdle: { behavior: 'discard' } },
    );
    expect(joined).toMatchObject({ action: 'deliver', runId: woke.runId });
    held.release();

    await sse.untilEvent((e) => e.type === 'finish' && e.runId === woke.runId);
    sse.close();
    const [wakeRequest, joinRequest] = h.model.requests.slice(before);
    expect(wakeRequest.body.temperature).toBe(0.25);
    expect(userTurns(wakeRequest.messages)).toEqual([
      'background note',
      '<user name="Jane" delivery="while-idle">hello</user>',
    ]);
    expect(userTurns(joinRequest.messages)).toEqual([
      'background note',
      '<user name="Jane" delivery="while-idle">hello</user>',
      'for the record',
      '<user name="Jane" delivery="while-active">join</user>',
    ]);
  });
});

describe('idempotency', () => {
  it('accepts a retried send with the same Idempotency-Key header once', async () => {
    const t = h.thread();
    const sse = await events(t);
    const key = `key-${randomUUID()}`;
    const headers = { 'Idempotency-Key': key };
    const first = await post('/api/agents/tester/send-message', { message: 'once', ...t }, headers);
    const again = await post('/api/agents/tester/send-message', { message: 'once', ...t }, headers);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ accepted: true, action: 'wake', runId: expect.any(String), signalId: key });
    expect(first.body.duplicate).toBeUndefined();
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, signal: echoed(first.body), duplicate: true });

    const seen = await sse.untilEvent((e) => e.type === 'finish');
    sse.close();
    expect(seen.filter((e) => e.type === 'data-user-message')).toHaveLength(1);
    const page = await get<MessagesPage>(`${threadPath(t)}/messages`);
    expect(page.body.messages.filter((m) => m.role === 'user').map((m) => m.id)).toEqual([key]);
  });

  it("takes the message's id as the key, before the header, also on /queue-message", async () => {
    const t = h.thread();
    const sse = await events(t);
    const id = `msg-${randomUUID()}`;
    const body = { message: { id, contents: 'by id' }, ...t };
    const first = await post('/api/agents/tester/send-message', body, { 'Idempotency-Key': `other-${randomUUID()}` });
    expect(first.body).toMatchObject({ action: 'wake', signalId: id });
    expect(first.body.duplicate).toBeUndefined();
    const again = await post('/api/agents/tester/queue-message', body);
    expect(again.body).toEqual({ ...first.body, signal: echoed(first.body), duplicate: true });
    await sse.untilEvent((e) => e.type === 'finish');
    sse.close();
    expect((await get<ThreadView>(threadPath(t))).body).toMatchObject({ messageCount: 2, runsCompleted: 1 });
  });
});

describe('event stream (SSE)', () => {
  it('streams a run from start to finish, each message carrying its event id', async () => {
    const t = h.thread();
    const sse = await events(t);
    expect(sse.response.status).toBe(200);
    expect(sse.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    h.model.enqueue({ text: ['Hello', ' there'] });
    const result = await send(t, 'Hi');

    const messages = await sse.until((m) => JSON.parse(m.data).type === 'finish');
    sse.close();
    const seen = sseEvents(messages);
    expect(seen.map((e) => e.type)).toEqual(wakeEventTypes(2));
    expect(messages.map((m) => m.id)).toEqual(seen.map((e) => e.id));
    const ids = seen.map((e) => Number(e.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
    expect(new Set(seen.map((e) => e.runId))).toEqual(new Set([result.runId]));
    expect(new Set(seen.map((e) => e.threadKey))).toEqual(new Set([threadKey(t.resourceId, t.threadId)]));
    expect(textByRun(seen).get(result.runId!)).toBe('Hello there');
  });

  it('resumes after a disconnect with Last-Event-ID: every later event exactly once', async () => {
    const t = h.thread();
    const whole = await events(t);
    const first = await events(t);
    const held = holdNextReply({ text: ['1', '2', '3', '4', '5', '6'] });
    await send(t, 'count');

    // Cut right after `start`: the resumed stream replays what followed it, then continues live.
    const beforeCut = await first.untilEvent((e) => e.type === 'start');
    first.close();
    const resumed = await events(t, { 'Last-Event-ID': beforeCut.at(-1)!.id });
    const replayed = await resumed.untilEvent((e) => e.type === 'step-start');
    held.release();
    const live = await resumed.untilEvent((e) => e.type === 'finish');
    resumed.close();
    const afterCut = [...replayed, ...live];
    const all = await whole.untilEvent((e) => e.type === 'finish');
    whole.close();

    expect([...beforeCut, ...afterCut]).toEqual(all);
    expect(replayed.map((e) => e.type)).toEqual(['data-user-message', 'step-start']);

    // Resuming after the run ended replays the rest of it, then waits at the live edge.
    const cut = 3;
    const late = await events(t, { 'Last-Event-ID': all[cut].id });
    expect(await late.untilEvent((e) => e.type === 'finish')).toEqual(all.slice(cut + 1));
    late.close();
  });

  it('streams the same events on POST /api/agents/:agentId/threads/subscribe', async () => {
    const t = h.thread();
    const viaGet = await events(t);
    const viaPost = await openSse(`${gateway.url}/api/agents/tester/threads/subscribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(t),
    });
    expect(viaPost.response.status).toBe(200);
    expect(viaPost.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    h.model.enqueue({ text: ['a', 'b', 'c'], chunkDelayMs: 50 });
    await send(t, 'both');

    const [a, b] = await Promise.all([
      viaGet.until((m) => JSON.parse(m.data).type === 'finish'),
      viaPost.until((m) => JSON.parse(m.data).type === 'finish'),
    ]);
    viaGet.close();
    viaPost.close();
    // The same events. Only the EventSource route has `id:` lines; the POST route is framed as Mastra's client reads
    // it (one `data:` line per block, after a `: connected` comment), the id inside each event's JSON.
    expect(b.map((m) => m.data)).toEqual(a.map((m) => m.data));
    expect(a.map((m) => m.id)).toEqual(sseEvents(a).map((e) => e.id));
    expect(b.map((m) => m.id)).toEqual(b.map(() => undefined));
    expect(viaPost.comments[0]).toBe('connected');
    expect(viaGet.comments).not.toContain('connected');
    expect(sseEvents(b).map((e) => e.type)).toContain('text-delta');

    // It resumes too, from the body's lastEventId.
    const resumed = await openSse(`${gateway.url}/api/agents/tester/threads/subscribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...t, lastEventId: sseEvents(b)[4].id }),
    });
    const rest = await resumed.until((m) => JSON.parse(m.data).type === 'finish');
    resumed.close();
    expect(rest.map((m) => m.data)).toEqual(b.slice(5).map((m) => m.data));
  });

  it('ends a POST subscription the gateway ends with data: [DONE], and an EventSource stream without it', async () => {
    const t = h.thread();
    const key = threadKey(t.resourceId, t.threadId);
    const viaGet = await events(t);
    const viaPost = await openSse(`${gateway.url}/api/agents/tester/threads/subscribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(t),
    });
    await send(t, 'before the end');
    await viaPost.until((m) => JSON.parse(m.data).type === 'finish');
    await viaGet.until((m) => JSON.parse(m.data).type === 'finish');
    bus.endSubscriptions(key);
    await viaPost.waitFor(() => viaPost.ended, 15_000, 'the POST stream to end');
    await viaGet.waitFor(() => viaGet.ended, 15_000, 'the GET stream to end');
    expect(viaPost.messages.at(-1)!.data).toBe('[DONE]');
    expect(viaGet.messages.at(-1)!.data).not.toBe('[DONE]');
    expect(JSON.parse(viaGet.messages.at(-1)!.data)).toMatchObject({ type: 'finish' });
  });

  it('keeps threads whose ids contain ":" and "/" apart (URL-encoded in the path)', async () => {
    const u = randomUUID();
    // Joined naively with ":" a and b would be one thread; joined with "/" a and c would.
    const threads: Record<string, ThreadTarget> = {
      a: { resourceId: `${u}:x`, threadId: 'y/z' },
      b: { resourceId: u, threadId: 'x:y/z' },
      c: { resourceId: `${u}:x/y`, threadId: 'z' },
    };
    const streams = Object.fromEntries(
      await Promise.all(Object.entries(threads).map(async ([name, t]) => [name, await events(t)] as const)),
    );
    const results = Object.fromEntries(
      await Promise.all(
        Object.entries(threads).map(async ([name, t]) => [name, await send(t, `for ${name}`)] as const),
      ),
    );
    for (const [name, t] of Object.entries(threads)) {
      expect(results[name].action).toBe('wake');
      const seen = await streams[name].untilEvent((e) => e.type === 'finish');
      streams[name].close();
      const echoed = seen.filter((e) => e.type === 'data-user-message');
      expect(echoed.map((e) => (e.payload as { contents: unknown }).contents)).toEqual([`for ${name}`]);
      expect(textByRun(seen).get(results[name].runId!)).toBe(`Echo: for ${name}`);
      const view = await get<ThreadView>(threadPath(t));
      expect(view.body).toMatchObject({
        resourceId: t.resourceId,
        threadId: t.threadId,
        messageCount: 2,
        runsCompleted: 1,
      });
      const page = await get<MessagesPage>(`${threadPath(t)}/messages`);
      expect(page.body.messages.map((m) => m.id)).toContain(results[name].signalId);
    }
    expect(new Set(Object.values(threads).map((t) => threadKey(t.resourceId, t.threadId))).size).toBe(3);
  });

  it('sends ": keep-alive" comments on an idle stream, and no messages', async () => {
    const t = h.thread();
    const sse = await events(t);
    // The default interval is 25 s: three comments within this bound prove the gateway's keepAliveMs is used.
    await sse.waitFor(() => sse.comments.filter((c) => c === 'keep-alive').length >= 3, 20_000, 'three keep-alives');
    expect(sse.messages).toEqual([]);
    expect(new Set(sse.comments)).toEqual(new Set(['keep-alive']));
    expect(sse.ended).toBe(false);
    sse.close();
  });
});

describe('thread state and messages', () => {
  it('pages messages with limit and before, newest last', async () => {
    const t = h.thread();
    const sse = await events(t);
    await send(t, 'one');
    await sse.untilEvent((e) => e.type === 'finish');
    await send(t, 'two');
    await sse.untilEvent((e) => e.type === 'finish');
    sse.close();

    const all = await get<MessagesPage>(`${threadPath(t)}/messages`);
    expect(all.status).toBe(200);
    expect(all.body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(all.body.hasMore).toBe(false);
    const newest = await get<MessagesPage>(`${threadPath(t)}/messages?limit=2`);
    expect(newest.body).toEqual({ messages: all.body.messages.slice(2), hasMore: true });
    const older = await get<MessagesPage>(
      `${threadPath(t)}/messages?limit=2&before=${encodeURIComponent(newest.body.messages[0].id)}`,
    );
    expect(older.body).toEqual({ messages: all.body.messages.slice(0, 2), hasMore: false });
  });

  it('answers 404 with a message for a thread that does not exist', async () => {
    const t = h.thread();
    for (const path of [threadPath(t), `${threadPath(t)}/messages`]) {
      const res = await get<ErrorBody>(path);
      expect(res.status).toBe(404);
      expect(res.body.error).toEqual({ type: 'NotFoundError', message: expect.stringContaining(t.threadId) });
    }
  });

  it('rejects a limit that is not a whole number from 1 to 1000', async () => {
    const t = h.thread();
    await send(t, 'exists', { ifIdle: { behavior: 'persist' } });
    for (const limit of ['abc', '0', '1.5', '1001']) {
      const res = await get<ErrorBody>(`${threadPath(t)}/messages?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toEqual({ type: 'ValidationError', message: expect.stringContaining('limit') });
    }
  });

  it('lists the agents and answers /health', async () => {
    const agents = await get<Record<string, { id: string; instructions: string; modelId: string }>>('/api/agents');
    expect(agents.status).toBe(200);
    expect(Object.keys(agents.body)).toEqual(['tester']);
    expect(agents.body.tester).toMatchObject({ id: 'tester', instructions: testAgent.instructions });
    const health = await get('/health');
    expect(health).toMatchObject({ status: 200, body: { ok: true } });
  });
});

describe('bad input', () => {
  let existing: ThreadTarget;
  let count: number;
  beforeAll(async () => {
    existing = h.thread();
    const sse = await events(existing);
    await send(existing, 'set up');
    await sse.untilEvent((e) => e.type === 'finish');
    sse.close();
    count = (await messageCount(existing))!;
  });

  /** Sends a bad request to an existing and to a new thread; neither may change. */
  async function rejects(
    status: number,
    message: RegExp,
    makeBody: (t: ThreadTarget) => unknown,
    options: { path?: string; headers?: Record<string, string> } = {},
  ): Promise<void> {
    const requestsBefore = h.model.requests.length;
    const fresh = h.thread();
    for (const t of [existing, fresh]) {
      const res = await post<ErrorBody>(
        options.path ?? '/api/agents/tester/send-message',
        makeBody(t),
        options.headers,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.contentType).toMatch(/^application\/json/);
      expect(res.body.error.message).toMatch(message);
    }
    expect(await messageCount(existing)).toBe(count);
    expect(await messageCount(fresh)).toBeNull();
    expect(h.model.requests.length).toBe(requestsBefore);
  }

  it('rejects a body that is not JSON', async () => {
    await rejects(400, /must be JSON/, (t) => `{"message": "hi", "resourceId": "${t.resourceId}", "threadId": `);
  });

  it('rejects a body without threadId, or with an empty one, naming threadId', async () => {
    await rejects(400, /threadId/, (t) => ({ message: 'hi', resourceId: t.resourceId }));
    await rejects(400, /threadId: must not be empty/, (t) => ({
      message: 'hi',
      resourceId: t.resourceId,
      threadId: '',
    }));
  });

  it('rejects a body without a message', async () => {
    await rejects(400, /message/, (t) => ({ ...t }));
    await rejects(400, /message/, (t) => ({ ...t, message: 42 }));
  });

  it('rejects a notifications body that gives both notification and notifications, or neither', async () => {
    const valid = { source: 'github', kind: 'build', summary: 'green' };
    const path = { path: '/api/agents/tester/notifications' };
    await rejects(400, /notification: Required: give notification \(one\) or notifications \(a list\)/, (t) => t, path);
    await rejects(
      400,
      /notification: give notification or notifications, not both/,
      (t) => ({
        ...t,
        notifications: [valid],
        notification: 7,
      }),
      path,
    );
    await rejects(400, /not both/, (t) => ({ ...t, notifications: [valid], notification: valid }), path);
  });

  it('rejects bad attribute names, in the message and in ifActive / ifIdle', async () => {
    const named = /Invalid signal XML attribute name: bad name/;
    await rejects(400, named, (t) => ({ ...t, message: { contents: 'x', attributes: { 'bad name': 1 } } }));
    await rejects(400, named, (t) => ({ ...t, message: 'x', ifActive: { attributes: { 'bad name': 1 } } }));
    await rejects(400, named, (t) => ({ ...t, message: 'x', ifIdle: { attributes: { 'bad name': 1 } } }));
  });

  it('rejects an unknown ifIdle behaviour, naming it', async () => {
    await rejects(400, /ifIdle\.behavior/, (t) => ({ ...t, message: 'x', ifIdle: { behavior: 'explode' } }));
  });

  it('answers 404 for an unknown agent', async () => {
    await rejects(404, /Unknown agent "nobody"/, (t) => ({ ...t, message: 'hi' }), {
      path: '/api/agents/nobody/send-message',
    });
    const subscribe = await post<ErrorBody>('/api/agents/nobody/threads/subscribe', existing);
    expect(subscribe.status).toBe(404);
    expect(subscribe.body.error.type).toBe('NotFoundError');
  });

  it('answers 413 for a message over the 256 KiB ingress limit', async () => {
    const big = 'x'.repeat(256 * 1024);
    await rejects(413, /limit is 262144/, (t) => ({ ...t, message: big }));
    await rejects(413, /limit is 262144/, (t) => ({ ...t, message: big }), {
      path: '/api/agents/tester/queue-message',
    });
    // A body far over any limit is refused while it is read, before it is parsed.
    await rejects(413, /request body is over/, (t) => ({ ...t, message: 'y'.repeat(5 * 1024 * 1024) }));
  });

  it('bounds a chunked body (no Content-Length) while it is read: 413 over the bound, taken under it', async () => {
    // The size of a body with Content-Length is judged by the header (gateway/body-limit.ts); one sent in chunks is
    // counted as it arrives.
    const chunked = (body: unknown) =>
      fetch(`${gateway.url}/api/agents/tester/send-message`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        duplex: 'half',
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(JSON.stringify(body)));
            controller.close();
          },
        }),
      } as RequestInit);
    const fresh = h.thread();
    const over = await chunked({ ...fresh, message: 'y'.repeat(700 * 1024) });
    expect(over.status).toBe(413);
    expect(((await over.json()) as ErrorBody).error.message).toMatch(/request body is over/);
    expect(await messageCount(fresh)).toBeNull();
    const taken = await chunked({ ...fresh, message: 'hi' });
    expect(taken.status).toBe(200);
    expect(((await taken.json()) as InputResult).action).toBe('wake');
  });

  it('answers JSON 404 for an unknown route', async () => {
    for (const [method, path] of [
      ['GET', '/api/nope'],
      ['GET', '/api/agents/tester/send-message'],
      ['DELETE', threadPath(existing)],
    ]) {
      const res = await request<ErrorBody>(method, path);
      expect(res.status).toBe(404);
      expect(res.contentType).toMatch(/^application\/json/);
      expect(res.body.error).toEqual({ type: 'NotFoundError', message: `No route ${method} ${path}` });
    }
    expect(await messageCount(existing)).toBe(count);
  });

  it('rejects a Last-Event-ID the bus could not have issued, and opens no subscription', async () => {
    const key = threadKey(existing.resourceId, existing.threadId);
    const viaGet = await events(existing, { 'Last-Event-ID': 'not-an-id' });
    expect(viaGet.response.status).toBe(400);
    expect(((await viaGet.response.json()) as ErrorBody).error.message).toMatch(/Invalid Last-Event-ID: .*"not-an-id"/);
    const viaPost = await post<ErrorBody>('/api/agents/tester/threads/subscribe', { ...existing, lastEventId: 'x' });
    expect(viaPost.status).toBe(400);
    expect(viaPost.body.error.message).toMatch(/Invalid Last-Event-ID/);
    expect(bus.openSubscriptions(key)).toBe(0);
  });

  it('rejects a bad subscribe body before streaming', async () => {
    const res = await post<ErrorBody>('/api/agents/tester/threads/subscribe', { resourceId: existing.resourceId });
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/^application\/json/);
    expect(res.body.error.message).toMatch(/threadId/);
  });
});

describe('client disconnect', () => {
  it('ends the server-side subscription when the client goes away, idle or mid-run', async () => {
    const t = h.thread();
    const key = threadKey(t.resourceId, t.threadId);

    const idle = await events(t);
    expect(bus.openSubscriptions(key)).toBe(1);
    idle.close();
    await bus.waitFor(() => bus.openSubscriptions(key) === 0, 'the idle subscription to end');

    const stays = await events(t);
    const leaves = await events(t);
    expect(bus.openSubscriptions(key)).toBe(2);
    const held = holdNextReply({ text: ['a', 'b', 'c'] });
    const run = await send(t, 'go');
    await leaves.untilEvent((e) => e.type === 'step-start');
    leaves.close();
    await bus.waitFor(() => bus.openSubscriptions(key) === 1, 'the mid-run subscription to end');
    held.release();
    const seen = await stays.untilEvent((e) => e.type === 'finish');
    expect(textByRun(seen).get(run.runId!)).toBe('abc');
    stays.close();
    await bus.waitFor(() => bus.openSubscriptions(key) === 0, 'the last subscription to end');

    // The gateway still serves, and a new subscription sees the next run.
    expect((await get('/health')).status).toBe(200);
    const again = await events(t);
    const next = await send(t, 'again');
    const nextSeen = await again.untilEvent((e) => e.type === 'finish');
    again.close();
    expect(nextSeen[0]).toMatchObject({ type: 'start', runId: next.runId });
    expect(textByRun(nextSeen).get(next.runId!)).toBe('Echo: again');
  });
});
