/**
 * The thread bounds the nesting of what it takes (`maxInputDepth`, 64 levels), not only its clients and the gateway:
 * a raw Temporal sender bypasses both. An input, a notification or an approval's `resumeData` nested deeper is an
 * `InvalidInput` refusal, before anything serializes it; behind the closed gate (a history recorded before), a
 * signalled one is taken as it was then.
 */
import { describe, expect, it } from 'vitest';
import type { NotificationBatch } from '../../../protocol/schemas';
import { defaultThreadConfig, resolveThreadConfig } from '../../../protocol/thread-config';
import { emptySnapshot, openGates, ThreadState, type ThreadGates } from '../../../workflows/state';
import { nested } from '../../support/raw-payloads';
import { fakeClock, input, newThread, refusal } from './support';

const batch = (id: string, payload: unknown): NotificationBatch => ({
  id,
  agentId: 'a',
  notifications: [{ source: 'ci', kind: 'log', summary: 'a log', payload, priority: 'low' }],
});

describe('maxInputDepth in the thread', () => {
  it('is 64 levels by default, the clients’ limit', () => {
    expect(defaultThreadConfig.maxInputDepth).toBe(64);
  });

  it('takes an input exactly maxInputDepth levels deep and refuses one level more, naming the limit', () => {
    const { thread } = newThread();
    // The input object is level 1, metadata level 2: 62 more levels inside reach 64.
    expect(() => thread.validate(input('ok', { metadata: { deep: nested(62) } }))).not.toThrow();
    const refused = refusal(() => thread.validate(input('deep', { metadata: { deep: nested(63) } })));
    expect(refused.type).toBe('InvalidInput');
    expect(refused.message).toBe(
      "The input nests arrays and objects deeper than 64 levels (this thread's maxInputDepth). Send a flatter value.",
    );
    expect(refused.details).toEqual({ issues: refused.message });
  });

  it('refuses a value far too deep to serialize, before the size check could overflow the stack', () => {
    const { thread } = newThread();
    const value = nested(200_000);
    expect(() => JSON.stringify(value)).toThrow(RangeError);
    expect(refusal(() => thread.validate(input('abyss', { metadata: { value } }))).type).toBe('InvalidInput');
    expect(refusal(() => thread.validateNotifications(batch('abyss', value))).type).toBe('InvalidInput');
  });

  it('refuses a too-deep resend of an id the thread remembers', () => {
    const { thread } = newThread();
    thread.accept(input('seen'));
    expect(refusal(() => thread.validate(input('seen', { metadata: { deep: nested(100) } }))).type).toBe(
      'InvalidInput',
    );
  });

  it('bounds each notification of a send by itself, as the clients do', () => {
    const { thread } = newThread();
    // The notification object is level 1, payload level 2.
    expect(() => thread.validateNotifications(batch('ok', nested(63)))).not.toThrow();
    const refused = refusal(() => thread.validateNotifications(batch('deep', nested(64))));
    expect(refused.type).toBe('InvalidInput');
    expect(refused.message).toMatch(/^Notification 0 nests arrays and objects deeper than 64 levels/);
  });

  it('bounds an approval’s resumeData', () => {
    const { thread } = newThread();
    const refused = refusal(() =>
      thread.validateApproval({ toolCallId: 'call-1', approved: true, resumeData: nested(65) }),
    );
    expect(refused.type).toBe('InvalidInput');
    expect(refused.message).toMatch(/^resumeData nests arrays and objects deeper than 64 levels/);
    // Within the bound it is judged as before: no run waits for this call.
    expect(
      refusal(() => thread.validateApproval({ toolCallId: 'call-1', approved: true, resumeData: nested(64) })).type,
    ).toBe('ToolCallNotFound');
  });

  it('follows the thread’s own setting', () => {
    const { thread } = newThread({ maxInputDepth: 8 });
    expect(() => thread.validate(input('ok', { metadata: { deep: nested(6) } }))).not.toThrow();
    expect(refusal(() => thread.validate(input('deep', { metadata: { deep: nested(7) } }))).message).toMatch(
      /deeper than 8 levels/,
    );
  });

  describe('behind its closed gate (a history recorded before the change)', () => {
    it('takes a too-deep signalled input and notification as before, and asks the gate only for them', () => {
      let asked = 0;
      const closed: ThreadGates = { ...openGates, boundedInputDepth: () => (asked++, false) };
      const thread = new ThreadState(emptySnapshot('r', 't'), resolveThreadConfig({}), fakeClock(), closed);
      thread.validate(input('flat'));
      thread.validateNotifications(batch('flat', 'x'));
      expect(asked).toBe(0);
      thread.validate(input('deep', { metadata: { deep: nested(100) } }));
      thread.validateNotifications(batch('deep', nested(100)));
      expect(asked).toBe(2);
      // An update validator passes the open gates: Temporal never replays it.
      expect(refusal(() => thread.validate(input('deep', { metadata: { deep: nested(100) } }), openGates)).type).toBe(
        'InvalidInput',
      );
      expect(refusal(() => thread.validateNotifications(batch('deep', nested(100)), openGates)).type).toBe(
        'InvalidInput',
      );
    });
  });
});
