/**
 * The thread target schema refuses ids Temporal could not take as a workflow id: not well-formed Unicode, or too
 * long once percent-encoded (Temporal counts the encoded bytes, not the characters).
 */
import { describe, expect, it } from 'vitest';
import { MAX_WORKFLOW_ID_BYTES, threadKey } from '../../protocol/ids';
import { describeZodError, threadTargetSchema } from '../../protocol/schemas';
import { ValidationError } from '../../protocol/errors';

const problem = (target: { resourceId: string; threadId: string }) => {
  const parsed = threadTargetSchema.safeParse(target);
  return parsed.success ? null : describeZodError(parsed.error);
};

describe('threadTargetSchema', () => {
  it('refuses a lone surrogate in either id, naming the field; accepts paired ones', () => {
    expect(problem({ resourceId: 'r', threadId: '\ud800' })).toMatch(/^threadId: must be well-formed Unicode/);
    expect(problem({ resourceId: 'x\udfffy', threadId: 't' })).toMatch(/^resourceId: must be well-formed Unicode/);
    expect(problem({ resourceId: 'r', threadId: '😀 ünï' })).toBeNull();
  });

  it('bounds the encoded workflow id, not the characters, and keeps the 256-character limit', () => {
    expect(problem({ resourceId: 'r', threadId: '😀'.repeat(100) })).toMatch(
      new RegExp(`^threadId: makes a workflow id of 1209 bytes .*at most ${MAX_WORKFLOW_ID_BYTES}`),
    );
    expect(problem({ resourceId: 'r', threadId: '😀'.repeat(82) })).toBeNull();
    expect(problem({ resourceId: 'r', threadId: 'a'.repeat(257) })).toMatch(/^threadId: Too big/);
    expect(problem({ resourceId: 'r', threadId: 'a'.repeat(256) })).toBeNull();
  });

  it('threadKey refuses a lone surrogate with a ValidationError, not a URIError', () => {
    expect(() => threadKey('r', '\ud800')).toThrow(ValidationError);
    expect(threadKey('r', '😀').length).toBe('thread:r:%F0%9F%98%80'.length);
  });
});
