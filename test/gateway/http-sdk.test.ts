/**
 * The HTTP client SDK (`http-client`) against a real gateway served on loopback, on the real dev server: every route
 * the gateway has, subscriptions read with `processDataStream` and `stream`, and resume across cut connections
 * (a loopback TCP proxy between the SDK and the gateway that the test cuts, refuses, or answers itself).
 *
 * Long on purpose: one gateway and one dev-server harness serve every route's test; split, each part would start its own.
 */
import { summarizeAgents } from '../../agents/summary';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, type AgentTool } from '../../agents/agent';
import type { ThreadEvent } from '../../protocol/events';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { toWireEvent } from '../../gateway/wire-event';
import {
  createHttpClient,
  isThreadlineHttpError,
  parseSse,
  type HttpThreadSubscription,
  type SseItem,
  type ThreadlineHttpClient,
  type ThreadlineHttpError,
} from '../../http-client';
import type { ThreadTarget } from '../../protocol/schemas';
import {
  afterFinishes,
  collectUntil,
  startHarness,
  testAgent,
  textByRun,
  userTurns,
  type Harness,
} from '../support/harness';
import { echoResponder, type ScriptedReply } from '../support/model-server';

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Tool calls that wait for the test: `entered(key)` resolves once the call runs, `release(key)` lets it return. */
class Gates {
  private readonly gates = new Map<string, { entered: Deferred; released: Deferred }>();

  private get(key: string) {
    let gate = this.gates.get(key);
    if (!gate) this.gates.set(key, (gate = { entered: deferred(), released: deferred() }));
    return gate;
  }

  async pass(key: string): Promise<void> {
    const gate = this.get(key);
    gate.entered.resolve();
    await gate.released.promise;
  }

  entered(key: string): Promise<void> {
    return this.get(key).entered.promise;
  }

  release(key: string): void {
    this.get(key).released.resolve();
  }
}

const gates = new Gates();
const tool = <I, O>(definition: AgentTool<I, O>): AgentTool<I, O> => definition;
/** An agent whose `pause` tool holds its run mid-way until the test releases it. */
const gatedAgent = defineAgent({
  id: 'gated',
  instructions: 'You pause when asked.',
  model: 'openai/test-model',
  tools: {
    pause: tool({
      description: 'Waits for the test.',
      inputSchema: z.object({ gate: z.string() }),
      execute: async ({ gate }) => {
        await gates.pass(gate);
        return 'resumed';
      },
    }),
  },
});

/** Resolves once `condition()` holds, checked whenever `notify()` runs; fails after `timeoutMs` naming `what`. */
class Waiters {
  private readonly waiters = new Set<() => void>();

  notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}

/** What an `onChunk` received, with a way to wait for more. */
class Seen extends Waiters {
  readonly events: ThreadEvent[] = [];
  readonly onChunk = (event: ThreadEvent): void => {
    this.events.push(event);
    this.notify();
  };

  count(type: string): number {
    return this.events.filter((e) => e.type === type).length;
  }

  untilCount(type: string, n: number): Promise<void> {
    return this.until(
      () => this.count(type) >= n,
      `${n} "${type}" events (saw ${this.events.map((e) => e.type).join(', ')})`,
    );
  }
}

type ProxyMode = 'pass' | 'refuse' | { status: number; body: unknown };

/**
 * A loopback TCP proxy in front of the gateway. `cut()` destroys every open connection (the server side of a drop);
 * `mode` decides what new requests get: passed through, the connection closed, or a canned HTTP answer. It counts
 * requests, not connections: Node's fetch may open a spare connection that never carries one.
 */
interface Proxy {
  url: string;
  mode: ProxyMode;
  /** Requests received so far (the first request of each connection). */
  readonly requests: number;
  /** Connections that carried a request and are still open. */
  readonly open: number;
  /** The `Last-Event-ID` header of each request (undefined when absent). */
  readonly lastEventIds: (string | undefined)[];
  cut(): void;
  until(condition: () => boolean, what: string): Promise<void>;
  close(): Promise<void>;
}

