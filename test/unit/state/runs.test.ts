import { describe, expect, it } from 'vitest';
import { input, newThread, refusal, stepResult, types } from './support';

const call = (id: string) => ({ toolCallId: id, toolName: 'x', input: {} });

describe('routing inputs (behaviour §2.1, §2.2)', () => {
  it('wakes an idle thread: the run starts with the input pending', () => {
    const { thread } = newThread();
    expect(thread.accept(input('m1'))).toEqual({ accepted: true, action: 'wake', runId: 'id-1', signalId: 'm1' });
    expect(thread.takeOutbox().map((e) => [e.type, e.payload])).toEqual([['start', { runId: 'id-1', agentId: 'a' }]]);
    expect(thread.view().activeRun).toMatchObject({ runId: 'id-1', pendingInputs: 1, status: 'running' });
  });

  it('delivers to the active run at its next step, queues `queue` inputs and wakes for other agents behind it', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    expect(thread.accept(input('m2')).action).toBe('deliver');
    expect(thread.accept(input('q1', { delivery: 'queue' }))).toMatchObject({ action: 'queued', runId: 'id-2' });
    expect(thread.accept(input('o1', { agentId: 'other' }))).toMatchObject({ action: 'queued', runId: 'id-3' });
    expect(thread.view().queue).toEqual([
      { runId: 'id-2', agentId: 'a', inputIds: ['q1'] },
      { runId: 'id-3', agentId: 'other', inputIds: ['o1'] },
    ]);
    expect(types(thread.takeOutbox())).toEqual(['start', 'queue-updated', 'queue-updated']);
    expect(thread.planStep().messages.map((m) => m.id)).toEqual(['m1', 'm2']);
  });

  it('an interrupt joins the run and asks the main loop to cancel the step in flight', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    const plan = thread.planStep();
    expect(thread.accept(input('stop', { ifActive: { behavior: 'interrupt' } }))).toMatchObject({
      action: 'interrupt',
      runId: 'id-1',
    });
    expect(thread.run!.interruptRequested).toBe(true);
    thread.interruptStep(plan);
    expect(types(thread.takeOutbox())).toEqual(['step-interrupted']);
    const next = thread.planStep();
    expect(thread.run!.interruptRequested).toBe(false);
    expect(next.messages.map((m) => m.id)).toEqual(['m1', 'stop']);
  });

  it('persists while active without joining the run, and discards', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    thread.takeOutbox();
    expect(thread.accept(input('p', { ifActive: { behavior: 'persist' } })).action).toBe('persist');
    expect(thread.accept(input('d', { ifActive: { behavior: 'discard' } })).action).toBe('discard');
    expect(thread.messages.map((m) => m.id)).toEqual(['p']);
    expect(thread.takeOutbox().map((e) => e.payload)).toEqual([expect.objectContaining({ id: 'p', persisted: true })]);
    expect(thread.view().activeRun!.pendingInputs).toBe(1);
  });

  it('refuses inputs beyond the queue and pending limits, naming the limit', () => {
    const { thread } = newThread({ maxQueueLength: 1, maxPendingInputs: 1 });
    thread.accept(input('m1'));
    thread.accept(input('q1', { delivery: 'queue' }));
    expect(refusal(() => thread.validate(input('q2', { delivery: 'queue' })))).toMatchObject({
      type: 'InputRejected',
      details: { limit: 'maxQueueLength', value: 1 },
      message: expect.stringMatching(/queue is full/),
    });
    expect(refusal(() => thread.validate(input('m2')))).toMatchObject({
      type: 'InputRejected',
      details: { limit: 'maxPendingInputs', value: 1 },
    });
    // An input the thread already took is answered as a duplicate, not refused.
    expect(() => thread.validate(input('m1'))).not.toThrow();
  });

  it('refuses an input over maxInputBytes as JSON, counting UTF-8 bytes, whatever its behaviour', () => {
    const { thread } = newThread({ maxInputBytes: 1_000 });
    const persist = { ifIdle: { behavior: 'persist' as const }, ifActive: { behavior: 'persist' as const } };
    expect(refusal(() => thread.validate(input('big', { contents: 'é'.repeat(450), ...persist })))).toMatchObject({
      type: 'InputTooLarge',
      details: { limit: 'maxInputBytes', value: 1_000, bytes: expect.any(Number) },
      message: expect.stringMatching(/^The input is \d+ bytes as JSON; this thread takes at most 1000/),
    });
    expect(() => thread.validate(input('small', { contents: 'e'.repeat(450) }))).not.toThrow();
    expect(thread.messages).toEqual([]);
  });
});

