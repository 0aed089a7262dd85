/**
 * Inputs whose action does not depend on the thread's state (`persist` or `discard` on both sides,
 * protocol/routing.ts) go by signal-with-start and are answered by the client: on a real dev server, each is in the
 * thread's history as a `sendSignal` signal (no update), stored and echoed exactly once, deduplicated by id, kept in
 * order among update-delivered inputs, routed as answered while another agent's run is active, and carried across
 * continue-as-new.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../agents/agent';
import type { ThreadEvent } from '../../protocol/events';
import type { SendTarget } from '../../protocol/api';
import type { ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { startHarness, testAgent, type Harness } from '../support/harness';
import { echoResponder } from '../support/model-server';

/** Few signals per execution, so a handful of sends crosses continue-as-new. */
const SIGNALS_PER_EXECUTION = 6;

let h: Harness;
const otherAgent = defineAgent({ id: 'other', instructions: 'You are another agent.', model: 'openai/test-model' });
beforeAll(async () => {
  h = await startHarness({
    agents: [testAgent, otherAgent],
    threadConfig: { maxSignalsPerExecution: SIGNALS_PER_EXECUTION },
  });
});
const stops: (() => void)[] = [];
afterEach(() => {
  h.model.setResponder(undefined);
  for (const stop of stops.splice(0)) stop();
});
afterAll(async () => {
  await h?.close();
});

const tester = () => h.client.agent('tester');
const persistBoth = (t: ThreadTarget): SendTarget => ({
  ...t,
  ifActive: { behavior: 'persist' },
  ifIdle: { behavior: 'persist' },
});
/** Persisted when idle, delivered when active: the thread decides, so the client asks it with an update. */
const persistWhenIdle = (t: ThreadTarget): SendTarget => ({ ...t, ifIdle: { behavior: 'persist' } });

interface Recorder {
  events: ThreadEvent[];
  until(done: (all: ThreadEvent[]) => boolean, what: string, timeoutMs?: number): Promise<ThreadEvent[]>;
}

