import { describe, expect, it } from 'vitest';
import type { ThreadInput } from '../../protocol/schemas';
import type { StoredMessage } from '../../protocol/messages';
import { emptySnapshot, selectWindow, ThreadState } from '../../workflows/state';
import { resolveThreadConfig, type ThreadConfigInput } from '../../protocol/thread-config';

function thread(config: ThreadConfigInput = {}) {
  let n = 0;
  return new ThreadState(emptySnapshot('r', 't'), resolveThreadConfig(config), {
    now: () => 1_000,
    newId: () => `run-${++n}`,
  });
}

const input = (id: string, extra: Partial<ThreadInput> = {}): ThreadInput => ({
  id,
  agentId: 'a',
  delivery: 'send',
  type: 'user',
  contents: id,
  ...extra,
});

const noTools = { content: [{ type: 'text' as const, text: 'ok' }], toolCalls: [], finishReason: 'stop', usage: {} };

describe('ThreadState.accept', () => {
  it('wakes an idle thread, delivers to the active run, queues behind it', () => {
    const s = thread();
    expect(s.accept(input('m1'))).toEqual({ accepted: true, action: 'wake', runId: 'run-1', signalId: 'm1' });
    expect(s.accept(input('m2'))).toEqual({ accepted: true, action: 'deliver', runId: 'run-1', signalId: 'm2' });
    expect(s.accept(input('q1', { delivery: 'queue' }))).toEqual({
      accepted: true,
      action: 'queued',
      runId: 'run-2',
      signalId: 'q1',
    });
  });

  it('returns the first result with duplicate: true for a repeated id', () => {
    const s = thread();
    const first = s.accept(input('m1'));
    expect(s.accept(input('m1', { contents: 'changed' }))).toEqual({ ...first, duplicate: true });
    expect(s.run!.pending).toHaveLength(1);
  });

  it('forgets the oldest ids beyond rememberInputs', () => {
    const s = thread({ rememberInputs: 2 });
    s.accept(input('a'));
    s.accept(input('b'));
    s.accept(input('c'));
    expect(s.accept(input('a')).duplicate).toBeUndefined();
    expect(s.accept(input('c')).duplicate).toBe(true);
  });

  it('queues a wake for another agent while a run is active', () => {
    const s = thread();
    s.accept(input('m1'));
    expect(s.accept(input('m2', { agentId: 'other' })).action).toBe('queued');
  });

  it('merges branch attributes according to the state when accepted, also for queued messages', () => {
    const s = thread();
    s.accept(input('m1', { attributes: { a: 1 }, ifIdle: { attributes: { delivery: 'while-idle' } } }));
    s.accept(
      input('q1', { delivery: 'queue', attributes: { a: 1 }, ifActive: { attributes: { delivery: 'while-active' } } }),
    );
    expect(s.run!.pending[0].input.attributes).toEqual({ a: 1, delivery: 'while-idle' });
    expect(s.queue[0].inputs[0].input.attributes).toEqual({ a: 1, delivery: 'while-active' });
  });

  it('persists without a run, discards, and reports discard for a transient persist', () => {
    const s = thread();
    expect(s.accept(input('p', { ifIdle: { behavior: 'persist' } })).action).toBe('persist');
    expect(s.accept(input('d', { ifIdle: { behavior: 'discard' } })).action).toBe('discard');
    expect(s.accept(input('tp', { transient: true, ifIdle: { behavior: 'persist' } })).action).toBe('discard');
    expect(s.isActive()).toBe(false);
    expect(s.messages.map((m) => m.id)).toEqual(['p']);
  });
});

