/**
 * Inputs whose action does not depend on the thread's state (protocol/routing.ts): the client answers them without
 * asking the thread, so the thread must route every one of them exactly so, in every state; behind its closed gate
 * (replaying a history recorded before) the thread routes as it did then.
 */
import { describe, expect, it } from 'vitest';
import type { InputMessage, StoredMessage } from '../../../protocol/messages';
import { stateIndependentAction } from '../../../protocol/routing';
import type { ThreadInput } from '../../../protocol/schemas';
import { resolveThreadConfig } from '../../../protocol/thread-config';
import { emptySnapshot, openGates, ThreadState, type ThreadGates } from '../../../workflows/state';
import { fakeClock, input, refusal } from './support';

const attributesOf = (message: StoredMessage | undefined) => (message as InputMessage | undefined)?.attributes;

const activeBehaviors = [undefined, 'deliver', 'persist', 'discard', 'interrupt'] as const;
const idleBehaviors = [undefined, 'wake', 'persist', 'discard'] as const;

/** Every combination of delivery, behaviours and transience a plain input can have. */
const combinations = (): ThreadInput[] =>
  (['send', 'queue'] as const).flatMap((delivery) =>
    activeBehaviors.flatMap((active) =>
      idleBehaviors.flatMap((idle) =>
        [false, true].map((transient) =>
          input(`in-${delivery}-${active}-${idle}-${transient}`, {
            delivery,
            type: 'reactive',
            ...(active ? { ifActive: { behavior: active } } : {}),
            ...(idle ? { ifIdle: { behavior: idle } } : {}),
            ...(transient ? { transient: true } : {}),
          }),
        ),
      ),
    ),
  );

/** A thread of agent `a` in one of the states an input can find it in. */
function threadIn(state: 'idle' | 'active' | 'pending-full', gates: ThreadGates = openGates) {
  const thread = new ThreadState(
    emptySnapshot('r', 't'),
    resolveThreadConfig({ maxPendingInputs: 2 }),
    fakeClock(),
    gates,
  );
  if (state === 'idle') return thread;
  expect(thread.accept(input('start')).action).toBe('wake');
  if (state === 'pending-full') {
    for (const id of ['p1', 'p2']) expect(thread.accept(input(id)).action).toBe('deliver');
  }
  return thread;
}

describe('stateIndependentAction', () => {
  it.each([
    ['persist', 'persist', false, 'persist'],
    ['discard', 'discard', false, 'discard'],
    ['persist', 'persist', true, 'discard'],
    ['persist', 'discard', true, 'discard'],
    ['discard', 'persist', true, 'discard'],
    ['persist', 'discard', false, null],
    ['persist', undefined, false, null],
    [undefined, 'persist', false, null],
    ['deliver', 'persist', false, null],
    ['interrupt', 'discard', false, null],
  ] as const)('ifActive %s, ifIdle %s, transient %s → %s', (active, idle, transient, expected) => {
    const sent = input('x', {
      ...(active ? { ifActive: { behavior: active } } : {}),
      ...(idle ? { ifIdle: { behavior: idle } } : {}),
      ...(transient ? { transient: true } : {}),
    });
    expect(stateIndependentAction(sent)).toBe(expected);
  });

  it('is null for a queued input and for a state signal, whatever their behaviours', () => {
    const both = { ifActive: { behavior: 'persist' as const }, ifIdle: { behavior: 'persist' as const } };
    expect(stateIndependentAction(input('q', { ...both, delivery: 'queue' }))).toBeNull();
    const state = { laneId: 'browser', mode: 'snapshot' as const, cacheKey: 'k' };
    expect(stateIndependentAction(input('s', { ...both, type: 'state', state }))).toBeNull();
  });
});

describe('the thread routes a state-independent input as the client answered it', () => {
  const settledInputs = combinations().filter((i) => stateIndependentAction(i) !== null);

  it('covers both actions', () => {
    expect(new Set(settledInputs.map(stateIndependentAction))).toEqual(new Set(['persist', 'discard']));
  });

  it.each(['idle', 'active', 'pending-full'] as const)('thread %s, for this agent or another', (state) => {
    for (const agentId of ['a', 'b']) {
      for (const sent of settledInputs) {
        const thread = threadIn(state);
        const queued = thread.queue.length;
        const messages = thread.messages.length;
        const routed = { ...sent, agentId };
        expect(() => thread.validate(routed)).not.toThrow();
        const result = thread.accept(routed);
        expect(result, JSON.stringify(routed)).toMatchObject({ accepted: true, action: stateIndependentAction(sent) });
        expect(result.runId).toBeUndefined();
        expect(thread.queue).toHaveLength(queued);
        expect(thread.messages.length - messages).toBe(result.action === 'persist' ? 1 : 0);
        // Resent: remembered, applied once.
        expect(thread.accept(routed)).toMatchObject({ action: result.action, duplicate: true });
        expect(thread.messages.length - messages).toBe(result.action === 'persist' ? 1 : 0);
      }
    }
  });

  it('merges the branch attributes of the state it finds, as any input', () => {
    const sent = input('attrs', {
      type: 'reactive',
      attributes: { from: 'ci' },
      ifActive: { behavior: 'persist', attributes: { when: 'active' } },
      ifIdle: { behavior: 'persist', attributes: { when: 'idle' } },
    });
    const idle = threadIn('idle');
    idle.accept(sent);
    expect(attributesOf(idle.messages.at(-1))).toEqual({ from: 'ci', when: 'idle' });
    const active = threadIn('active');
    active.accept(sent);
    expect(attributesOf(active.messages.at(-1))).toEqual({ from: 'ci', when: 'active' });
  });
});

describe('behind its closed gate (a history recorded before the change)', () => {
  const persistBoth = (id: string, agentId: string) =>
    input(id, { agentId, type: 'reactive', ifActive: { behavior: 'persist' }, ifIdle: { behavior: 'persist' } });

  it('queues a persist for another agent behind the active run, as before, and asks the gate only then', () => {
    let asked = 0;
    const closed: ThreadGates = { ...openGates, stateIndependentActions: () => (asked++, false) };
    const thread = threadIn('active', closed);
    expect(thread.accept(persistBoth('same', 'a')).action).toBe('persist');
    expect(asked).toBe(0);
    expect(thread.accept(persistBoth('other', 'b')).action).toBe('queued');
    expect(asked).toBe(1);
    expect(thread.queue).toHaveLength(1);
  });

  it('refuses a persist while the run has maxPendingInputs waiting, as before', () => {
    const closed: ThreadGates = { ...openGates, stateIndependentActions: () => false };
    const thread = threadIn('pending-full', closed);
    expect(refusal(() => thread.validate(persistBoth('full', 'a'))).details).toMatchObject({
      limit: 'maxPendingInputs',
    });
    // An update validator passes the open gates: Temporal never replays it.
    expect(() => thread.validate(persistBoth('full', 'a'), openGates)).not.toThrow();
  });
});
