import { describe, expect, it } from 'vitest';
import type { InputMessage } from '../../../protocol/messages';
import type { StateInfo } from '../../../protocol/schemas';
import { input, newThread, refusal, stepResult, types } from './support';

const state = (id: string, laneId: string, cacheKey: string, mode: StateInfo['mode'] = 'snapshot', extra = {}) =>
  input(id, { type: 'state', state: { laneId, mode, cacheKey, value: cacheKey }, ...extra });

const stateUpdates = (events: { type: string; payload: unknown }[]) =>
  events.filter((e) => e.type === 'state-updated').map((e) => e.payload);

describe('state signals (behaviour §3.1)', () => {
  it('versions a lane per change, stamps the version on the stored signal, and announces it', () => {
    const { thread } = newThread();
    expect(thread.accept(state('s1', 'browser', 'k1'))).toMatchObject({ action: 'wake', version: 1 });
    expect(thread.accept(state('s2', 'browser', 'k2', 'delta'))).toMatchObject({ action: 'deliver', version: 2 });
    expect(stateUpdates(thread.takeOutbox())).toEqual([
      expect.objectContaining({ id: 'browser', version: 1, currentCacheKey: 'k1', signalId: 's1', action: 'wake' }),
      expect.objectContaining({ id: 'browser', version: 2, currentMode: 'delta', signalId: 's2', action: 'deliver' }),
    ]);
    const plan = thread.planStep();
    expect(plan.messages.map((m) => (m as InputMessage).metadata?.state)).toEqual([
      expect.objectContaining({ laneId: 'browser', version: 1 }),
      expect.objectContaining({ laneId: 'browser', version: 2 }),
    ]);
    expect(thread.view().lanes).toEqual([
      expect.objectContaining({ id: 'browser', version: 2, value: 'k2', lastSnapshotSignalId: 's1', activeCopies: 2 }),
    ]);
  });

  it('skips a state equal to the lane’s latest: the validator refuses it, accept answers skipped', () => {
    const { thread } = newThread();
    thread.accept(state('s1', 'browser', 'k1'));
    thread.takeOutbox();
    expect(refusal(() => thread.validate(state('s2', 'browser', 'k1')))).toMatchObject({
      type: 'UnchangedState',
      details: { laneId: 'browser', version: 1 },
    });
    expect(thread.accept(state('s2', 'browser', 'k1'))).toEqual({
      accepted: true,
      action: 'skipped',
      reason: 'unchanged',
      signalId: 's2',
      version: 1,
    });
    expect(thread.takeOutbox()).toEqual([]);
    expect(thread.view().activeRun!.pendingInputs).toBe(1);
  });

  it('commits nothing for a state the thread discarded', () => {
    const { thread } = newThread();
    expect(thread.accept(state('s1', 'browser', 'k1', 'snapshot', { ifIdle: { behavior: 'discard' } })).action).toBe(
      'discard',
    );
    expect(thread.view().lanes).toEqual([]);
    expect(thread.accept(state('s2', 'browser', 'k1')).action).toBe('wake');
  });

  it('refuses a state for a new lane beyond maxLanes, not one for a lane it has', () => {
    const { thread } = newThread({ maxLanes: 1 });
    thread.accept(state('s1', 'browser', 'k1'));
    expect(refusal(() => thread.validate(state('s2', 'editor', 'k1')))).toMatchObject({
      type: 'InputRejected',
      details: { limit: 'maxLanes', value: 1 },
    });
    expect(() => thread.validate(state('s3', 'browser', 'k2'))).not.toThrow();
  });
});

describe('the lane’s current state in the window', () => {
  it('re-emits the latest snapshot and the deltas since when the window lost them, at the same version', () => {
    const { thread } = newThread({ contextWindow: { maxMessages: 2 } });
    thread.accept(state('s1', 'browser', 'k1'));
    thread.accept(state('d1', 'browser', 'k2', 'delta'));
    thread.completeStep(thread.planStep(), stepResult());
    thread.accept(input('m1'));
    thread.takeOutbox();
    const plan = thread.planStep();
    expect(plan.messages.map((m) => m.id)).toEqual(['d1:refresh:2', 'm1']);
    const copies = thread.messages.filter((m) => m.id.includes(':refresh:'));
    expect(copies.map((m) => [m.id, (m as InputMessage).metadata?.state])).toEqual([
      ['s1:refresh:2', expect.objectContaining({ version: 1, refreshOf: 's1' })],
      ['d1:refresh:2', expect.objectContaining({ version: 2, refreshOf: 'd1' })],
    ]);
    expect(plan.preEvents.map((e) => [e.type, (e.payload as { refreshed?: boolean }).refreshed])).toEqual([
      ['data-signal', true],
      ['data-signal', true],
      ['data-user-message', undefined],
    ]);
  });

  it('leaves lanes a processor owns to it, telling it whether the window still has the snapshot', () => {
    const { thread } = newThread({ contextWindow: { maxMessages: 1 } });
    thread.accept(state('s1', 'browser', 'k1'));
    expect(thread.planStep({ ownedLanes: ['browser'] }).lanes).toEqual([
      expect.objectContaining({ laneId: 'browser', hasSnapshot: true }),
    ]);
    thread.accept(input('m1'));
    const plan = thread.planStep({ ownedLanes: ['browser'] });
    expect(plan.messages.map((m) => m.id)).toEqual(['m1']);
    expect(plan.lanes).toEqual([
      expect.objectContaining({
        laneId: 'browser',
        hasSnapshot: false,
        lastSnapshot: expect.objectContaining({ id: 's1' }),
      }),
    ]);
  });

  it('records a processor-computed state the step added, but not a refreshed copy', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    const plan = thread.planStep();
    const computed = (id: string, extra = {}): InputMessage => ({
      id,
      role: 'user',
      type: 'state',
      contents: id,
      runId: plan.runId,
      at: 1_000,
      metadata: { state: { laneId: 'summary', mode: 'snapshot', cacheKey: id, version: 1, ...extra } },
    });
    thread.completeStep(plan, {
      ...stepResult(),
      signals: [computed('c1'), computed('c0:refresh:1', { refreshOf: 'c0' })],
    });
    expect(thread.messages.map((m) => m.id)).toEqual(['m1', 'c1', 'c0:refresh:1', 'a:1']);
    const events = thread.takeOutbox();
    expect(types(events)).toEqual(['state-updated']);
    expect(events[0]).toMatchObject({
      runId: plan.runId,
      payload: { id: 'summary', version: 1, signalId: 'c1', action: 'deliver' },
    });
  });
});