async function startProxy(targetPort: number): Promise<Proxy> {
  const sockets = new Set<Socket>();
  const active = new Set<Socket>();
  const waiters = new Waiters();
  const lastEventIds: (string | undefined)[] = [];
  let mode: ProxyMode = 'pass';
  const server = createServer((client) => {
    const upstream = netConnect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      if (active.delete(client)) waiters.notify();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
    client.once('data', (chunk: Buffer) => {
      const head = chunk.toString('latin1');
      lastEventIds.push(/^last-event-id: *(.*)$/im.exec(head)?.[1]?.trim());
      const now = mode;
      if (now === 'refuse') {
        end();
      } else if (typeof now === 'object') {
        upstream.destroy();
        const body = JSON.stringify(now.body);
        client.end(
          `HTTP/1.1 ${now.status} Canned\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
        );
      } else {
        active.add(client);
        upstream.write(chunk);
        client.pipe(upstream);
        upstream.pipe(client);
      }
      waiters.notify();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    set mode(next: ProxyMode) {
      mode = next;
    },
    get requests() {
      return lastEventIds.length;
    },
    get open() {
      return active.size;
    },
    lastEventIds,
    cut,
    until: (condition, what) => waiters.until(condition, what),
    close: () =>
      new Promise((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}

/** The events up to and including the `n`-th `finish` (a subscription may see more before it is closed). */
function upToFinish(events: ThreadEvent[], n = 1): ThreadEvent[] {
  let finishes = 0;
  const end = events.findIndex((e) => e.type === 'finish' && ++finishes === n);
  return end < 0 ? events : events.slice(0, end + 1);
}

let h: Harness;
let gateway: ServedGateway;
let proxy: Proxy;
/** Straight to the gateway: sends and reads. */
let sdk: ThreadlineHttpClient;
/** Through the proxy: subscriptions the test cuts. */
let viaProxy: ThreadlineHttpClient;
beforeAll(async () => {
  h = await startHarness({ agents: [testAgent, gatedAgent] });
  gateway = await serveGateway({
    client: h.client,
    agents: summarizeAgents([testAgent, gatedAgent]),
    port: 0,
    keepAliveMs: 200,
  });
  proxy = await startProxy(gateway.port);
  sdk = createHttpClient({ baseUrl: gateway.url });
  viaProxy = createHttpClient({ baseUrl: `${proxy.url}/` });
});
afterEach(() => {
  h.model.setResponder(undefined);
  proxy.mode = 'pass';
});
afterAll(async () => {
  await proxy?.close();
  await gateway?.close();
  await h?.close();
});

/** Holds the model's next reply until `release()`, so the run is surely active meanwhile. Later requests get an echo. */
function holdNextReply(reply: ScriptedReply): { release(): void } {
  const index = h.model.requests.length;
  const released = deferred();
  h.model.setResponder((req) => (req.index === index ? released.promise.then(() => reply) : echoResponder(req)));
  return { release: released.resolve };
}

/** Every event of the thread the bus holds, up to its `n`-th `finish`, as the gateway streams them. */
async function busEvents(t: ThreadTarget, finishes = 1): Promise<ThreadEvent[]> {
  const sub = h.client.subscribeToThread(t, { lastEventId: '0' });
  try {
    return (await collectUntil(sub.stream, afterFinishes(finishes))).map(toWireEvent);
  } finally {
    sub.unsubscribe();
  }
}

/** Reads a subscription in the background; `settled` tells whether processDataStream has resolved or rejected. */
function consume(
  sub: HttpThreadSubscription,
  reconnect: Parameters<HttpThreadSubscription['processDataStream']>[0]['reconnect'],
) {
  const seen = new Seen();
  const state = { settled: false };
  const done = sub.processDataStream({ onChunk: seen.onChunk, reconnect }).finally(() => {
    state.settled = true;
  });
  return { seen, done, state };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('Expected a rejection, got a result');
}

const fast = { delayMs: 10, maxDelayMs: 100 };

describe('sends and reads through the SDK', () => {
  it('wakes, delivers into the running loop, and the subscription sees start … finish', async () => {
    const t = h.thread();
    const agent = sdk.agent('tester');
    const sub = await agent.subscribeToThread(t);
    const { seen, done } = consume(sub, false);
    const before = h.model.requests.length;
    const held = holdNextReply({ text: ['one ', 'two'] });

    const first = await agent.sendMessage('first', t);
    expect(first).toMatchObject({
      accepted: true,
      action: 'wake',
      runId: expect.any(String),
      signalId: expect.any(String),
    });
    await expect(first.persisted).resolves.toBeUndefined();
    await h.model.waitForRequests(before + 1, 30_000);
    const second = await agent.sendMessage({ contents: 'second', attributes: { name: 'Jane' } }, t);
    expect(second).toMatchObject({ accepted: true, action: 'deliver', runId: first.runId });
    await seen.untilCount('start', 1);
    expect(sub.activeRunId()).toBe(first.runId);
    held.release();

    await seen.untilCount('finish', 1);
    expect(sub.activeRunId()).toBeNull();
    expect(sub.lastEventId()).toBe(seen.events.at(-1)!.id);
    sub.unsubscribe();
    await expect(done).resolves.toBeUndefined();

    const types = seen.events.map((e) => e.type);
    expect(types[0]).toBe('start');
    expect(types.at(-1)).toBe('finish');
    expect(
      seen.events.filter((e) => e.type === 'data-user-message').map((e) => (e.payload as { id: string }).id),
    ).toEqual([first.signalId, second.signalId]);
    expect(textByRun(seen.events).get(first.runId!)).toBe('one twoEcho: <user name="Jane">second</user>');
    expect(userTurns(h.model.requests[before + 1].messages)).toEqual(['first', '<user name="Jane">second</user>']);
  });

  it('queues behind the active run, cancels a queued message, and reads the thread and its messages', async () => {
    const t = h.thread();
    const agent = sdk.agent('tester');
    expect(await agent.getThread(t)).toBeNull();
    expect(await agent.getMessages(t)).toBeNull();
    const sub = await agent.subscribeToThread(t);
    const { seen, done } = consume(sub, false);
    const before = h.model.requests.length;
    const held = holdNextReply({ text: 'first reply' });

    const first = await agent.sendMessage('m0', t);
    await h.model.waitForRequests(before + 1, 30_000);
    const q1 = await agent.queueMessage('q1', t);
    const q2 = await agent.queueMessage('q2', t);
    expect(q1).toMatchObject({ accepted: true, action: 'queued', runId: expect.any(String) });
    expect(q2.action).toBe('queued');

    expect(await agent.cancelQueuedMessages({ ...t, signalIds: [q2.signalId, 'no-such-id'] })).toEqual({
      cancelledSignalIds: [q2.signalId],
    });
    expect(await agent.getThread(t)).toMatchObject({
      ...t,
      status: 'active',
      activeRun: { runId: first.runId, agentId: 'tester' },
      queue: [{ runId: q1.runId, agentId: 'tester', inputIds: [q1.signalId] }],
    });
    held.release();

    await seen.untilCount('finish', 2);
    sub.unsubscribe();
    await done;
    expect(seen.events.filter((e) => e.type === 'start').map((e) => e.runId)).toEqual([first.runId, q1.runId]);
    expect(h.model.requests.slice(before).map((r) => userTurns(r.messages).at(-1))).toEqual(['m0', 'q1']);

    const page = await agent.getMessages(t);
    expect(page).toMatchObject({ hasMore: false });
    expect(page!.messages).toHaveLength(4);
    const older = await agent.getMessages(t, { limit: 2, before: page!.messages[2].id });
    expect(older).toEqual({ messages: page!.messages.slice(0, 2), hasMore: false });
    expect(await agent.getThread(t)).toMatchObject({ status: 'idle', activeRun: null, queue: [], runsCompleted: 2 });
  });

  it('sends signals with their behaviours, and hideSignals leaves their echoes out', async () => {
    const t = h.thread();
    const agent = sdk.agent('tester');
    const all = await agent.subscribeToThread(t);
    const hidden = await agent.subscribeToThread(t, { hideSignals: true });
    const a = consume(all, false);
    const b = consume(hidden, false);

    const persisted = await agent.sendSignal(
      { type: 'notification', contents: 'CI failed', attributes: { source: 'github' } },
      { ...t, ifIdle: { behavior: 'persist' } },
    );
    expect(persisted).toMatchObject({ accepted: true, action: 'persist', signalId: expect.any(String) });
    expect(persisted.runId).toBeUndefined();
    const legacy = await agent.sendSignal(
      { type: 'system-reminder', contents: 'be brief' },
      { ...t, ifIdle: { behavior: 'discard' } },
    );
    expect(legacy.action).toBe('discard');
    await agent.sendMessage('hello', t);

    await a.seen.untilCount('finish', 1);
    await b.seen.untilCount('finish', 1);
    all.unsubscribe();
    hidden.unsubscribe();
    await Promise.all([a.done, b.done]);
    const echo = a.seen.events.find((e) => e.type === 'data-signal');
    expect(echo?.payload).toMatchObject({ id: persisted.signalId, type: 'notification', contents: 'CI failed' });
    expect(b.seen.count('data-signal')).toBe(0);
    expect(upToFinish(b.seen.events).map((e) => e.id)).toEqual(
      upToFinish(a.seen.events)
        .filter((e) => e.type !== 'data-signal')
        .map((e) => e.id),
    );
    expect(userTurns(h.model.requests.at(-1)!.messages)).toEqual([
      '<notification source="github">CI failed</notification>',
      'hello',
    ]);
  });

  it('aborts the active run', async () => {
    const t = h.thread();
    const agent = sdk.agent('tester');
    expect(await agent.abortThread(t)).toEqual({ aborted: false, clearedSignalIds: [] });
    const sub = await agent.subscribeToThread(t);
    const { seen, done } = consume(sub, false);
    const before = h.model.requests.length;
    const held = holdNextReply({ text: 'never heard' });
    const run = await agent.sendMessage('stop me', t);
    await h.model.waitForRequests(before + 1, 30_000);

    expect(await agent.abortThread({ ...t, clearPendingSignals: true })).toMatchObject({
      aborted: true,
      runId: run.runId,
    });
    await seen.untilCount('abort', 1);
    held.release();
    sub.unsubscribe();
    await done;
    expect(seen.events.find((e) => e.type === 'abort')?.runId).toBe(run.runId);
  });

  it('takes an id as the idempotency key: the same id sent twice is accepted once', async () => {
    const t = h.thread();
    const agent = sdk.agent('tester');
    const first = await agent.sendMessage('once', t, { id: `key-${t.threadId}` });
    const again = await agent.queueMessage('once', t, { id: `key-${t.threadId}` });
    expect(again).toMatchObject({ accepted: true, signalId: first.signalId, duplicate: true });
    const own = await agent.sendSignal({ id: `sig-${t.threadId}`, type: 'reactive', contents: 'x' }, t);
    expect(own.signalId).toBe(`sig-${t.threadId}`);
  });

  it('resends a send whose answer was lost with the same Idempotency-Key, and the thread applies it once', async () => {
    const t = h.thread();
    const keys: (string | null)[] = [];
    let dropped = false;
    const lossy: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).endsWith('/send-message')) {
        keys.push(new Headers(init?.headers).get('idempotency-key'));
        if (!dropped) {
          dropped = true;
          await response.arrayBuffer();
          throw new TypeError('fetch failed (the test dropped the answer)');
        }
      }
      return response;
    };
    const agent = createHttpClient({ baseUrl: gateway.url, fetch: lossy }).agent('tester');

    const result = await agent.sendMessage('only once', t);
    expect(result).toMatchObject({ accepted: true, action: 'wake', duplicate: true });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const events = await busEvents(t);
    expect(events.filter((e) => e.type === 'start')).toHaveLength(1);
    expect((await agent.getMessages(t))!.messages.filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('lists the agents and answers /health', async () => {
    expect(await sdk.health()).toEqual({ ok: true });
    const agents = await sdk.listAgents();
    expect(Object.keys(agents).sort()).toEqual(['gated', 'tester']);
    expect(agents.gated).toMatchObject({ id: 'gated', tools: { pause: { id: 'pause' } } });
  });

  it('throws a typed error carrying status, type and message', async () => {
    const t = h.thread();
    const bad = await rejection(sdk.agent('tester').sendMessage({ contents: 'x', attributes: { 'bad name': 1 } }, t));
    expect(isThreadlineHttpError(bad)).toBe(true);
    expect(bad).toMatchObject({ name: 'ThreadlineHttpError', status: 400, type: 'ValidationError' });
    expect((bad as ThreadlineHttpError).message).toMatch(/Invalid signal XML attribute name: bad name/);

    const unknown = await rejection(sdk.agent('nobody').sendSignal({ type: 'reactive', contents: 'x' }, t));
    expect(unknown).toMatchObject({ status: 404, type: 'NotFoundError', message: expect.stringMatching(/nobody/) });
    expect(await sdk.agent('tester').getThread(t)).toBeNull();
  });

  it('uses only what browsers have: no Node imports, and only types from outside http-client', () => {
    const dir = new URL('../../http-client/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files.sort()).toEqual(['client.ts', 'errors.ts', 'index.ts', 'sse.ts', 'subscription.ts', 'types.ts']);
    for (const file of files) {
      const source = readFileSync(new URL(file, dir), 'utf8');
      const imports = [...source.matchAll(/^(?:import|export)\s+(type\s+)?[^'";]*?from\s+'([^']+)'/gm)];
      for (const [statement, typeOnly, from] of imports) {
        expect(from, `${file}: ${statement}`).not.toMatch(/^node:|^(fs|net|http|https|crypto|stream|events|buffer)$/);
        // Runtime imports stay inside http-client, plus the dependency-free error base class.
        if (!typeOnly && !from.startsWith('./')) expect(from, `${file}: ${statement}`).toBe('../protocol/errors');
      }
    }
  });
});

describe('subscriptions', () => {
  it('starts after lastEventId, and rejects at once on a 4xx (bad id, unknown agent)', async () => {
    const t = h.thread();
    const agent = sdk.agent('tester');
    await agent.sendMessage('hi', t);
    const all = await busEvents(t);
    const start = all.find((e) => e.type === 'start')!;

    const sub = await agent.subscribeToThread(t, { lastEventId: start.id });
    const { seen, done } = consume(sub, false);
    await seen.untilCount('finish', 1);
    sub.unsubscribe();
    await done;
    expect(upToFinish(seen.events).map((e) => e.id)).toEqual(all.slice(all.indexOf(start) + 1).map((e) => e.id));

    const badId = await rejection(agent.subscribeToThread(t, { lastEventId: 'not-an-id' }));
    expect(badId).toMatchObject({ status: 400, type: 'ValidationError' });
    const nobody = await rejection(sdk.agent('nobody').subscribeToThread(t));
    expect(nobody).toMatchObject({ status: 404, type: 'NotFoundError' });
  });

  it('reads as an async iterable too; leaving the loop closes the connection', async () => {
    const t = h.thread();
    const before = proxy.requests;
    const sub = await viaProxy.agent('tester').subscribeToThread(t);
    await sdk.agent('tester').sendMessage('iterate', t);
    const events: ThreadEvent[] = [];
    for await (const event of sub.stream) {
      events.push(event);
      if (event.type === 'finish') break;
    }
    expect(events[0].type).toBe('start');
    await proxy.until(() => proxy.open === 0, 'the connection to close');
    expect(proxy.requests - before).toBe(1);
    expect(() => sub.stream[Symbol.asyncIterator]()).toThrow(/already being read/);
  });

  it('resumes after the server side drops mid-run: every event exactly once, ids strictly increasing, no gap', async () => {
    const t = h.thread();
    const g1 = `${t.threadId}:1`;
    const g2 = `${t.threadId}:2`;
    h.model.enqueue(
      { text: 'one two three', toolCalls: [{ name: 'pause', args: { gate: g1 } }] },
      { text: 'four five', toolCalls: [{ name: 'pause', args: { gate: g2 } }] },
      { text: 'six seven eight' },
    );
    const requestsBefore = proxy.requests;
    const sub = await viaProxy.agent('gated').subscribeToThread(t);
    const { seen, done, state } = consume(sub, fast);

    const run = await sdk.agent('gated').sendMessage('go', t);
    await gates.entered(g1);
    await seen.untilCount('tool-call', 1);
    proxy.cut();
    await proxy.until(() => proxy.requests - requestsBefore >= 2, 'the first reconnect');
    gates.release(g1);

    await gates.entered(g2);
    await seen.untilCount('tool-call', 2);
    proxy.cut();
    await proxy.until(() => proxy.requests - requestsBefore >= 3, 'the second reconnect');
    gates.release(g2);

    await seen.untilCount('finish', 1);
    expect(state.settled).toBe(false);
    sub.unsubscribe();
    await expect(done).resolves.toBeUndefined();

    const answer = upToFinish(seen.events);
    const ids = answer.map((e) => Number(e.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i], `event ${i} after ${ids[i - 1]}`).toBe(ids[i - 1] + 1);
    const reference = await busEvents(t);
    expect(answer.map((e) => e.id)).toEqual(reference.map((e) => e.id));
    expect(answer).toEqual(reference);
    expect(textByRun(answer).get(run.runId!)).toBe('one two threefour fivesix seven eight');
    // Each reconnect resumed from an event the SDK had received.
    const resumedFrom = proxy.lastEventIds.slice(requestsBefore + 1);
    expect(resumedFrom.length).toBeGreaterThanOrEqual(2);
    for (const id of resumedFrom) expect(seen.events.map((e) => e.id)).toContain(id);
  });

  it('resets its retry count once a reconnect delivers an event', async () => {
    const t = h.thread();
    const sub = await viaProxy.agent('tester').subscribeToThread(t);
    // One failed attempt in a row is allowed: without the reset, the second cut would end the subscription.
    const { seen, done, state } = consume(sub, { maxRetries: 1, delayMs: 10 });
    for (let i = 1; i <= 3; i++) {
      await sdk.agent('tester').sendMessage(`message ${i}`, t);
      await seen.untilCount('finish', i);
      proxy.cut();
    }
    await sdk.agent('tester').sendMessage('message 4', t);
    await seen.untilCount('finish', 4);
    expect(state.settled).toBe(false);
    sub.unsubscribe();
    await done;
    expect(upToFinish(seen.events, 4)).toEqual(await busEvents(t, 4));
  });

  it('rejects with the error onChunk threw, without reconnecting, and closes the connection', async () => {
    const t = h.thread();
    const before = proxy.requests;
    const sub = await viaProxy.agent('tester').subscribeToThread(t);
    const done = sub.processDataStream({
      onChunk: (event) => {
        if (event.type === 'start') throw new Error('the renderer broke');
      },
      reconnect: { delayMs: 0 },
    });
    await sdk.agent('tester').sendMessage('hello', t);
    await expect(done).rejects.toThrow('the renderer broke');
    await proxy.until(() => proxy.open === 0, 'the connection to close');
    expect(proxy.requests - before).toBe(1);
  });

  it('treats a 4xx answer to a reconnect as final', async () => {
    const t = h.thread();
    const sub = await viaProxy.agent('tester').subscribeToThread(t);
    const { done } = consume(sub, fast);
    proxy.mode = { status: 403, body: { error: { type: 'ForbiddenError', message: 'This key may not act on it.' } } };
    const before = proxy.requests;
    proxy.cut();
    const err = await rejection(done);
    expect(err).toMatchObject({ status: 403, type: 'ForbiddenError', message: 'This key may not act on it.' });
    expect(proxy.requests - before).toBe(1);
  });

  it('gives up after maxRetries failed reconnects in a row, with the last error', async () => {
    const t = h.thread();
    const sub = await viaProxy.agent('tester').subscribeToThread(t);
    const { done } = consume(sub, { maxRetries: 3, delayMs: 5 });
    proxy.mode = 'refuse';
    const before = proxy.requests;
    proxy.cut();
    const err = await rejection(done);
    expect(isThreadlineHttpError(err)).toBe(false);
    expect(err).toBeInstanceOf(TypeError);
    expect(proxy.requests - before).toBe(3);
  });

  it('unsubscribe() resolves processDataStream, also while waiting to reconnect', async () => {
    const t = h.thread();
    const agent = viaProxy.agent('tester');
    const live = await agent.subscribeToThread(t);
    const a = consume(live, true);
    await sdk.agent('tester').sendMessage('hi', t);
    await a.seen.untilCount('finish', 1);
    live.unsubscribe();
    await expect(a.done).resolves.toBeUndefined();

    // A dropped connection with a reconnect delay far beyond the test's timeout: only unsubscribe() can end it.
    const dropped = new Waiters();
    let drops = 0;
    const tapped = createHttpClient({
      baseUrl: proxy.url,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        return tapEnd(response, () => {
          drops += 1;
          dropped.notify();
        });
      },
    });
    const waiting = await tapped.agent('tester').subscribeToThread(t);
    const b = consume(waiting, { delayMs: 600_000, maxDelayMs: 600_000 });
    proxy.cut();
    await dropped.until(() => drops === 1, 'the SDK to see the drop');
    waiting.unsubscribe();
    await expect(b.done).resolves.toBeUndefined();
    await proxy.until(() => proxy.open === 0, 'every connection to close');
  });
});

/** The response with its body wrapped, so `onEnd` runs when the body ends or fails. */
function tapEnd(response: Response, onEnd: () => void): Response {
  if (!response.body) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          onEnd();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        onEnd();
        controller.error(err);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

describe('API keys', () => {
  let guarded: ServedGateway;
  beforeAll(async () => {
    guarded = await serveGateway({
      client: h.client,
      agents: summarizeAgents([testAgent]),
      port: 0,
      apiKeys: { 'key-a': ['tenant-a'] },
    });
  });
  afterAll(async () => {
    await guarded?.close();
  });

  it('sends the key as a bearer token: its own resource works, another is 403, none is 401', async () => {
    const agent = createHttpClient({ baseUrl: guarded.url, apiKey: 'key-a' }).agent('tester');
    const mine = { resourceId: 'tenant-a', threadId: `thr-${h.thread().threadId}` };
    const sub = await agent.subscribeToThread(mine);
    const { seen, done } = consume(sub, false);
    expect(await agent.sendMessage('hi', mine)).toMatchObject({ accepted: true, action: 'wake' });
    await seen.untilCount('finish', 1);
    sub.unsubscribe();
    await done;

    const theirs = { resourceId: 'tenant-b', threadId: mine.threadId };
    expect(await rejection(agent.sendMessage('hi', theirs))).toMatchObject({ status: 403, type: 'ForbiddenError' });
    expect(await rejection(agent.subscribeToThread(theirs))).toMatchObject({ status: 403, type: 'ForbiddenError' });
    expect(await rejection(agent.getThread(theirs))).toMatchObject({ status: 403 });

    const anonymous = createHttpClient({ baseUrl: guarded.url });
    expect(await rejection(anonymous.listAgents())).toMatchObject({ status: 401, type: 'UnauthorizedError' });
    expect(await anonymous.health()).toEqual({ ok: true });
  });
});

describe('retries of sends and reads', () => {
  it("resends after a 429 or 503 that asks for a short wait, with the same Idempotency-Key; a long wait is the caller's", async () => {
    const calls: { key: string | null }[] = [];
    const answers: Response[] = [
      Response.json(
        { error: { type: 'RateLimitedError', message: 'slow down' } },
        { status: 429, headers: { 'retry-after': '0' } },
      ),
      new Response('upstream down', { status: 503 }),
      Response.json({ accepted: true, action: 'wake', runId: 'run-1', signalId: 's-1' }),
      Response.json(
        { error: { type: 'RateLimitedError', message: 'come back in a minute' } },
        { status: 429, headers: { 'retry-after': '60' } },
      ),
    ];
    const scripted: typeof fetch = async (_input, init) => {
      calls.push({ key: new Headers(init?.headers).get('idempotency-key') });
      return answers.shift()!;
    };
    const agent = createHttpClient({ baseUrl: 'http://gateway.invalid', fetch: scripted }).agent('a');
    const t = { resourceId: 'r', threadId: 't' };

    const result = await agent.sendMessage('hi', t);
    expect(result).toMatchObject({ accepted: true, action: 'wake', runId: 'run-1' });
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.key)).size).toBe(1);

    const err = await rejection(agent.sendMessage('again', t));
    expect(err).toMatchObject({ status: 429, type: 'RateLimitedError', retryAfterMs: 60_000 });
    expect(calls).toHaveLength(4);
  });
});

describe('the SSE reader', () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
    return new ReadableStream({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
  }
  async function read(chunks: Uint8Array[]): Promise<SseItem[]> {
    const items: SseItem[] = [];
    for await (const item of parseSse(streamOf(chunks))) items.push(item);
    return items;
  }

  it('joins multi-line data, keeps ids in any position, passes comments, and handles CR, LF, CRLF and split input', async () => {
    const text = bytes('data: café\n\n');
    const splitAt = text.indexOf(0xc3) + 1; // inside the two bytes of "é"
    const items = await read([
      bytes('data: a\r\n'),
      bytes('data: b\n\n'),
      bytes(': keep-alive\n\n'),
      bytes('id: 7\ndata: {"x":1}\n\n'),
      bytes('data: {"y":2}\nid: 8\r'),
      bytes('\n\r\n'),
      bytes('event: e\rdata:no-space\r\r'),
      bytes('id: 9\n\n'),
      text.slice(0, splitAt),
      text.slice(splitAt),
      bytes('retry: 50\ndata: last\n\ndata: cut mid-event'),
    ]);
    expect(items).toEqual([
      { kind: 'message', message: { data: 'a\nb' } },
      { kind: 'comment', text: 'keep-alive' },
      { kind: 'message', message: { id: '7', data: '{"x":1}' } },
      { kind: 'message', message: { id: '8', data: '{"y":2}' } },
      { kind: 'message', message: { event: 'e', data: 'no-space' } },
      { kind: 'message', message: { data: 'café' } },
      { kind: 'message', message: { retry: 50, data: 'last' } },
    ]);
  });

  it('resumes from the SSE id: line when events carry none, ends a connection at [DONE], and stops on a 404', async () => {
    const requests: { lastEventId: string | null; body: unknown }[] = [];
    const event = (n: number) =>
      JSON.stringify({ threadKey: 'k', type: 'text-delta', payload: { text: `${n}` }, at: 0 });
    const answers = [
      `: connected\n\nid: 1\ndata: ${event(1)}\n\ndata: ${event(2)}\nid: 2\n\n`,
      `id: 3\ndata: ${event(3)}\n\ndata: [DONE]\n\nid: 4\ndata: ${event(4)}\n\n`,
    ];
    const scripted: typeof fetch = async (_input, init) => {
      requests.push({
        lastEventId: new Headers(init?.headers).get('last-event-id'),
        body: JSON.parse(String(init?.body)),
      });
      const text = answers.shift();
      if (text === undefined) {
        return Response.json({ error: { type: 'NotFoundError', message: 'gone' } }, { status: 404 });
      }
      return new Response(text, { headers: { 'content-type': 'text/event-stream' } });
    };
    const t = { resourceId: 'r', threadId: 't' };
    const sub = await createHttpClient({ baseUrl: 'http://gateway.invalid', fetch: scripted })
      .agent('a')
      .subscribeToThread(t, { hideSignals: true });
    const seen = new Seen();
    const err = await rejection(sub.processDataStream({ onChunk: seen.onChunk, reconnect: { delayMs: 0 } }));
    expect(err).toMatchObject({ status: 404, type: 'NotFoundError', message: 'gone' });
    expect(seen.events.map((e) => (e.payload as { text: string }).text)).toEqual(['1', '2', '3']);
    expect(sub.lastEventId()).toBe('3');
    expect(requests).toEqual([
      { lastEventId: null, body: { ...t, hideSignals: true } },
      { lastEventId: '2', body: { ...t, hideSignals: true, lastEventId: '2' } },
      { lastEventId: '3', body: { ...t, hideSignals: true, lastEventId: '3' } },
    ]);
  });
});