/** Subscribes now and records the stream in the background. */
function record(t: ThreadTarget): Recorder {
  const sub = h.client.subscribeToThread(t);
  stops.push(sub.unsubscribe);
  const events: ThreadEvent[] = [];
  void (async () => {
    for await (const event of sub.stream) events.push(event);
  })().catch(() => undefined);
  return {
    events,
    async until(done, what, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!done(events)) {
        if (Date.now() > deadline) {
          throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; saw ${events.map((e) => e.type)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return [...events];
    },
  };
}

/** The ids of the `persisted` echoes (signals and user messages) in stream order. */
const persistedEchoes = (events: ThreadEvent[]) =>
  events.flatMap((e) => {
    const payload = e.payload as { id?: string; persisted?: boolean } | undefined;
    return (e.type === 'data-signal' || e.type === 'data-user-message') && payload?.persisted ? [payload.id!] : [];
  });
const echoed = (id: string) => (all: ThreadEvent[]) => persistedEchoes(all).includes(id);

interface RecordedInput {
  via: 'signal' | 'update';
  name: string;
  id: string;
}

/**
 * Every input in the thread's history over its whole continue-as-new chain, oldest first, with how it came; and the
 * details of its markers (patch markers name their change id).
 */
async function recordedInputs(
  t: ThreadTarget,
): Promise<{ inputs: RecordedInput[]; executions: number; markers: string[] }> {
  const workflowId = threadKey(t.resourceId, t.threadId);
  const runIds: string[] = [];
  let runId: string | null | undefined = (await h.temporal.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    runIds.unshift(runId);
    const history = await h.temporal.workflow.getHandle(workflowId, runId).fetchHistory();
    runId = history.events![0].workflowExecutionStartedEventAttributes!.continuedExecutionRunId;
  }
  const inputs: RecordedInput[] = [];
  const markers: string[] = [];
  for (const id of runIds) {
    const history = await h.temporal.workflow.getHandle(workflowId, id).fetchHistory();
    for (const e of history.events ?? []) {
      const signal = e.workflowExecutionSignaledEventAttributes;
      const update = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
      if (signal) {
        const payload = defaultPayloadConverter.fromPayload<{ id: string }>(signal.input!.payloads![0]);
        inputs.push({ via: 'signal', name: signal.signalName!, id: payload.id });
      } else if (update?.input?.name === 'submitInput') {
        const payload = defaultPayloadConverter.fromPayload<{ id: string }>(update.input.args!.payloads![0]);
        inputs.push({ via: 'update', name: update.input.name, id: payload.id });
      }
      for (const detail of Object.values(e.markerRecordedEventAttributes?.details ?? {})) {
        for (const payload of detail.payloads ?? [])
          markers.push(JSON.stringify(defaultPayloadConverter.fromPayload(payload)));
      }
    }
  }
  return { inputs, executions: runIds.length, markers };
}

async function storedIds(t: ThreadTarget): Promise<string[]> {
  return (await h.client.getMessages(t, { limit: 1000 }))!.messages.map((m) => m.id);
}

/** Polls `condition` until it holds; fails after `timeoutMs`. For state only a query can tell. */
async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;

describe('state-independent inputs by signal-with-start', () => {
  it('are answered by the client, recorded as a sendSignal signal, stored and echoed once', async () => {
    const t = h.thread();
    const rec = record(t);
    const requests = h.model.requests.length;

    const signal = await tester().sendSignal({ type: 'notification', contents: 'CI passed' }, persistBoth(t));
    expect(signal).toMatchObject({ accepted: true, action: 'persist' });
    expect(signal.duplicate).toBeUndefined();
    expect(signal.runId).toBeUndefined();
    await signal.persisted;
    const message = await tester().sendMessage('a note for later', persistBoth(t));
    expect(message).toMatchObject({ accepted: true, action: 'persist' });
    const dropped = await tester().sendSignal(
      { type: 'reactive', contents: 'never mind' },
      {
        ...t,
        ifActive: { behavior: 'discard' },
        ifIdle: { behavior: 'discard' },
      },
    );
    expect(dropped).toMatchObject({ accepted: true, action: 'discard' });
    const transient = await tester().sendSignal(
      { type: 'reactive', contents: 'only for this turn', transient: true },
      persistBoth(t),
    );
    expect(transient).toMatchObject({ accepted: true, action: 'discard' });

    const sent = [signal, message, dropped, transient].map((r) => r.signalId);
    // Recorded durably when the send returns; a signal that arrives while a workflow task runs joins the history
    // (from Temporal's buffer) when that task completes.
    let inputs: RecordedInput[] = [];
    await until(async () => ({ inputs } = await recordedInputs(t)).inputs.length >= sent.length, 'the history');
    expect(inputs).toEqual(sent.map((id) => ({ via: 'signal', name: 'sendSignal', id })));

    await rec.until(echoed(message.signalId), 'the message echo');
    expect(await storedIds(t)).toEqual([signal.signalId, message.signalId]);
    const view = await h.client.getThread(t);
    expect(view).toMatchObject({ status: 'idle', messageCount: 2, runsCompleted: 0 });
    // A later marker's echo follows any repeat: none.
    const marker = await tester().sendSignal({ type: 'reactive', contents: 'marker' }, persistBoth(t));
    const events = await rec.until(echoed(marker.signalId), 'the marker echo');
    expect(persistedEchoes(events)).toEqual([signal.signalId, message.signalId, marker.signalId]);
    expect(h.model.requests).toHaveLength(requests);
  });

  it('apply a resent id once, whichever way it came first', async () => {
    const t = h.thread();
    const rec = record(t);
    const id = unique('resent');
    const first = await tester().sendSignal({ id, type: 'notification', contents: 'deploy done' }, persistBoth(t));
    const again = await tester().sendSignal({ id, type: 'notification', contents: 'deploy done' }, persistBoth(t));
    // Only the thread knows it saw the id: the answer is the action, without `duplicate` (docs/signals.md).
    expect(first).toMatchObject({ action: 'persist', signalId: id });
    expect(again).toMatchObject({ action: 'persist', signalId: id });

    // First by update (the thread decided), then by signal-with-start.
    const viaUpdate = unique('via-update');
    const decided = await tester().sendSignal(
      { id: viaUpdate, type: 'reactive', contents: 'first asked' },
      persistWhenIdle(t),
    );
    expect(decided).toMatchObject({ action: 'persist', signalId: viaUpdate });
    const resent = await tester().sendSignal(
      { id: viaUpdate, type: 'reactive', contents: 'first asked' },
      persistBoth(t),
    );
    expect(resent).toMatchObject({ action: 'persist', signalId: viaUpdate });

    const marker = await tester().sendSignal({ type: 'reactive', contents: 'marker' }, persistBoth(t));
    const events = await rec.until(echoed(marker.signalId), 'the marker echo');
    expect(persistedEchoes(events)).toEqual([id, viaUpdate, marker.signalId]);
    expect(await storedIds(t)).toEqual([id, viaUpdate, marker.signalId]);
    const { inputs } = await recordedInputs(t);
    expect(inputs.map((i) => `${i.via}:${i.id}`)).toEqual([
      `signal:${id}`,
      `signal:${id}`,
      `update:${viaUpdate}`,
      `signal:${viaUpdate}`,
      `signal:${marker.signalId}`,
    ]);
  });

  it('keep the order they were sent in among inputs the thread answers by update', async () => {
    const t = h.thread();
    const rec = record(t);
    const sent: string[] = [];
    for (let i = 0; i < 8; i++) {
      const bySignal = i % 2 === 0;
      const result = await tester().sendSignal(
        { id: unique(`mixed-${i}`), type: 'reactive', contents: `input ${i}` },
        bySignal ? persistBoth(t) : persistWhenIdle(t),
      );
      expect(result.action).toBe('persist');
      sent.push(result.signalId);
    }
    const events = await rec.until(echoed(sent.at(-1)!), 'the last echo');
    expect(persistedEchoes(events)).toEqual(sent);
    expect(await storedIds(t)).toEqual(sent);
    const { inputs } = await recordedInputs(t);
    expect(inputs.map((i) => i.id)).toEqual(sent);
    expect(inputs.map((i) => i.via)).toEqual(sent.map((_, i) => (i % 2 === 0 ? 'signal' : 'update')));
  });

  it("are persisted, not queued, while another agent's run is active, and the run goes on", async () => {
    const t = h.thread();
    const rec = record(t);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = h.model.requests.length;
    let otherId = '';
    h.model.setResponder(async (req) => {
      if (req.index === first) await held;
      return echoResponder(req);
    });
    try {
      const start = await tester().sendMessage('start', t);
      expect(start.action).toBe('wake');
      await h.model.waitForRequests(first + 1, 30_000);

      const other = await h.client
        .agent('other')
        .sendSignal({ type: 'notification', contents: 'for the other agent' }, persistBoth(t));
      expect(other).toMatchObject({ accepted: true, action: 'persist' });
      otherId = other.signalId;
      // Stored at once, nothing queued; its echo goes out with the step's events (the main loop publishes them).
      await until(async () => (await storedIds(t)).includes(other.signalId), 'the signal to be stored');
      expect((await h.client.getThread(t))!.queue).toEqual([]);
      release();
      await rec.until((all) => all.some((e) => e.type === 'finish' && e.runId === start.runId), 'the run to finish');
    } finally {
      release();
    }
    expect(persistedEchoes(rec.events).filter((id) => id === otherId)).toHaveLength(1);
    const view = await h.client.getThread(t);
    expect(view).toMatchObject({ status: 'idle', runsCompleted: 1 });
    expect(view!.queue).toEqual([]);
    // The tester's one request; nothing woke the other agent.
    expect(h.model.requests).toHaveLength(first + 1);
    const { markers } = await recordedInputs(t);
    // The thread ran the new routing behind its gate: the patch marker is in history.
    expect(markers.some((m) => m.includes('state-independent-actions'))).toBe(true);
  });

  it('cross continue-as-new: each stored and echoed once, in order, and a resent id still applied once', async () => {
    const t = h.thread();
    const rec = record(t);
    const sent: string[] = [];
    // Until the thread has continued as new twice (how many signals one execution takes depends on how the worker
    // batches them, not on the test).
    for (let i = 0; sent.length < SIGNALS_PER_EXECUTION || (await recordedInputs(t)).executions < 3; i++) {
      if (i >= 20 * SIGNALS_PER_EXECUTION)
        throw new Error(`${i} signals and the thread has not continued as new twice`);
      const result = await tester().sendSignal(
        { id: unique(`can-${i}`), type: 'reactive', contents: `input ${i}` },
        persistBoth(t),
      );
      sent.push(result.signalId);
    }
    await rec.until(echoed(sent.at(-1)!), 'the last echo');

    // Resent after its execution continued as new: the thread still remembers it.
    const again = await tester().sendSignal({ id: sent[0], type: 'reactive', contents: 'input 0' }, persistBoth(t));
    expect(again).toMatchObject({ action: 'persist', signalId: sent[0] });
    const marker = await tester().sendSignal({ type: 'reactive', contents: 'marker' }, persistBoth(t));
    const events = await rec.until(echoed(marker.signalId), 'the marker echo');
    expect(persistedEchoes(events)).toEqual([...sent, marker.signalId]);
    expect(await storedIds(t)).toEqual([...sent, marker.signalId]);
    const after = await recordedInputs(t);
    expect(after.inputs.map((i) => i.id)).toEqual([...sent, sent[0], marker.signalId]);
    expect(after.inputs.every((i) => i.via === 'signal')).toBe(true);
  });

  it('sent concurrently across continue-as-new: every one stored and echoed once, in history order', async () => {
    const t = h.thread();
    const rec = record(t);
    const sent: string[] = [];
    // Eight senders keep signals in flight until the thread has continued as new at least twice meanwhile.
    let executions = 0;
    let next = 0;
    const sender = async () => {
      while (executions < 3) {
        const i = next++;
        if (i >= 40 * SIGNALS_PER_EXECUTION)
          throw new Error(`${i} signals and the thread has not continued as new twice`);
        const result = await tester().sendSignal(
          { id: unique(`burst-${i}`), type: 'reactive', contents: `burst ${i}` },
          persistBoth(t),
        );
        expect(result.action).toBe('persist');
        sent.push(result.signalId);
        if (i % 4 === 3) executions = (await recordedInputs(t)).executions;
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    const marker = await tester().sendSignal({ type: 'reactive', contents: 'marker' }, persistBoth(t));
    const events = await rec.until(echoed(marker.signalId), 'the marker echo', 120_000);
    let order: string[] = [];
    await until(async () => {
      order = (await recordedInputs(t)).inputs.map((i) => i.id);
      return order.length > sent.length;
    }, 'every signal in history');
    expect([...order].sort()).toEqual([...sent, marker.signalId].sort());
    expect(persistedEchoes(events)).toEqual(order);
    expect(await storedIds(t)).toEqual(order);
  });
});
