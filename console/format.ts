/**
 * Small formatting helpers for what the console shows.
 */

/** `12:04:05`, or `3 Mar 12:04` for another day. */
export function time(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  const date = new Date(ms);
  const today = new Date();
  const clock = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (date.toDateString() === today.toDateString()) return clock;
  return `${date.toLocaleDateString(undefined, { day: 'numeric', month: 'short' })} ${clock.slice(0, 5)}`;
}

/** `just now`, `5 min ago`, `3 h ago`, or the date. */
export function ago(ms: number | null | undefined, now = Date.now()): string {
  if (ms === null || ms === undefined) return '—';
  const seconds = Math.round((now - ms) / 1000);
  if (seconds < 45) return 'just now';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

/** Pretty JSON, or the value itself when it is a string. */
export function pretty(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** One line of JSON, cut at `max` characters. */
export function oneLine(value: unknown, max = 120): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A random id for an input this page sends (its idempotency key). */
export function newId(prefix = 'console'): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}
