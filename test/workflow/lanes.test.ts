/**
 * behaviour §3 on a real Temporal dev server: state lanes. Dedupe (same cacheKey and mode → skipped, never in history),
 * A → B → A, tracking committed only after acceptance, deltas after a snapshot, the current state re-sent when it
 * left the context window (proved with the prompts the model server received), processor-computed lanes
 * (`computeStateSignal` with `lastSnapshot`/`deltasSinceSnapshot` resolved from the lane), lanes across
 * continue-as-new and a worker replacement, racing producers, bad input.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, type ComputeStateSignalArgs } from '../../agents/agent';
import { browserStateProcessor, type BrowserState } from '../../agents/processors/browser-state';
import type { ThreadEvent } from '../../protocol/events';
import type { SendResult } from '../../client/connect';
import type { StateSignalInput, ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { afterFinishes, collectUntil, startHarness, userTurns, type Harness } from '../support/harness';

let browser: BrowserState = { open: true, activeUrl: 'https://example.com', tabCount: 3 };
const computeArgs: ComputeStateSignalArgs[] = [];

const watcher = defineAgent({
  id: 'watcher',
  instructions: 'You watch a browser.',
  model: 'openai/test-model',
  // Small on purpose: four stored messages, so older state falls out of the window within two turns.
  contextWindow: { maxMessages: 4 },
});

const browsing = defineAgent({
  id: 'browsing',
  instructions: 'You drive a browser.',
  model: 'openai/test-model',
  // Six stored messages: the snapshot of turn one is still seen at turn three and gone at turn four.
  contextWindow: { maxMessages: 6 },
  processors: [
    {
      ...browserStateProcessor({ read: () => browser }),
      // Records what the processor was given, then computes as the example does.
      async computeStateSignal(args) {
        computeArgs.push(args);
        return browserStateProcessor({ read: () => browser }).computeStateSignal!(args);
      },
    },
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ agents: [watcher, browsing] });
});
afterAll(async () => {
  await h?.close();
});

const agent = () => h.client.agent('watcher');
const persistIdle = { ifIdle: { behavior: 'persist' as const } };

function state(cacheKey: string, extra: Partial<StateSignalInput> = {}): StateSignalInput {
  return { id: 'browser', cacheKey, contents: `Browser shows ${cacheKey}.`, ...extra };
}

/** Update events of a thread's current execution that carried a state input (accepted updates only). */
async function acceptedStateUpdates(target: ThreadTarget): Promise<number> {
  const history = await h.temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId)).fetchHistory();
  return history.events!.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
}

async function lanes(target: ThreadTarget) {
  return (await h.client.getThread(target))!.lanes;
}