describe('ThreadState runs', () => {
  it('turns each pending input into its own turn at the step boundary, then finishes when nothing waits', () => {
    const s = thread();
    s.accept(input('m1'));
    s.accept(input('m2'));
    const plan = s.planStep();
    expect(plan.messages.map((m) => m.id)).toEqual(['m1', 'm2']);
    expect(plan.preEvents.map((e) => e.type)).toEqual(['start', 'data-user-message', 'data-user-message']);
    s.completeStep(plan, noTools);
    s.accept(input('m3'));
    expect(s.shouldContinue(noTools)).toBe(true);
    const second = s.planStep();
    expect(second.messages.map((m) => m.id)).toEqual(['m1', 'm2', 'a:1', 'm3']);
    s.completeStep(second, noTools);
    expect(s.shouldContinue(noTools)).toBe(false);
    s.finishRun('stop');
    expect(s.isActive()).toBe(false);
  });

  it('starts queued runs in order once idle', () => {
    const s = thread();
    s.accept(input('m1'));
    s.accept(input('q1', { delivery: 'queue' }));
    s.accept(input('q2', { delivery: 'queue' }));
    s.completeStep(s.planStep(), noTools);
    s.finishRun('stop');
    expect(s.startNextQueued()).toBe(true);
    expect(s.run!.pending.map((p) => p.input.id)).toEqual(['q1']);
  });

  it('does not lose inputs of a run that failed before answering them', () => {
    const s = thread();
    s.accept(input('m1'));
    s.planStep();
    s.accept(input('m2'));
    s.finishRun('error', 'boom');
    expect(s.queue.map((q) => q.inputs.map((i) => i.input.id))).toEqual([['m2']]);
  });

  it('keeps transient inputs out of the stored conversation', () => {
    const s = thread();
    s.accept(input('m1'));
    s.accept(input('t1', { transient: true }));
    const plan = s.planStep();
    expect(plan.transient.map((m) => m.id)).toEqual(['t1']);
    expect(s.messages.map((m) => m.id)).toEqual(['m1']);
  });

  it('rejects inputs beyond the queue and pending limits with a clear message', () => {
    const s = thread({ maxQueueLength: 1, maxPendingInputs: 1 });
    s.accept(input('m1'));
    s.accept(input('q1', { delivery: 'queue' }));
    expect(() => s.validate(input('q2', { delivery: 'queue' }))).toThrow(/queue is full \(1 queued runs\)/);
    s.accept(input('m2'));
    s.planStep();
    s.accept(input('m3'));
    expect(() => s.validate(input('m4'))).toThrow(/1 inputs waiting/);
  });

  it('survives a snapshot round trip (continue-as-new) with everything', () => {
    const s = thread();
    s.accept(input('m1'));
    s.accept(input('q1', { delivery: 'queue' }));
    const copy = new ThreadState(JSON.parse(JSON.stringify(s.snapshot())), resolveThreadConfig({}), {
      now: () => 2_000,
      newId: () => 'x',
    });
    expect(copy.view()).toEqual(s.view());
    expect(copy.accept(input('m1')).duplicate).toBe(true);
  });
});

describe('selectWindow', () => {
  const msg = (id: string, role: StoredMessage['role'] = 'user'): StoredMessage =>
    role === 'tool'
      ? { id, role, runId: 'r', content: [], at: 0 }
      : role === 'assistant'
        ? { id, role, runId: 'r', stepNumber: 1, content: [], at: 0 }
        : { id, role, type: 'user', contents: id, at: 0 };

  it('keeps the newest messages within the count', () => {
    const all = ['a', 'b', 'c', 'd'].map((id) => msg(id));
    expect(selectWindow(all, { maxMessages: 2, maxBytes: 1e9 }).map((m) => m.id)).toEqual(['c', 'd']);
  });

  it('never starts on a tool result', () => {
    const all = [msg('u'), msg('a', 'assistant'), msg('t', 'tool'), msg('u2')];
    expect(selectWindow(all, { maxMessages: 2, maxBytes: 1e9 }).map((m) => m.id)).toEqual(['u2']);
  });

  it('keeps within the byte budget but always the newest message', () => {
    const all = [msg('x'.repeat(100)), msg('y'.repeat(100))];
    expect(selectWindow(all, { maxMessages: 10, maxBytes: 50 }).map((m) => m.id)).toEqual(['y'.repeat(100)]);
  });
});

describe('notification digests (behaviour §4.2)', () => {
  it('a key that keeps repeating does not postpone its digest: one summary per window', () => {
    let now = 0;
    let n = 0;
    const s = new ThreadState(emptySnapshot('r', 't'), resolveThreadConfig({ digestWindowMs: 1_000 }), {
      now: () => now,
      newId: () => `id-${++n}`,
    });
    const send = (i: number) =>
      s.acceptNotifications({
        id: `b${i}`,
        agentId: 'a',
        notifications: [{ source: 'github', kind: 'ci', priority: 'low', summary: `#${i}`, dedupeKey: 'k' }],
      });
    const summaries: number[] = [];
    for (let i = 0; now <= 5_000; i++, now += 300) {
      send(i);
      s.dispatchNotifications();
      for (const e of s.takeOutbox()) {
        if (e.type === 'data-signal' && (e.payload as { tagName?: string }).tagName === 'notification-summary')
          summaries.push(e.at);
      }
      // The digest is due within a window of the first send after the previous one, whatever was sent since.
      const [record] = s.listNotifications().notifications;
      if (record.summaryAt !== undefined) expect(record.summaryAt - now).toBeLessThanOrEqual(1_000);
    }
    // Windows open at the first send after a digest (0, 1,500, 3,000) and close a second later; this loop dispatches
    // every 300 ms, as the workflow's timer would exactly on time. Before, each coalesce pushed the digest back.
    expect(summaries).toEqual([1_200, 2_700, 4_200]);
  });
});
