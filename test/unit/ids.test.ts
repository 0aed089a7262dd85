import { describe, expect, it } from 'vitest';
import { parseThreadKey, threadKey } from '../../protocol/ids';

describe('threadKey', () => {
  it('never collides for ids containing the separators', () => {
    const pairs: [string, string][] = [
      ['a:b', 'c'],
      ['a', 'b:c'],
      ['a/b', 'c'],
      ['a', 'b/c'],
      ['a%3Ab', 'c'],
      ['a', '%3Ab:c'],
    ];
    const keys = pairs.map(([r, t]) => threadKey(r, t));
    expect(new Set(keys).size).toBe(pairs.length);
  });

  it('round-trips', () => {
    for (const [r, t] of [
      ['user:1', 'th/2'],
      ["o'neil (x)", 'ünïcødé ✓'],
      ['~!*', '%'],
    ]) {
      expect(parseThreadKey(threadKey(r, t))).toEqual({ resourceId: r, threadId: t });
    }
  });
});
