import { describe, expect, it } from 'vitest';
import { ThreadState, emptySnapshot } from '../../../workflows/state';
import { fakeClock, input, newThread } from './support';

describe('the thread view', () => {
  it('shows an idle, empty thread', () => {
    const { thread } = newThread();
    expect(thread.view()).toEqual({
      resourceId: 'r',
      threadId: 't',
      status: 'idle',
      activeRun: null,
      queue: [],
      messageCount: 0,
      runsCompleted: 0,
      lanes: [],
      inbox: { total: 0, pending: 0, delivered: 0, seen: 0, dismissed: 0, archived: 0, discarded: 0, failed: 0 },
    });
  });

  it('shows the active run, the queue and the conversation size', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    thread.planStep();
    thread.accept(input('m2'));
    thread.accept(input('q1', { delivery: 'queue' }));
    expect(thread.view()).toMatchObject({
      status: 'active',
      activeRun: { runId: 'id-1', agentId: 'a', stepNumber: 1, pendingInputs: 1, status: 'running', approvals: [] },
      queue: [{ runId: 'id-2', agentId: 'a', inputIds: ['q1'] }],
      messageCount: 1,
    });
  });

  it('is the same after continue-as-new, which starts from a snapshot with every field', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    thread.acceptNotifications({ id: 'b1', agentId: 'a', notifications: [{ source: 's', kind: 'k', summary: 'x' }] });
    const snapshot = JSON.parse(JSON.stringify(thread.snapshot()));
    expect(Object.keys(snapshot).sort()).toEqual(Object.keys(emptySnapshot('r', 't')).sort());
    const copy = new ThreadState(snapshot, thread.config, fakeClock());
    expect(copy.view()).toEqual(thread.view());
    expect(copy.acceptNotifications({ id: 'b1', agentId: 'a', notifications: [] }).duplicate).toBe(true);
  });
});