describe('sendStateSignal dedupe and versions (behaviour §3.1)', () => {
  it('skips the same cacheKey and mode, and the skipped input never reaches history', async () => {
    const t = h.thread();
    const first = await agent().sendStateSignal(state('A'), { ...t, ...persistIdle });
    expect(first).toMatchObject({ accepted: true, action: 'persist', version: 1 });
    const again = await agent().sendStateSignal(state('A'), { ...t, ...persistIdle });
    expect(again).toMatchObject({ accepted: true, action: 'skipped', reason: 'unchanged', version: 1 });
    expect(await acceptedStateUpdates(t)).toBe(1);
    const [lane] = await lanes(t);
    expect(lane).toMatchObject({
      id: 'browser',
      currentCacheKey: 'A',
      currentMode: 'snapshot',
      version: 1,
      lastSignalId: first.signalId,
      lastSnapshotSignalId: first.signalId,
    });
  });

  it('A → B → A sends A again: only the latest state is compared', async () => {
    const t = h.thread();
    const results: SendResult[] = [];
    for (const key of ['A', 'B', 'A'])
      results.push(await agent().sendStateSignal(state(key), { ...t, ...persistIdle }));
    expect(results.map((r) => [r.action, r.version])).toEqual([
      ['persist', 1],
      ['persist', 2],
      ['persist', 3],
    ]);
    expect((await lanes(t))[0]).toMatchObject({ currentCacheKey: 'A', version: 3 });
  });

  it('a discarded state does not make a later identical one look like a duplicate', async () => {
    const t = h.thread();
    const discarded = await agent().sendStateSignal(state('A'), { ...t, ifIdle: { behavior: 'discard' } });
    expect(discarded.action).toBe('discard');
    expect(await lanes(t)).toEqual([]);
    const resent = await agent().sendStateSignal(state('A'), { ...t, ...persistIdle });
    expect(resent).toMatchObject({ action: 'persist', version: 1 });
  });

  it('a delta after a snapshot is a new version; the snapshot stays the lane’s base', async () => {
    const t = h.thread();
    const snap = await agent().sendStateSignal(state('A', { value: { tabs: 1 } }), { ...t, ...persistIdle });
    const delta = await agent().sendStateSignal(
      state('A', { mode: 'delta', contents: 'One more tab.', delta: { tabs: 2 }, value: { tabs: 2 } }),
      { ...t, ...persistIdle },
    );
    // Same cacheKey, other mode: not a duplicate.
    expect(delta).toMatchObject({ action: 'persist', version: 2 });
    expect((await lanes(t))[0]).toMatchObject({
      currentMode: 'delta',
      version: 2,
      lastSignalId: delta.signalId,
      lastSnapshotSignalId: snap.signalId,
      value: { tabs: 2 },
    });
    const page = await h.client.getMessages(t);
    expect(page!.messages.map((m) => (m as { metadata?: { state?: unknown } }).metadata?.state)).toEqual([
      { laneId: 'browser', mode: 'snapshot', cacheKey: 'A', value: { tabs: 1 }, version: 1 },
      { laneId: 'browser', mode: 'delta', cacheKey: 'A', value: { tabs: 2 }, delta: { tabs: 2 }, version: 2 },
    ]);
  });

  it('renders as <state> with attributes and tagName; cacheKey and mode stay out of the XML', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const before = h.model.requests.length;
    await agent().sendStateSignal(state('A', { attributes: { source: 'cdp' } }), t);
    const events = await collectUntil(stream, afterFinishes(1));
    await agent().sendStateSignal(state('B', { tagName: 'browser-state' }), { ...t, ...persistIdle });
    const request = h.model.requests[before];
    expect(userTurns(request.messages)).toEqual(['<state source="cdp">Browser shows A.</state>']);
    expect(events.filter((e) => e.type === 'state-updated').map((e) => e.payload)).toEqual([
      expect.objectContaining({ id: 'browser', version: 1, currentCacheKey: 'A', action: 'wake' }),
    ]);
    const messages = (await h.client.getMessages(t))!.messages;
    expect(messages.at(-1)).toMatchObject({ type: 'state', tagName: 'browser-state' });
  });

  it('two producers racing on one lane: versions unique and consecutive, tracking = the last accepted', async () => {
    const t = h.thread();
    await agent().sendStateSignal(state('seed'), { ...t, ...persistIdle });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        agent().sendStateSignal(state(i % 2 === 0 ? 'A' : 'B'), { ...t, ...persistIdle }),
      ),
    );
    const taken = results.filter((r) => r.action !== 'skipped');
    const versions = taken.map((r) => r.version!).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: taken.length }, (_, i) => i + 2));
    const [lane] = await lanes(t);
    expect(lane.version).toBe(taken.length + 1);
    const last = taken.find((r) => r.version === lane.version)!;
    expect(lane.lastSignalId).toBe(last.signalId);
    // Every skipped result names the version that was current when it arrived.
    for (const r of results.filter((r) => r.action === 'skipped')) expect(r.version).toBeGreaterThanOrEqual(1);
  });

  it('rejects bad input with the documented messages and changes nothing', async () => {
    const t = h.thread();
    await expect(agent().sendStateSignal({ cacheKey: 'A', contents: 'x' } as StateSignalInput, t)).rejects.toThrow(
      'state signal id is required',
    );
    await expect(agent().sendStateSignal({ id: 'browser', contents: 'x' } as StateSignalInput, t)).rejects.toThrow(
      'state signal cacheKey is required',
    );
    await expect(
      agent().sendStateSignal({ ...state('A'), mode: 'full' } as unknown as StateSignalInput, t),
    ).rejects.toThrow(/mode/);
    await expect(
      agent().sendStateSignal({ ...state('A'), transient: true } as unknown as StateSignalInput, t),
    ).rejects.toThrow(/transient/);
    expect(await h.client.getThread(t)).toBeNull();
  });
});

describe('the current state stays in the window', () => {
  it('re-sends the lane’s snapshot and deltas once they fell out of the window (the prompts prove it)', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    await agent().sendStateSignal(state('A', { contents: 'Tabs: 1.' }), { ...t, ...persistIdle });
    await agent().sendStateSignal(state('A', { mode: 'delta', contents: 'Tabs: 2.' }), { ...t, ...persistIdle });
    const before = h.model.requests.length;
    for (let turn = 1; turn <= 4; turn++) {
      await agent().sendMessage(`question ${turn}`, t);
      await collectUntil(stream, afterFinishes(1));
    }
    const prompts = h.model.requests.slice(before).map((r) => userTurns(r.messages));
    // Every request holds the current state (snapshot, then delta), whatever the window dropped.
    for (const prompt of prompts) {
      const snapshot = prompt.lastIndexOf('<state>Tabs: 1.</state>');
      expect(snapshot).toBeGreaterThanOrEqual(0);
      expect(prompt.indexOf('<state>Tabs: 2.</state>', snapshot)).toBeGreaterThan(snapshot);
    }
    // The window holds 4 messages: without the refresh the last prompts would have lost the state.
    for (const r of h.model.requests.slice(before))
      expect(r.messages.filter((m) => m.role !== 'system').length).toBeLessThanOrEqual(4);
    const [lane] = await lanes(t);
    expect(lane.version).toBe(2);
    expect(lane.activeCopies).toBe(2);
  });
});

