/**
 * Thread identity. The workflow id is the thread's lease: Temporal runs at most one execution per id.
 * Each part is percent-encoded (`:` and `/` included), so `("a:b", "c")` and `("a", "b:c")` never collide.
 */
import { ValidationError } from './errors';

export const WORKFLOW_ID_PREFIX = 'thread';

/**
 * The longest workflow id Temporal accepts by default, in bytes (the server's dynamic config `limit.maxIDLength`).
 * `threadKey` is ASCII, so its length in characters is its length in bytes.
 */
export const MAX_WORKFLOW_ID_BYTES = 1_000;

/**
 * False for a string with a lone UTF-16 surrogate (`"\ud800"`): it has no UTF-8 form, so it cannot be
 * percent-encoded into a workflow id (`encodeURIComponent` throws), and Temporal could not store it anyway.
 * (`String.prototype.isWellFormed` without the ES2024 lib; in `u` mode only unpaired surrogates match `\p{Cs}`.)
 */
export function isWellFormedUnicode(value: string): boolean {
  return !/\p{Cs}/u.test(value);
}

/** The percent-encoded form of one id inside a workflow id; call it on well-formed strings only. */
export function encodeIdPart(part: string): string {
  return encodeURIComponent(part).replace(/[!'()*~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/** The workflow id (and bus key) of a thread. Throws `ValidationError` for an id with a lone surrogate. */
export function threadKey(resourceId: string, threadId: string): string {
  for (const [field, value] of [
    ['resourceId', resourceId],
    ['threadId', threadId],
  ] as const) {
    if (!isWellFormedUnicode(value)) {
      throw new ValidationError(`Invalid ${field}: it contains a lone UTF-16 surrogate; send well-formed Unicode.`);
    }
  }
  return `${WORKFLOW_ID_PREFIX}:${encodeIdPart(resourceId)}:${encodeIdPart(threadId)}`;
}

export function parseThreadKey(key: string): { resourceId: string; threadId: string } | null {
  const parts = key.split(':');
  if (parts.length !== 3 || parts[0] !== WORKFLOW_ID_PREFIX) return null;
  try {
    return { resourceId: decodeURIComponent(parts[1]), threadId: decodeURIComponent(parts[2]) };
  } catch {
    return null;
  }
}
