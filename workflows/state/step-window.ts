/**
 * The step windows an execution sends its step activities (`StepWindow`, protocol/step.ts): the first whole, each
 * later one as what changed since the previous. Works on the message objects the thread state holds, by identity, so
 * a replay (which rebuilds those objects in the same order) sends the same thing.
 */
import type { StoredMessage } from '../../protocol/messages';
import type { StepWindow } from '../../protocol/step';

export class StepWindows {
  private last: { stepKey: string; messages: readonly StoredMessage[] } | null = null;

  /** The window to send for the step `stepKey`, as a change to the previous one when that is possible. */
  send(stepKey: string, window: readonly StoredMessage[]): StepWindow {
    const previous = this.last;
    this.last = { stepKey, messages: window };
    if (!previous) return { full: [...window] };
    const keep = overlap(previous.messages, window);
    if (keep === null) return { full: [...window] };
    return { base: previous.stepKey, keep, tail: window.slice(keep) };
  }

  /** The window sent for `stepKey`, while it is the latest (the step in flight asks for it on a cold worker). */
  windowOf(stepKey: string): readonly StoredMessage[] | null {
    return this.last?.stepKey === stepKey ? this.last.messages : null;
  }
}

/**
 * How many of `previous`'s newest messages open `next`, or null when `next` is not "a suffix of `previous`, then new
 * messages" (a wider window of another agent, say): then it goes whole.
 */
function overlap(previous: readonly StoredMessage[], next: readonly StoredMessage[]): number | null {
  if (next.length === 0) return 0;
  const start = previous.indexOf(next[0]);
  if (start < 0) {
    // Nothing of the previous window is left: fine only if all of `next` is newer than it.
    const before = new Set(previous);
    return next.some((m) => before.has(m)) ? null : 0;
  }
  const keep = previous.length - start;
  if (keep > next.length) return null;
  for (let i = 0; i < keep; i++) if (previous[start + i] !== next[i]) return null;
  return keep;
}
