/**
 * Inputs nested deeper than `maxInputDepth` (default 64) are refused at ingress (docs/fuzzing.md, finding 9): the HTTP
 * fuzzer's `queue-message` with a message part nested ~11,000 levels deep was accepted by Temporal, and the gateway's
 * answer (which echoes the input) overflowed the stack in `JSON.stringify`: a 500 after the input was stored.
 */
import { describe, expect, it } from 'vitest';
import { messageInput, notificationBatch, signalInput } from '../../client/inputs';
import { ValidationError } from '../../protocol/errors';
import { defaultLimits, nestedDeeperThan } from '../../protocol/schemas';

/** `{ k: [ { k: [ … ] } ] }`, `levels` arrays and objects deep, as the fuzzer's `deep` mutation builds it. */
function deep(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

const target = { resourceId: 'r', threadId: 't' };

describe('input nesting depth', () => {
  it('counts levels of arrays and objects, iteratively', () => {
    expect(nestedDeeperThan('text', 0)).toBe(false);
    expect(nestedDeeperThan({ a: [1] }, 2)).toBe(false);
    expect(nestedDeeperThan({ a: [1] }, 1)).toBe(true);
    expect(nestedDeeperThan(deep(64), 64)).toBe(false);
    expect(nestedDeeperThan(deep(65), 64)).toBe(true);
    expect(nestedDeeperThan(deep(200_000), 64)).toBe(true); // no recursion to overflow
  });

  it('refuses a message nested ~11,000 levels (the depth the fuzzer sent) with a 400 naming the limit', () => {
    const message = { contents: 'hi', metadata: { nested: deep(11_000) } } as never;
    for (const delivery of ['send', 'queue'] as const) {
      expect(() => messageInput('tester', delivery, message, target)).toThrow(ValidationError);
      expect(() => messageInput('tester', delivery, message, target)).toThrow(
        /deeper than 64 levels \(maxInputDepth\)/,
      );
    }
  });

  it('refuses deep signals and notifications; a configured limit applies', () => {
    const signal = { type: 'user', contents: 'hi', metadata: { nested: deep(100) } } as never;
    expect(() => signalInput('tester', signal, target)).toThrow(/maxInputDepth/);
    const notification = { source: 'ci', kind: 'build', summary: 'x', payload: deep(100) } as never;
    expect(() => notificationBatch('tester', notification, target)).toThrow(/maxInputDepth/);
    const shallow = { type: 'user', contents: 'hi', metadata: { nested: deep(10) } } as never;
    expect(() => signalInput('tester', shallow, target)).not.toThrow();
    const limits = { ...defaultLimits, maxInputDepth: 8 };
    expect(() => signalInput('tester', shallow, target, { limits })).toThrow(/deeper than 8 levels/);
  });
});
