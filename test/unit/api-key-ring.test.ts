/**
 * gateway/auth.ts `ApiKeyRing.find`: a key is looked up by comparing its SHA-256 with every stored key's, each with
 * `timingSafeEqual` on equal-length buffers and no early exit, so the time taken says nothing about which key matched
 * or how much of a guess was right. Counted through the real `node:crypto`, wrapped.
 */
import type * as Crypto from 'node:crypto';
import fc from 'fast-check';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const compared = vi.hoisted(() => ({ lengths: [] as [number, number][] }));

vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof Crypto>();
  const timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    compared.lengths.push([a.byteLength, b.byteLength]);
    return crypto.timingSafeEqual(a, b);
  };
  return { ...crypto, default: { ...crypto, timingSafeEqual }, timingSafeEqual };
});

const { ApiKeyRing } = await import('../../gateway/auth');

/** Keys as THREADLINE_API_KEYS allows them: visible ASCII, no spaces. */
const apiKey = fc.stringMatching(/^[\x21-\x7e]{1,64}$/);

beforeEach(() => {
  compared.lengths = [];
});

describe('ApiKeyRing.find', () => {
  it('compares with every stored key, 32 bytes each, whether the key is first, last or unknown', () => {
    fc.assert(
      fc.property(fc.uniqueArray(apiKey, { minLength: 1, maxLength: 12 }), apiKey, fc.nat(), (stored, guess, pick) => {
        const ring = new ApiKeyRing(Object.fromEntries(stored.map((key, i) => [key, [`tenant-${i}`]])));
        for (const key of [stored[pick % stored.length], stored[0], stored[stored.length - 1], guess]) {
          compared.lengths = [];
          const caller = ring.find(key);
          expect(compared.lengths).toHaveLength(stored.length);
          expect(compared.lengths.every(([a, b]) => a === 32 && b === 32)).toBe(true);
          const index = stored.indexOf(key);
          if (index === -1) expect(caller).toBeUndefined();
          else expect(caller?.resources).toEqual(new Set([`tenant-${index}`]));
        }
      }),
      { numRuns: 200 },
    );
  });

  it("names a caller by its key's hash, never by the key", async () => {
    const { createHash } = await import('node:crypto');
    fc.assert(
      fc.property(apiKey, (key) => {
        const caller = new ApiKeyRing({ [key]: ['*'] }).find(key);
        const hash = createHash('sha256').update(key, 'utf8').digest('hex');
        expect(caller?.id).toBe(`key:${hash.slice(0, 12)}`);
      }),
    );
  });
});
