/**
 * behaviour §2.2, §2.3, §2.5 and §5 on a real Temporal dev server: the signal behaviour matrix (active × deliver, persist,
 * discard, interrupt; idle × wake, persist, discard), branch attributes, transient signals, idempotency, a burst of
 * signals within one step, interrupt, abort, cancelling queued messages, and processors.
 *
 * Long on purpose: the behaviour matrix reads best as one table of cases over one harness.
 */
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, type AgentTool } from '../../agents/agent';
import { agentsMdReminderProcessor } from '../../agents/processors/agents-md-reminder';
import type { ThreadEvent } from '../../protocol/events';
import type { SendTarget } from '../../protocol/api';
import type { ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { startHarness, testAgent, userTurns, within, type Harness } from '../support/harness';
import { echoResponder, type ReceivedRequest, type ScriptedReply } from '../support/model-server';

/** A promise the test resolves: replies and tools wait on it, so nothing depends on timing. */
class Gate {
  readonly promise: Promise<void>;
  release!: () => void;
  constructor() {
    this.promise = new Promise((resolve) => (this.release = resolve));
  }
}

/** Keeps `execute`'s input typed by the schema (an agent's tool map is untyped). */
const tool = <I, O>(definition: AgentTool<I, O>): AgentTool<I, O> => definition;

/** The slow tool's controls, fresh per test. */
let slowTool = { started: new Gate(), finish: new Gate(), aborted: new Gate() };
let gates: Gate[] = [];

let h: Harness;
let root: string;
const agentsMd = 'Use the design tokens from packages/ui/tokens.ts.\nNever inline colours.';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'threadline-agents-md-'));
  await mkdir(join(root, 'packages/ui'), { recursive: true });
  await writeFile(join(root, 'packages/ui/AGENTS.md'), agentsMd);
  await writeFile(join(root, 'README.md'), 'Threadline test repository.');
  const helper = defineAgent({
    id: 'helper',
    instructions: 'You help with the repository.',
    model: 'openai/test-model',
    processors: [agentsMdReminderProcessor({ root })],
    tools: {
      readFile: tool({
        description: 'Reads a file of the repository.',
        inputSchema: z.object({ path: z.string() }),
        execute: ({ path }) => readFile(join(root, path), 'utf8'),
      }),
      slow: tool({
        description: 'Works until the test lets it finish.',
        inputSchema: z.object({}),
        execute: async (_input, { abortSignal }) => {
          slowTool.started.release();
          const aborted = new Promise<void>((resolve) => abortSignal.addEventListener('abort', () => resolve()));
          await Promise.race([slowTool.finish.promise, aborted]);
          if (abortSignal.aborted) {
            slowTool.aborted.release();
            throw new Error('slow tool stopped: the run was aborted');
          }
          return 'slow work done';
        },
      }),
    },
  });
  h = await startHarness({ agents: [testAgent, helper] });
});
afterEach(() => {
  h.model.setResponder(undefined);
  for (const gate of gates) gate.release();
  gates = [];
  slowTool.finish.release();
  slowTool = { started: new Gate(), finish: new Gate(), aborted: new Gate() };
});
afterAll(async () => {
  await h?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const tester = () => h.client.agent('tester');
const helper = () => h.client.agent('helper');

/** A held reply: `release()` lets the model answer. Released after each test in any case. */
function gate(): Gate {
  const g = new Gate();
  gates.push(g);
  return g;
}

/**
 * Scripts the model's next replies in arrival order; an entry with a gate waits for it. Requests past the script get
 * an echo (`Echo: <last user text>`). Returns the index the first scripted request will have.
 */
function script(...entries: { reply: ScriptedReply; gate?: Gate }[]): number {
  const first = h.model.requests.length;
  h.model.setResponder(async (req) => {
    const entry = entries[req.index - first];
    if (!entry) return echoResponder(req);
    await entry.gate?.promise;
    return entry.reply;
  });
  return first;
}

/** The request with this index, once it has arrived. */
async function request(index: number): Promise<ReceivedRequest> {
  const all = await h.model.waitForRequests(index + 1, 30_000);
  return all[index];
}

const recorders: (() => void)[] = [];
afterEach(() => {
  for (const stop of recorders.splice(0)) stop();
});

/** Polls `condition` until it holds; fails after `timeoutMs`. For state only Temporal can tell. */
async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function pendingActivities(t: ThreadTarget): Promise<number> {
  const description = await h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId)).describe();
  return description.raw.pendingActivities?.length ?? 0;
}

