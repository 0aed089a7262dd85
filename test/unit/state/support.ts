/** A thread's state with a fake clock and id generator, for the pure unit tests of its parts. */
import type { EventDraft } from '../../../protocol/events';
import type { StepResult, ToolCall } from '../../../protocol/messages';
import { ThreadRefusal } from '../../../protocol/failures';
import type { ThreadInput } from '../../../protocol/schemas';
import { resolveThreadConfig, type ThreadConfigInput } from '../../../protocol/thread-config';
import { emptySnapshot, ThreadState, type ThreadClock } from '../../../workflows/state';

export interface FakeClock extends ThreadClock {
  advance(ms: number): void;
}

/** Time stands still until advanced; ids are `id-1`, `id-2`, … in the order they are asked for. */
export function fakeClock(start = 1_000): FakeClock {
  let now = start;
  let n = 0;
  return {
    now: () => now,
    newId: () => `id-${++n}`,
    advance: (ms) => {
      now += ms;
    },
  };
}

export function newThread(config: ThreadConfigInput = {}, clock: FakeClock = fakeClock()) {
  return { thread: new ThreadState(emptySnapshot('r', 't'), resolveThreadConfig(config), clock), clock };
}

export const input = (id: string, extra: Partial<ThreadInput> = {}): ThreadInput => ({
  id,
  agentId: 'a',
  delivery: 'send',
  type: 'user',
  contents: id,
  ...extra,
});

export const stepResult = (toolCalls: ToolCall[] = [], text = 'ok'): StepResult => ({
  content: text ? [{ type: 'text', text }] : [],
  toolCalls,
  finishReason: toolCalls.length > 0 ? 'tool-calls' : 'stop',
  usage: {},
});

export const types = (events: readonly EventDraft[]) => events.map((e) => e.type);

/** The `notification-updated` changes among `events`, as `<record id>:<change>`. */
export const announcements = (events: readonly EventDraft[]) =>
  events
    .filter((e) => e.type === 'notification-updated')
    .map((e) => {
      const { change, notification } = e.payload as { change: string; notification: { id: string } };
      return `${notification.id}:${change}`;
    });

/** The `ThreadRefusal` `fn` throws (fails the test when it throws nothing or something else). */
export function refusal(fn: () => unknown): ThreadRefusal {
  try {
    fn();
  } catch (err) {
    if (err instanceof ThreadRefusal) return err;
    throw err;
  }
  throw new Error('Expected a ThreadRefusal, but nothing was thrown.');
}