describe('runs', () => {
  it('asks the model again while tool calls come back, up to the run’s maxSteps', () => {
    const { thread } = newThread();
    thread.accept(input('m1', { ifIdle: { streamOptions: { maxSteps: 2 } } }));
    const tools = stepResult([call('c1')]);
    thread.completeStep(thread.planStep(), tools);
    expect(thread.shouldContinue(tools)).toBe(true);
    thread.completeStep(thread.planStep(), tools);
    expect(thread.shouldContinue(tools)).toBe(false);
    thread.finishRun('max-steps');
    expect(thread.takeOutbox().at(-1)).toMatchObject({ type: 'finish', payload: { reason: 'max-steps', steps: 2 } });
  });

  it('stores the step: processor signals, then the assistant message (none when it said nothing)', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    const plan = thread.planStep();
    thread.completeStep(plan, stepResult([], ''));
    expect(thread.messages.map((m) => m.id)).toEqual(['m1']);
    thread.completeStep(plan, stepResult([], 'hi'));
    expect(thread.messages.at(-1)).toEqual({
      id: 'a:1',
      role: 'assistant',
      runId: 'id-1',
      stepNumber: 1,
      content: [{ type: 'text', text: 'hi' }],
      at: 1_000,
    });
  });

  it('refuses to plan a step without a run', () => {
    const { thread } = newThread();
    expect(() => thread.planStep()).toThrow(/without an active run/);
  });

  it('a failed run reports the error, and the inputs it did not answer start the next run', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    thread.planStep();
    thread.accept(input('m2'));
    thread.finishRun('error', 'boom');
    expect(types(thread.takeOutbox())).toEqual(['error', 'finish', 'queue-updated']);
    expect(thread.view()).toMatchObject({ status: 'idle', runsCompleted: 1 });
    expect(thread.view().queue).toEqual([{ runId: 'id-2', agentId: 'a', inputIds: ['m2'] }]);
    expect(thread.hasWork()).toBe(true);
    expect(thread.startNextQueued()).toBe(true);
    expect(thread.startNextQueued()).toBe(false);
    expect(thread.run!.runId).toBe('id-2');
  });
});

describe('abort and cancellation', () => {
  it('abort ends the run; inputs waiting for it, then the queue, go next', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    thread.planStep();
    thread.accept(input('m2'));
    thread.accept(input('q1', { delivery: 'queue' }));
    thread.takeOutbox();
    expect(thread.requestAbort(false)).toEqual({ aborted: true, runId: 'id-1', clearedSignalIds: [] });
    expect(thread.hasWork()).toBe(true);
    thread.abortRun();
    expect(thread.takeOutbox().map((e) => [e.type, e.payload])).toEqual([
      ['abort', { runId: 'id-1', steps: 1 }],
      [
        'queue-updated',
        {
          queue: [
            { runId: 'id-3', agentId: 'a', inputIds: ['m2'] },
            { runId: 'id-2', agentId: 'a', inputIds: ['q1'] },
          ],
        },
      ],
    ]);
    expect(thread.isActive()).toBe(false);
  });

  it('clearPendingSignals drops the inputs waiting for the run and every queued run', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    thread.planStep();
    thread.accept(input('m2'));
    thread.accept(input('q1', { delivery: 'queue' }));
    thread.takeOutbox();
    expect(thread.requestAbort(true)).toEqual({ aborted: true, runId: 'id-1', clearedSignalIds: ['m2', 'q1'] });
    expect(types(thread.takeOutbox())).toEqual(['queue-updated']);
    thread.abortRun();
    expect(types(thread.takeOutbox())).toEqual(['abort']);
    expect(thread.view().queue).toEqual([]);
  });

  it('abort on an idle thread aborts nothing but still clears the queue when asked', () => {
    const { thread } = newThread();
    expect(thread.requestAbort(true)).toEqual({ aborted: false, clearedSignalIds: [] });
    expect(thread.takeOutbox()).toEqual([]);
  });

  it('cancels queued runs by any of their input ids, and only those', () => {
    const { thread } = newThread();
    thread.accept(input('m1'));
    thread.accept(input('q1', { delivery: 'queue' }));
    thread.accept(input('q2', { delivery: 'queue' }));
    thread.takeOutbox();
    expect(thread.cancelQueued(['nope'])).toEqual([]);
    expect(thread.takeOutbox()).toEqual([]);
    expect(thread.cancelQueued(['q1', 'm1'])).toEqual(['q1']);
    expect(thread.takeOutbox().map((e) => e.payload)).toEqual([
      { queue: [{ runId: 'id-3', agentId: 'a', inputIds: ['q2'] }] },
    ]);
  });
});
