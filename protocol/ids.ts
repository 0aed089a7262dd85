/**
 * Thread identity. The workflow id is the thread's lease: Temporal runs at most one execution per id.
 * Each part is percent-encoded (`:` and `/` included), so `("a:b", "c")` and `("a", "b:c")` never collide.
 */

export const WORKFLOW_ID_PREFIX = 'thread';

function encodePart(part: string): string {
  return encodeURIComponent(part).replace(/[!'()*~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/** The workflow id (and bus key) of a thread. */
export function threadKey(resourceId: string, threadId: string): string {
  return `${WORKFLOW_ID_PREFIX}:${encodePart(resourceId)}:${encodePart(threadId)}`;
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