interface Recorder {
  /** Every event so far, in stream order. */
  events: ThreadEvent[];
  /** Resolves with every event so far once `done(all)` holds; fails after `timeoutMs` with what it saw. */
  until(done: (all: ThreadEvent[]) => boolean, what: string, timeoutMs?: number): Promise<ThreadEvent[]>;
  stop(): void;
}

/** Subscribes to a thread now and records its stream in the background. */
function record(t: ThreadTarget): Recorder {
  const sub = h.client.subscribeToThread(t);
  const events: ThreadEvent[] = [];
  const waiters = new Set<() => void>();
  let failure: unknown;
  void (async () => {
    try {
      for await (const event of sub.stream) {
        events.push(event);
        for (const wake of waiters) wake();
      }
    } catch (err) {
      failure = err;
      for (const wake of waiters) wake();
    }
  })();
  recorders.push(sub.unsubscribe);
  return {
    events,
    until: (done, what, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (failure) return finish(() => reject(failure));
          if (done(events)) finish(() => resolve([...events]));
        };
        const timer = setTimeout(
          () =>
            finish(() =>
              reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; saw ${summarize(events)}`)),
            ),
          timeoutMs,
        );
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      }),
    stop: sub.unsubscribe,
  };
}
function summarize(events: ThreadEvent[]): string {
  return events.map((e) => `${e.type}${e.runId ? `(${e.runId.slice(0, 8)})` : ''}`).join(', ');
}

const ofType = (events: ThreadEvent[], type: ThreadEvent['type'], runId?: string) =>
  events.filter((e) => e.type === type && (runId === undefined || e.runId === runId));

/** Holds once the run has ended (`finish` or `abort`). */
const ended = (runId: string | undefined) => (all: ThreadEvent[]) =>
  all.some((e) => (e.type === 'finish' || e.type === 'abort') && e.runId === runId);

/** Event types in stream order, without the token stream (whose chunking is the model's business). */
const shape = (events: ThreadEvent[]) =>
  events.map((e) => e.type).filter((type) => !['text-start', 'text-delta', 'text-end'].includes(type));

interface EchoPayload {
  id: string;
  type: string;
  contents: unknown;
  attributes?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  persisted?: true;
}
const echoes = (events: ThreadEvent[]) => ofType(events, 'data-signal').map((e) => e.payload as EchoPayload);

async function stored(t: ThreadTarget) {
  const page = await h.client.getMessages(t, { limit: 1000 });
  return page!.messages;
}

/**
 * Sends a plain message to a thread that must be idle and returns the user turns of the model request it caused,
 * once its run finished: what "later turns" see.
 */
async function laterTurn(t: ThreadTarget, rec: Recorder, agentId = 'tester'): Promise<ReceivedRequest> {
  const index = h.model.requests.length;
  const later = await h.client.agent(agentId).sendMessage('later', t);
  expect(later.action).toBe('wake');
  await rec.until(ended(later.runId), 'the later run to finish');
  expect(h.model.requests).toHaveLength(index + 1);
  return h.model.requests[index];
}

const notification = {
  type: 'notification',
  contents: 'CI failed on main',
  attributes: { source: 'github', pr: '123' },
} as const;
const renderedNotification = '<notification source="github" pr="123">CI failed on main</notification>';

/** Starts a run on a fresh thread whose first reply is held; resolves once the model has the request. */
async function activeThread(reply: ScriptedReply = { text: 'step one' }) {
  const t = h.thread();
  const rec = record(t);
  const held = gate();
  const first = script({ reply, gate: held });
  const start = await tester().sendMessage('start', t);
  expect(start.action).toBe('wake');
  await request(first);
  return { t, rec, held, first, start };
}

describe('behaviours while a run is active', () => {
  it.each([
    ['by default', undefined],
    ["with behavior 'deliver'", { behavior: 'deliver' as const }],
  ])('delivers a signal %s at the next step boundary, stored for later turns', async (_how, ifActive) => {
    const { t, rec, held, first, start } = await activeThread();
    const target: SendTarget = ifActive ? { ...t, ifActive } : t;
    const sent = await tester().sendSignal(notification, target);
    expect(sent).toMatchObject({ accepted: true, action: 'deliver', runId: start.runId, signalId: expect.any(String) });
    expect(sent.duplicate).toBeUndefined();
    await expect(sent.persisted).resolves.toBeUndefined();
    held.release();

    const events = await rec.until(ended(start.runId), 'the run to finish');
    // Echoed where it entered the model's context: after the first step's output, before the second step.
    expect(shape(events)).toEqual([
      'start',
      'data-user-message',
      'step-start',
      'step-finish',
      'data-signal',
      'step-start',
      'step-finish',
      'finish',
    ]);
    expect(echoes(events)).toEqual([
      {
        id: sent.signalId,
        type: 'notification',
        contents: notification.contents,
        attributes: notification.attributes,
      },
    ]);
    expect(h.model.requests).toHaveLength(first + 2);
    expect(userTurns(h.model.requests[first].messages)).toEqual(['start']);
    expect(userTurns(h.model.requests[first + 1].messages)).toEqual(['start', renderedNotification]);

    expect((await stored(t)).find((m) => m.id === sent.signalId)).toMatchObject({
      role: 'user',
      type: 'notification',
      contents: notification.contents,
      attributes: notification.attributes,
      runId: start.runId,
    });
    expect(userTurns((await laterTurn(t, rec)).messages)).toEqual(['start', renderedNotification, 'later']);
  });

  it('persists a signal without changing the run, echoed as its own event', async () => {
    const { t, rec, held, first, start } = await activeThread();
    const sent = await tester().sendSignal(notification, { ...t, ifActive: { behavior: 'persist' } });
    expect(sent).toMatchObject({ accepted: true, action: 'persist', signalId: expect.any(String) });
    expect(sent.runId).toBeUndefined();
    await expect(sent.persisted).resolves.toBeUndefined();
    held.release();

    const events = await rec.until(ended(start.runId), 'the run to finish');
    // One step only: a persisted signal does not make the run ask the model again.
    expect(h.model.requests).toHaveLength(first + 1);
    expect(ofType(events, 'finish')[0].payload).toMatchObject({ runId: start.runId, steps: 1 });
    expect(echoes(events)).toEqual([
      {
        id: sent.signalId,
        type: 'notification',
        contents: notification.contents,
        attributes: notification.attributes,
        persisted: true,
      },
    ]);
    expect((await stored(t)).map((m) => m.id)).toContain(sent.signalId);
    expect(userTurns((await laterTurn(t, rec)).messages)).toEqual(['start', renderedNotification, 'later']);
  });

  it('discards a signal: no echo, never stored, never seen by the model', async () => {
    const { t, rec, held, first, start } = await activeThread();
    const sent = await tester().sendSignal(notification, { ...t, ifActive: { behavior: 'discard' } });
    expect(sent).toMatchObject({ accepted: true, action: 'discard', signalId: expect.any(String) });
    expect(sent.runId).toBeUndefined();
    await expect(sent.persisted).resolves.toBeUndefined();
    held.release();

    await rec.until(ended(start.runId), 'the run to finish');
    expect(h.model.requests).toHaveLength(first + 1);
    expect((await stored(t)).map((m) => m.id)).not.toContain(sent.signalId);
    expect(userTurns((await laterTurn(t, rec)).messages)).toEqual(['start', 'later']);
    expect(ofType(rec.events, 'data-signal')).toEqual([]);
  });

  it('merges ifActive attributes (state at acceptance), also for a queueMessage behind the run', async () => {
    const t = h.thread();
    const rec = record(t);
    const held = gate();
    const first = script({ reply: { text: 'step one' }, gate: held });
    const branches = {
      ifActive: { attributes: { delivery: 'while-active', lane: 'hot' } },
      ifIdle: { attributes: { delivery: 'while-idle' } },
    };
    const woke = await tester().sendSignal(
      { type: 'notification', contents: 'deploy started', attributes: { source: 'ci', delivery: 'unset' } },
      { ...t, ...branches },
    );
    expect(woke.action).toBe('wake');
    await request(first);
    const joined = await tester().sendSignal(
      { type: 'notification', contents: 'deploy done', attributes: { source: 'ci', delivery: 'unset' } },
      { ...t, ...branches },
    );
    expect(joined).toMatchObject({ action: 'deliver', runId: woke.runId });
    const queued = await tester().queueMessage(
      { contents: 'what next?', attributes: { name: 'Jane' } },
      { ...t, ...branches },
    );
    expect(queued.action).toBe('queued');
    held.release();

    await rec.until(ended(queued.runId), 'the queued run to finish');
    const idle = '<notification source="ci" delivery="while-idle">deploy started</notification>';
    // The branch wins on value; original keys keep their position, new ones follow.
    const active = '<notification source="ci" delivery="while-active" lane="hot">deploy done</notification>';
    const queuedTurn = '<user name="Jane" delivery="while-active" lane="hot">what next?</user>';
    expect(h.model.requests.slice(first).map((r) => userTurns(r.messages))).toEqual([
      [idle],
      [idle, active],
      [idle, active, queuedTurn],
    ]);
  });
});

describe('behaviours while the thread is idle', () => {
  it.each([
    ['by default', undefined],
    ["with behavior 'wake'", { behavior: 'wake' as const }],
  ])('wakes the thread %s, echoing the signal before the first step', async (_how, ifIdle) => {
    const t = h.thread();
    const rec = record(t);
    const first = h.model.requests.length;
    const sent = await tester().sendSignal(notification, ifIdle ? { ...t, ifIdle } : t);
    expect(sent).toMatchObject({ accepted: true, action: 'wake', runId: expect.any(String) });
    await expect(sent.persisted).resolves.toBeUndefined();

    const events = await rec.until(ended(sent.runId), 'the run to finish');
    expect(shape(events)).toEqual(['start', 'data-signal', 'step-start', 'step-finish', 'finish']);
    expect(events[0]).toMatchObject({ type: 'start', runId: sent.runId });
    expect(echoes(events)).toEqual([
      { id: sent.signalId, type: 'notification', contents: notification.contents, attributes: notification.attributes },
    ]);
    expect(userTurns(h.model.requests[first].messages)).toEqual([renderedNotification]);
    expect((await stored(t)).map((m) => m.id)).toContain(sent.signalId);
    expect(userTurns((await laterTurn(t, rec)).messages)).toEqual([renderedNotification, 'later']);
  });

  it('persists a signal on a thread that never ran: echoed, stored, no run', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = h.model.requests.length;
    const sent = await tester().sendSignal(notification, { ...t, ifIdle: { behavior: 'persist' } });
    expect(sent).toMatchObject({ accepted: true, action: 'persist', signalId: expect.any(String) });
    expect(sent.runId).toBeUndefined();
    await expect(sent.persisted).resolves.toBeUndefined();

    const events = await rec.until((all) => all.length > 0, 'the echo');
    expect(events).toHaveLength(1);
    expect(echoes(events)).toEqual([
      {
        id: sent.signalId,
        type: 'notification',
        contents: notification.contents,
        attributes: notification.attributes,
        persisted: true,
      },
    ]);
    expect(await h.client.getThread(t)).toMatchObject({ status: 'idle', messageCount: 1, runsCompleted: 0 });

    // No run started for it: the next request the model gets is the later turn's, and it sees the signal.
    const later = await laterTurn(t, rec);
    expect(later.index).toBe(first);
    expect(userTurns(later.messages)).toEqual([renderedNotification, 'later']);
  });

  it('discards a signal: no run, no echo, never stored', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = h.model.requests.length;
    const sent = await tester().sendSignal(notification, { ...t, ifIdle: { behavior: 'discard' } });
    expect(sent).toMatchObject({ accepted: true, action: 'discard', signalId: expect.any(String) });
    expect(sent.runId).toBeUndefined();
    await expect(sent.persisted).resolves.toBeUndefined();
    expect(await h.client.getThread(t)).toMatchObject({ status: 'idle', messageCount: 0, runsCompleted: 0 });

    const later = await laterTurn(t, rec);
    expect(later.index).toBe(first);
    expect(userTurns(later.messages)).toEqual(['later']);
    expect(rec.events[0].type).toBe('start');
    expect(ofType(rec.events, 'data-signal')).toEqual([]);
    expect((await stored(t)).map((m) => m.id)).not.toContain(sent.signalId);
  });

  it('starts the woken run with ifIdle.streamOptions and merged ifIdle attributes, for that run only', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = h.model.requests.length;
    const sent = await helper().sendSignal(
      { type: 'reactive', contents: 'The build is green.', attributes: { origin: 'ci', delivery: 'unset' } },
      {
        ...t,
        ifActive: { attributes: { delivery: 'while-active' } },
        ifIdle: {
          attributes: { delivery: 'while-idle', lane: 'cold' },
          streamOptions: { modelSettings: { temperature: 0.25 }, toolChoice: 'required' },
        },
      },
    );
    expect(sent.action).toBe('wake');
    await rec.until(ended(sent.runId), 'the run to finish');
    const woken = h.model.requests[first];
    expect(woken.body.temperature).toBe(0.25);
    expect(woken.body.tool_choice).toBe('required');
    expect(userTurns(woken.messages)).toEqual([
      '<system-reminder origin="ci" delivery="while-idle" lane="cold">The build is green.</system-reminder>',
    ]);

    const later = await laterTurn(t, rec, 'helper');
    expect(later.body).not.toHaveProperty('temperature');
    expect(later.body.tool_choice).not.toBe('required');
  });
});

describe('transient signals', () => {
  const reminder = { type: 'reactive', contents: 'The user is typing.', transient: true } as const;
  const rendered = '<system-reminder>The user is typing.</system-reminder>';

  it('reach the model for the turn they join (delivered or woken) and are never stored', async () => {
    const { t, rec, held, first, start } = await activeThread();
    const delivered = await tester().sendSignal(reminder, t);
    expect(delivered).toMatchObject({ action: 'deliver', runId: start.runId });
    held.release();
    await rec.until(ended(start.runId), 'the run to finish');
    expect(userTurns(h.model.requests[first + 1].messages)).toEqual(['start', rendered]);
    expect((await stored(t)).map((m) => m.id)).not.toContain(delivered.signalId);
    expect(userTurns((await laterTurn(t, rec)).messages)).toEqual(['start', 'later']);

    const u = h.thread();
    const urec = record(u);
    const next = h.model.requests.length;
    const woke = await tester().sendSignal(reminder, u);
    expect(woke.action).toBe('wake');
    await urec.until(ended(woke.runId), 'the woken run to finish');
    expect(userTurns(h.model.requests[next].messages)).toEqual([rendered]);
    expect((await stored(u)).map((m) => m.id)).not.toContain(woke.signalId);
    expect(userTurns((await laterTurn(u, urec)).messages)).toEqual(['later']);
  });

  it('report discard for a persist behaviour, active or idle, and leave nothing behind', async () => {
    const { t, rec, held, first, start } = await activeThread();
    const active = await tester().sendSignal(reminder, { ...t, ifActive: { behavior: 'persist' } });
    expect(active).toMatchObject({ accepted: true, action: 'discard' });
    held.release();
    await rec.until(ended(start.runId), 'the run to finish');
    expect(h.model.requests).toHaveLength(first + 1);
    const idle = await tester().sendSignal(reminder, { ...t, ifIdle: { behavior: 'persist' } });
    expect(idle).toMatchObject({ accepted: true, action: 'discard' });

    expect(userTurns((await laterTurn(t, rec)).messages)).toEqual(['start', 'later']);
    expect(ofType(rec.events, 'data-signal')).toEqual([]);
    const ids = (await stored(t)).map((m) => m.id);
    expect(ids).not.toContain(active.signalId);
    expect(ids).not.toContain(idle.signalId);
  });
});

describe('idempotency', () => {
  it('accepts a resent signal once and answers the first result with duplicate: true', async () => {
    const { t, rec, held, first, start } = await activeThread();
    const once = { ...notification, id: `sig-${start.runId}` };
    const sent = await tester().sendSignal(once, t);
    const again = await tester().sendSignal(once, t);
    expect(sent).toMatchObject({ action: 'deliver', runId: start.runId, signalId: once.id });
    expect(sent.duplicate).toBeUndefined();
    expect(again).toMatchObject({ action: 'deliver', runId: start.runId, signalId: once.id, duplicate: true });
    held.release();
    const events = await rec.until(ended(start.runId), 'the run to finish');
    expect(echoes(events).map((e) => e.id)).toEqual([once.id]);
    expect(userTurns(h.model.requests[first + 1].messages)).toEqual(['start', renderedNotification]);

    // A persisted one too: stored once, echoed once.
    const note = { ...notification, id: `note-${start.runId}` };
    const persisted = await tester().sendSignal(note, { ...t, ifIdle: { behavior: 'persist' } });
    const resent = await tester().sendSignal(note, { ...t, ifIdle: { behavior: 'persist' } });
    expect(persisted).toMatchObject({ action: 'persist', signalId: note.id });
    expect(resent).toMatchObject({ action: 'persist', signalId: note.id, duplicate: true });
    const later = await laterTurn(t, rec);
    expect(userTurns(later.messages).filter((turn) => turn === renderedNotification)).toHaveLength(2);
    expect((await stored(t)).filter((m) => m.id === note.id)).toHaveLength(1);
    expect(echoes(rec.events).map((e) => e.id)).toEqual([once.id, note.id]);
  });
});

describe('a burst of signals within one step', () => {
  it('delivers 50 concurrent signals at the next boundary, in acceptance order, none lost or doubled', async () => {
    const { t, rec, held, first, start } = await activeThread();
    const ids = Array.from({ length: 50 }, (_, i) => `burst-${i}-${start.runId}`);
    const results = await Promise.all(
      ids.map((id, i) => tester().sendSignal({ id, type: 'reactive', contents: `signal ${i}` }, t)),
    );
    for (const r of results) expect(r).toMatchObject({ action: 'deliver', runId: start.runId });
    expect(results.map((r) => r.signalId)).toEqual(ids);

    // The order the workflow accepted them in, as Temporal recorded it.
    const history = await h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId)).fetchHistory();
    const accepted = (history.events ?? []).flatMap((e) => {
      const payload = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
      return payload ? [defaultPayloadConverter.fromPayload<{ id: string }>(payload).id] : [];
    });
    const order = accepted.filter((id) => id.startsWith('burst-'));
    expect([...order].sort()).toEqual([...ids].sort());
    held.release();

    const events = await rec.until(ended(start.runId), 'the run to finish');
    expect(h.model.requests).toHaveLength(first + 2);
    expect(ofType(events, 'finish')).toHaveLength(1);
    // All echoed together at the step boundary, in acceptance order.
    expect(shape(events)).toEqual([
      'start',
      'data-user-message',
      'step-start',
      'step-finish',
      ...ids.map(() => 'data-signal'),
      'step-start',
      'step-finish',
      'finish',
    ]);
    expect(echoes(events).map((e) => e.id)).toEqual(order);
    const byContents = new Map(ids.map((id, i) => [`<system-reminder>signal ${i}</system-reminder>`, id]));
    const turns = userTurns(h.model.requests[first + 1].messages);
    expect(turns[0]).toBe('start');
    expect(turns.slice(1).map((turn) => byContents.get(turn))).toEqual(order);
  });
});

describe('interrupt', () => {
  it('aborts the provider request, drops the partial step, and continues the run with the new input', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = script({ reply: { text: ['partial ', 'words '], hang: true } });
    const start = await tester().sendMessage('write an essay', t);
    await rec.until((all) => ofType(all, 'text-delta').length === 2, 'the partial text');
    const interrupted = await request(first);

    const sent = await tester().sendSignal(notification, { ...t, ifActive: { behavior: 'interrupt' } });
    expect(sent).toMatchObject({ accepted: true, action: 'interrupt', runId: start.runId });
    await expect(sent.persisted).resolves.toBeUndefined();
    await within(interrupted.closed, 'the interrupted provider request to close');
    expect(interrupted.closedEarly).toBe(true);

    const events = await rec.until(ended(start.runId), 'the run to finish');
    expect(shape(events)).toEqual([
      'start',
      'data-user-message',
      'step-start',
      'step-interrupted',
      'data-signal',
      'step-start',
      'step-finish',
      'finish',
    ]);
    expect(ofType(events, 'step-interrupted')[0]).toMatchObject({ runId: start.runId, payload: { stepNumber: 1 } });
    expect(echoes(events).map((e) => e.id)).toEqual([sent.signalId]);
    expect(h.model.requests).toHaveLength(first + 2);
    const next = h.model.requests[first + 1];
    expect(userTurns(next.messages)).toEqual(['write an essay', renderedNotification]);
    expect(next.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'user']);
    expect(JSON.stringify(next.messages)).not.toContain('partial');
    expect(ofType(events, 'finish')).toHaveLength(1);
    expect((await stored(t)).map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
  });
});

describe('abortThread', () => {
  it('stops the active run (provider request aborted, `abort` and no `finish`), then runs the queue', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = script({ reply: { text: ['thinking '], hang: true } });
    const start = await tester().sendMessage('start', t);
    const hanging = await request(first);
    const queued = await tester().queueMessage('queued one', t);
    expect(queued.action).toBe('queued');

    const result = await tester().abortThread(t);
    expect(result).toEqual({ aborted: true, runId: start.runId, clearedSignalIds: [] });
    await within(hanging.closed, 'the aborted provider request to close');

    const events = await rec.until(ended(queued.runId), 'the queued run to finish');
    expect(ofType(events, 'abort', start.runId)).toHaveLength(1);
    expect(ofType(events, 'finish', start.runId)).toEqual([]);
    const starts = ofType(events, 'start').map((e) => e.runId);
    expect(starts).toEqual([start.runId, queued.runId]);
    const abortAt = events.findIndex((e) => e.type === 'abort');
    expect(events.findIndex((e) => e.type === 'start' && e.runId === queued.runId)).toBeGreaterThan(abortAt);
    expect(h.model.requests).toHaveLength(first + 2);
    expect(userTurns(h.model.requests[first + 1].messages)).toEqual(['start', 'queued one']);
    expect(ofType(events, 'finish', queued.runId)).toHaveLength(1);
  });

  it('with clearPendingSignals drops the queue and runs nothing else', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = script({ reply: { text: ['thinking '], hang: true } });
    const start = await tester().sendMessage('start', t);
    const hanging = await request(first);
    const q1 = await tester().queueMessage('queued one', t);
    const q2 = await tester().queueMessage('queued two', t);

    const result = await tester().abortThread({ ...t, clearPendingSignals: true });
    expect(result).toEqual({ aborted: true, runId: start.runId, clearedSignalIds: [q1.signalId, q2.signalId] });
    await within(hanging.closed, 'the aborted provider request to close');
    const events = await rec.until(ended(start.runId), 'the abort');
    const queues = ofType(events, 'queue-updated').map((e) => (e.payload as { queue: unknown[] }).queue.length);
    expect(queues).toEqual([1, 2, 0]);
    expect(await h.client.getThread(t)).toMatchObject({ status: 'idle', activeRun: null, queue: [] });

    // The next request the model gets is the next message's: the cleared ones never ran.
    const later = await laterTurn(t, rec);
    expect(later.index).toBe(first + 1);
    expect(userTurns(later.messages)).toEqual(['start', 'later']);
    expect(ofType(rec.events, 'start').map((e) => e.runId)).not.toContain(q1.runId);
    expect(ofType(rec.events, 'start').map((e) => e.runId)).not.toContain(q2.runId);
  });

  it('answers { aborted: false } on an idle thread and on a thread that does not exist', async () => {
    const t = h.thread();
    const rec = record(t);
    const sent = await tester().sendMessage('hello', t);
    await rec.until(ended(sent.runId), 'the run to finish');
    expect(await tester().abortThread(t)).toEqual({ aborted: false, clearedSignalIds: [] });
    expect(await tester().abortThread({ ...t, clearPendingSignals: true })).toEqual({
      aborted: false,
      clearedSignalIds: [],
    });
    expect(await tester().abortThread(h.thread())).toEqual({ aborted: false, clearedSignalIds: [] });
    expect(ofType(rec.events, 'abort')).toEqual([]);
  });

  it('cancels a running tool: its result is an error, the run ends with abort, the thread answers later', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = script({ reply: { toolCalls: [{ id: 'call_slow', name: 'slow', args: {} }] } });
    const start = await helper().sendMessage('do the slow thing', t);
    await within(slowTool.started.promise, 'the tool to start');

    expect(await helper().abortThread(t)).toEqual({ aborted: true, runId: start.runId, clearedSignalIds: [] });
    const events = await rec.until(ended(start.runId), 'the abort');
    expect(shape(events)).toEqual([
      'start',
      'data-user-message',
      'step-start',
      'tool-call',
      'step-finish',
      'tool-result',
      'abort',
    ]);
    expect(ofType(events, 'tool-result')[0].payload).toMatchObject({
      toolCallId: 'call_slow',
      toolName: 'slow',
      isError: true,
    });
    // The tool itself was told to stop, and its activity ended without publishing a second result.
    await within(slowTool.aborted.promise, 'the tool to see its abortSignal');
    await until(async () => (await pendingActivities(t)) === 0, 'the tool activity to end');
    expect(ofType(rec.events, 'tool-result')).toHaveLength(1);

    const later = await laterTurn(t, rec, 'helper');
    expect(later.index).toBe(first + 1);
    const [, user, assistant, toolResult, next] = later.messages;
    expect(user).toMatchObject({ role: 'user', content: 'do the slow thing' });
    expect(assistant).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_slow' }] });
    expect(toolResult).toMatchObject({ role: 'tool', tool_call_id: 'call_slow' });
    expect(next).toMatchObject({ role: 'user', content: 'later' });
    expect(ofType(rec.events, 'finish').at(-1)!.payload).toMatchObject({ reason: 'stop' });
  });
});

describe('cancelQueuedMessages', () => {
  it('removes exactly the not-yet-started queued messages named, which then never run', async () => {
    const t = h.thread();
    const rec = record(t);
    const firstHeld = gate();
    const secondHeld = gate();
    const first = script(
      { reply: { text: 'first' }, gate: firstHeld },
      { reply: { text: 'second' }, gate: secondHeld },
    );
    const m0 = await tester().sendMessage('m0', t);
    await request(first);
    const q1 = await tester().queueMessage('q1', t);
    const q2 = await tester().queueMessage('q2', t);
    const q3 = await tester().queueMessage('q3', t);

    const cancelled = await tester().cancelQueuedMessages({
      ...t,
      signalIds: [q3.signalId, 'no-such-id', m0.signalId, q1.signalId],
    });
    expect(cancelled).toEqual({ cancelledSignalIds: [q1.signalId, q3.signalId] });
    expect((await h.client.getThread(t))!.queue).toEqual([
      { runId: q2.runId, agentId: 'tester', inputIds: [q2.signalId] },
    ]);
    firstHeld.release();

    // q2 has started: it is no longer queued, so it is not removed.
    await request(first + 1);
    expect(await tester().cancelQueuedMessages({ ...t, signalIds: [q2.signalId, q1.signalId] })).toEqual({
      cancelledSignalIds: [],
    });
    secondHeld.release();

    const events = await rec.until(ended(q2.runId), 'the q2 run to finish');
    expect(ofType(events, 'start').map((e) => e.runId)).toEqual([m0.runId, q2.runId]);
    expect(ofType(events, 'finish')).toHaveLength(2);
    const queues = ofType(events, 'queue-updated').map((e) =>
      (e.payload as { queue: { inputIds: string[] }[] }).queue.flatMap((q) => q.inputIds),
    );
    expect(queues).toEqual([
      [q1.signalId],
      [q1.signalId, q2.signalId],
      [q1.signalId, q2.signalId, q3.signalId],
      [q2.signalId],
      [],
    ]);
    expect(h.model.requests).toHaveLength(first + 2);
    expect(h.model.requests.slice(first).map((r) => userTurns(r.messages))).toEqual([['m0'], ['m0', 'q2']]);
  });
});

describe('processors', () => {
  it('injects an AGENTS.md reminder once after the file was read, echoed before the step output and stored', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = script(
      { reply: { toolCalls: [{ name: 'readFile', args: { path: 'packages/ui/AGENTS.md' } }] } },
      { reply: { text: 'Checking the README too.', toolCalls: [{ name: 'readFile', args: { path: 'README.md' } }] } },
      { reply: { text: 'Understood.' } },
    );
    const sent = await helper().sendMessage('Change the button colour in packages/ui.', t);
    const events = await rec.until(ended(sent.runId), 'the run to finish');
    const reminder = `<system-reminder type="dynamic-agents-md" path="packages/ui/AGENTS.md">${agentsMd}</system-reminder>`;
    const count = (r: ReceivedRequest) => userTurns(r.messages).filter((turn) => turn === reminder).length;

    expect(h.model.requests).toHaveLength(first + 3);
    expect(h.model.requests.slice(first).map(count)).toEqual([0, 1, 1]);
    // It joins the step after the tool result it is about.
    expect(h.model.requests[first + 1].messages.map((m: { role: string }) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'user',
    ]);

    // Echoed once, inside the second step: after its step-start, before its output.
    const reminders = ofType(events, 'data-signal');
    expect(reminders).toHaveLength(1);
    expect(reminders[0].payload).toMatchObject({
      type: 'reactive',
      contents: agentsMd,
      attributes: { type: 'dynamic-agents-md', path: 'packages/ui/AGENTS.md' },
      metadata: { agentsMdPath: 'packages/ui/AGENTS.md' },
    });
    expect(reminders[0].payload).not.toHaveProperty('persisted');
    const steps = events.flatMap((e, i) => (e.type === 'step-start' ? [i] : []));
    expect(steps).toHaveLength(3);
    expect(events.slice(steps[1], steps[1] + 3).map((e) => e.type)).toEqual([
      'step-start',
      'data-signal',
      'text-start',
    ]);
    expect(events.indexOf(reminders[0])).toBe(steps[1] + 1);

    const kept = (await stored(t)).filter((m) => m.role === 'user' && m.metadata?.agentsMdPath);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({
      type: 'reactive',
      contents: agentsMd,
      attributes: { type: 'dynamic-agents-md', path: 'packages/ui/AGENTS.md' },
      runId: sent.runId,
    });

    // A later turn sees it once more, from history, and nothing re-sends it.
    const later = await laterTurn(t, rec, 'helper');
    expect(count(later)).toBe(1);
    expect(ofType(rec.events, 'data-signal')).toHaveLength(1);
  });
});
