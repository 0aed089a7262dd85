/**
 * The pure halves of Mastra compatibility (docs/mastra-compat.md): the aliases `toWireEvent` adds to every streamed
 * event (G3), the request mapping of Mastra's fields (G5), and the send answer Mastra's client expects (G4). No
 * Temporal, no HTTP: `mastra-compat.test.ts` drives the same code with the real client.
 */
import { describe, expect, it } from 'vitest';
import type { ThreadEvent } from '../../protocol/events';
import {
  echoOf,
  fromMastraApprovalBody,
  fromMastraSendBody,
  mastraSendAnswer,
  takeCreatedAt,
} from '../../gateway/mastra-requests';
import { withDefaultResource } from '../../gateway/route';
import { toWireEvent } from '../../gateway/wire-event';
import { isValidationError } from '../../protocol/errors';

const at = Date.UTC(2025, 0, 2, 3, 4, 5);
const event = (type: ThreadEvent['type'], payload: unknown): ThreadEvent => ({
  id: '7',
  threadKey: 'r1:t1',
  runId: 'run-1',
  type,
  payload,
  at,
});

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    if (isValidationError(err)) return err.message;
    throw err;
  }
  throw new Error('Expected a ValidationError.');
}

describe('toWireEvent', () => {
  it('keeps every Threadline field and adds from: AGENT to every event', () => {
    for (const type of ['start', 'text-delta', 'queue-updated', 'snapshot'] as const) {
      const original = event(type, { id: 't0', text: 'Hi' });
      expect(toWireEvent(original)).toEqual({ ...original, from: 'AGENT' });
    }
    expect(toWireEvent(event('abort', null))).toEqual({ ...event('abort', null), from: 'AGENT' });
  });

  it("adds Mastra's payload names beside Threadline's", () => {
    const call = { toolCallId: 'c1', toolName: 'deleteRepo', input: { repo: 'a/b' } };
    expect(toWireEvent(event('tool-call', call)).payload).toEqual({ ...call, args: { repo: 'a/b' } });
    const asked = { toolCallId: 'c1', toolName: 'deleteRepo', args: { repo: 'a/b' }, status: 'waiting' };
    expect(toWireEvent(event('tool-call-approval', asked)).payload).toEqual({ ...asked, resumeSchema: '{}' });
    const result = { type: 'tool-result', toolCallId: 'c1', toolName: 'deleteRepo', output: 'deleted a/b' };
    expect(toWireEvent(event('tool-result', result)).payload).toEqual({ ...result, result: 'deleted a/b' });
    expect(toWireEvent(event('error', { message: 'boom' })).payload).toEqual({ message: 'boom', error: 'boom' });
  });

  it('gives step-finish and finish a stepResult.reason and output.usage', () => {
    const step = { stepNumber: 1, finishReason: 'tool-calls', usage: { inputTokens: 10, outputTokens: 3 } };
    expect(toWireEvent(event('step-finish', step)).payload).toEqual({
      ...step,
      stepResult: { reason: 'tool-calls' },
      output: { usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 } },
    });
    const reasons = { stop: 'stop', error: 'error', 'max-steps': 'tool-calls' };
    for (const [reason, mastra] of Object.entries(reasons)) {
      const finish = { runId: 'run-1', reason, steps: 2 };
      expect(toWireEvent(event('finish', finish)).payload).toEqual({
        ...finish,
        stepResult: { reason: mastra },
        output: { usage: {} },
      });
    }
  });

  it('puts input echoes in data, with an ISO createdAt', () => {
    const echo = { id: 's1', type: 'reactive', tagName: 'system-reminder', contents: 'be brief', persisted: true };
    for (const type of ['data-signal', 'data-user-message'] as const) {
      const wire = toWireEvent(event(type, echo));
      expect(wire.payload).toEqual(echo);
      expect(wire.data).toEqual({ ...echo, createdAt: '2025-01-02T03:04:05.000Z' });
    }
  });

  it('does not change the event it is given', () => {
    const original = event('tool-call', { toolCallId: 'c1', toolName: 'x', input: 1 });
    const copy = structuredClone(original);
    toWireEvent(original);
    expect(original).toEqual(copy);
  });
});