describe('computeStateSignal (behaviour §3.2)', () => {
  it('emits a snapshot, nothing when unchanged, a delta on change, and re-emits the snapshot at the same version once it left the window', async () => {
    const t = h.thread();
    computeArgs.length = 0;
    browser = { open: true, activeUrl: 'https://example.com', tabCount: 3 };
    const b = () => h.client.agent('browsing');
    const stream = h.client.subscribeToThread(t).stream;
    const turn = async (text: string): Promise<ThreadEvent[]> => {
      await b().sendMessage(text, t);
      return collectUntil(stream, afterFinishes(1));
    };

    const first = await turn('open the page');
    expect(first.filter((e) => e.type === 'state-updated').map((e) => e.payload)).toEqual([
      expect.objectContaining({
        version: 1,
        currentMode: 'snapshot',
        currentCacheKey: 'browser:https://example.com:3-tabs',
      }),
    ]);
    expect(computeArgs[0]).toMatchObject({ contextWindow: { hasSnapshot: false }, tracking: undefined });

    const second = await turn('anything new?');
    expect(second.some((e) => e.type === 'state-updated')).toBe(false);
    expect(computeArgs[1]).toMatchObject({ contextWindow: { hasSnapshot: true }, tracking: { version: 1 } });

    browser = { open: true, activeUrl: 'https://example.com/docs', tabCount: 3 };
    const third = await turn('now?');
    expect(third.filter((e) => e.type === 'state-updated').map((e) => e.payload)).toEqual([
      expect.objectContaining({ version: 2, currentMode: 'delta' }),
    ]);
    const lastPrompt = userTurns(h.model.requests.at(-1)!.messages);
    expect(lastPrompt.at(-1)).toBe('<state>Browser changed: active tab URL is now https://example.com/docs.</state>');

    // Two more turns push the snapshot out of the 6-message window: the processor is told, and it gets the lane's
    // snapshot and deltas from the thread, not from the window.
    await turn('one');
    await turn('two');
    const lost = computeArgs.find((a, i) => i > 2 && !a.contextWindow.hasSnapshot)!;
    expect(lost).toBeDefined();
    expect(lost.lastSnapshot?.contents).toBe('Browser is open. Active tab URL: https://example.com. 3 open tabs.');
    expect(lost.deltasSinceSnapshot.map((d) => d.contents)).toEqual([
      'Browser changed: active tab URL is now https://example.com/docs.',
    ]);
    const [lane] = await lanes(t);
    // Refreshed as a snapshot of the (unchanged) current state: same cacheKey, same version as the delta.
    expect(lane).toMatchObject({
      currentMode: 'snapshot',
      version: 2,
      currentCacheKey: 'browser:https://example.com/docs:3-tabs',
    });
    const everyPrompt = h.model.requests.slice(-5).map((r) => userTurns(r.messages).join('\n'));
    for (const prompt of everyPrompt) expect(prompt).toContain('<state>');
  });
});

describe('lanes are thread state', () => {
  it('survive continue-as-new and a worker replacement: the same state is still a duplicate', async () => {
    const small = await startHarness({ agents: [watcher], threadConfig: { continueAsNewAfterEvents: 30 } });
    try {
      const t = small.thread();
      const a = small.client.agent('watcher');
      const stream = small.client.subscribeToThread(t).stream;
      await a.sendStateSignal(state('A', { value: { n: 1 } }), { ...t, ...persistIdle });
      for (let i = 0; i < 6; i++) {
        await a.sendMessage(`m${i}`, t);
        await collectUntil(stream, afterFinishes(1));
      }
      const handle = small.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
      const { runId: latest } = await handle.describe();
      const history = await small.temporal.workflow
        .getHandle(threadKey(t.resourceId, t.threadId), latest)
        .fetchHistory();
      expect(history.events![0].workflowExecutionStartedEventAttributes!.continuedExecutionRunId).toBeTruthy();

      await small.worker!.shutdown();
      await small.startWorker();
      expect(await a.sendStateSignal(state('A'), { ...t, ...persistIdle })).toMatchObject({
        action: 'skipped',
        version: 1,
      });
      expect((await small.client.getThread(t))!.lanes[0]).toMatchObject({ version: 1, value: { n: 1 } });
      // And the model still sees the state it was sent before continuing as new.
      await a.sendMessage('still there?', t);
      await collectUntil(stream, afterFinishes(1));
      expect(userTurns(small.model.requests.at(-1)!.messages)).toContain('<state>Browser shows A.</state>');
    } finally {
      await small.close();
    }
  });
});
