/**
 * Which inputs a thread answers the same way whatever its state (behaviour §2.2). Shared by the workflow, which routes
 * them so, and the client, which then knows the answer without asking the thread and delivers them with plain
 * signal-with-start instead of an update (docs/signals.md, "Results and idempotency").
 */
import type { ThreadInput } from './schemas';

/** The actions an input can have whatever the thread's state: stored without a run, or dropped. */
export type StateIndependentAction = 'persist' | 'discard';

/**
 * The action the thread takes on `input` whether it is active or idle, or `null` when that depends on its state.
 * Settled: a `send` (never `queue`: a queued input waits behind an active run) that is no state signal (its lane may
 * hold the same state: `skipped`) and whose two behaviours come to the same thing, `persist` or `discard` (a
 * transient input with nothing to join is dropped, so a transient `persist` is a `discard`).
 * @example stateIndependentAction({ ...input, ifActive: { behavior: 'persist' }, ifIdle: { behavior: 'persist' } }) // 'persist'
 */
export function stateIndependentAction(
  input: Pick<ThreadInput, 'delivery' | 'state' | 'transient' | 'ifActive' | 'ifIdle'>,
): StateIndependentAction | null {
  if (input.delivery !== 'send' || input.state) return null;
  const settled = (behavior: string): StateIndependentAction | null => {
    if (behavior === 'discard') return 'discard';
    if (behavior === 'persist') return input.transient ? 'discard' : 'persist';
    return null;
  };
  const active = settled(input.ifActive?.behavior ?? 'deliver');
  return active !== null && active === settled(input.ifIdle?.behavior ?? 'wake') ? active : null;
}