describe("Mastra's request fields", () => {
  const thread = { resourceId: 'r1', threadId: 't1' };

  it('maps ifIdle.streamOptions: requestContext → runtimeContext, meaningless keys and maxRetries dropped', () => {
    const body = {
      ...thread,
      message: 'x',
      ifIdle: {
        behavior: 'wake',
        streamOptions: {
          requestContext: { tenant: 'acme' },
          memory: { thread: 't1', resource: 'r1' },
          tracingOptions: {},
          clientTools: undefined,
          modelSettings: { temperature: 0.2, maxRetries: 4 },
          maxSteps: 3,
        },
      },
    };
    expect(fromMastraSendBody(body)).toEqual({
      ...thread,
      message: 'x',
      ifIdle: {
        behavior: 'wake',
        streamOptions: { runtimeContext: { tenant: 'acme' }, modelSettings: { temperature: 0.2 }, maxSteps: 3 },
      },
    });
    // Threadline's own bodies pass unchanged.
    const own = { ...thread, message: 'x', ifIdle: { streamOptions: { runtimeContext: { a: 1 }, maxSteps: 2 } } };
    expect(fromMastraSendBody(own)).toEqual(own);
  });

  it('refuses, naming the field, what would change the run if it were ignored', () => {
    const send = (streamOptions: object) => () =>
      fromMastraSendBody({ ...thread, message: 'x', ifIdle: { streamOptions } });
    expect(refusal(send({ clientTools: { lookup: {} } }))).toMatch(
      /^ifIdle\.streamOptions\.clientTools is not supported by Threadline: tools run on the worker/,
    );
    expect(refusal(send({ requireToolApproval: true }))).toMatch(/requireToolApproval is not supported/);
    expect(refusal(send({ requestContext: {}, runtimeContext: {} }))).toMatch(/not both/);
    expect(refusal(() => fromMastraSendBody({ runId: 'run-1', message: 'x' }))).toBe(
      'Threadline addresses threads by resourceId and threadId; send them along with runId.',
    );
    const part = { type: 'text', text: 'x', providerOptions: { openai: {} } };
    expect(refusal(() => fromMastraSendBody({ ...thread, message: [part] }))).toMatch(
      /^message\[0\]\.providerOptions:/,
    );
    expect(refusal(() => fromMastraSendBody({ ...thread, message: { contents: ['y', part] } }))).toMatch(
      /^message\.contents\[1\]\.providerOptions:/,
    );
    expect(refusal(() => fromMastraSendBody({ ...thread, signal: { type: 'user', contents: [part] } }))).toMatch(
      /^signal\.contents\[0\]\.providerOptions:/,
    );
    expect(refusal(() => fromMastraApprovalBody({ ...thread, toolCallId: 'c', approved: true, messages: [] }))).toMatch(
      /client tools are not supported by Threadline/,
    );
    expect(
      refusal(() => fromMastraApprovalBody({ ...thread, toolCallId: 'c', approved: true, streamOptions: {} })),
    ).toMatch(/^streamOptions:/);
  });

  it('takes signal.createdAt off the signal as an ISO string, and refuses one that is no date', () => {
    expect(takeCreatedAt({ type: 'user', contents: 'x', createdAt: '2025-01-02T03:04:05Z' })).toEqual({
      signal: { type: 'user', contents: 'x' },
      createdAt: '2025-01-02T03:04:05.000Z',
    });
    expect(takeCreatedAt({ type: 'user', contents: 'x' })).toEqual({ signal: { type: 'user', contents: 'x' } });
    expect(refusal(() => takeCreatedAt({ type: 'user', contents: 'x', createdAt: 'yesterday' }))).toMatch(
      /createdAt: must be an ISO 8601 date string/,
    );
  });

  it("defaults resourceId to the key's only resource, else asks for it", () => {
    const one = { id: 'key:1', resources: new Set(['tenant-a']) };
    expect(withDefaultResource({ threadId: 't1' }, one)).toEqual({ resourceId: 'tenant-a', threadId: 't1' });
    expect(withDefaultResource({ resourceId: 'x', threadId: 't1' }, one)).toEqual({ resourceId: 'x', threadId: 't1' });
    const message = 'resourceId is required: a Threadline thread is (resourceId, threadId).';
    expect(refusal(() => withDefaultResource({ threadId: 't1' }, { id: 'ip', resources: '*' }))).toBe(message);
    const two = { id: 'key:2', resources: new Set(['a', 'b']) };
    expect(refusal(() => withDefaultResource({ threadId: 't1' }, two))).toBe(message);
  });
});

describe("the send answer Mastra's client expects", () => {
  const now = new Date('2025-01-02T03:04:05.000Z');

  it('always has a runId: the run, or the signal id when no run is involved', () => {
    const woke = mastraSendAnswer(
      { accepted: true, action: 'wake', runId: 'run-1', signalId: 's1' },
      echoOf('message', 'Hi'),
      now,
    );
    expect(woke).toEqual({
      accepted: true,
      action: 'wake',
      runId: 'run-1',
      signalId: 's1',
      signal: { id: 's1', type: 'user', contents: 'Hi', createdAt: '2025-01-02T03:04:05.000Z' },
    });
    const kept = mastraSendAnswer(
      { accepted: true, action: 'persist', signalId: 's2' },
      echoOf(
        'signal',
        { type: 'system-reminder', contents: 'x', tagName: 'note', attributes: { a: 1 } },
        '2024-12-31T00:00:00.000Z',
      ),
      now,
    );
    expect(kept).toEqual({
      accepted: true,
      action: 'persist',
      runId: 's2',
      signalId: 's2',
      signal: {
        id: 's2',
        type: 'reactive',
        tagName: 'note',
        contents: 'x',
        attributes: { a: 1 },
        createdAt: '2024-12-31T00:00:00.000Z',
      },
    });
    const parts = [{ type: 'text', text: 'Hi' }];
    expect(echoOf('message', parts)).toEqual({ type: 'user', contents: parts });
    expect(echoOf('message', { id: 'm1', contents: 'Hi', metadata: { k: 1 } })).toEqual({
      type: 'user',
      contents: 'Hi',
      metadata: { k: 1 },
    });
  });
});
