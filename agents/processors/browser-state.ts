/**
 * The seed's state-lane example: a processor that owns the `browser` lane. Each step it reads the browser's current
 * state and emits a snapshot the first time (or when the last one fell out of the model's window), a compact delta
 * when something changed, and nothing when nothing did. The cache key is stable for one state, so the thread dedupes.
 */
import type { ComputeStateSignalArgs, ComputedStateSignal, Processor } from '../agent';
import type { InputMessage } from '../../protocol/messages';

export interface BrowserState {
  open: boolean;
  activeUrl?: string;
  tabCount: number;
}

export interface BrowserStateProcessorOptions {
  /** Reads the browser's state now (a CDP client, a watcher's cache, ...). */
  read(): BrowserState | Promise<BrowserState>;
  /** Processor id (default `browser-state`). */
  id?: string;
  /** The lane (default `browser`). */
  stateId?: string;
}

/** One key per distinct state: `browser:<url or closed>:<n>-tabs`. */
export function stableBrowserStateCacheKey(state: BrowserState): string {
  return `browser:${state.open ? (state.activeUrl ?? 'blank') : 'closed'}:${state.tabCount}-tabs`;
}

export function describeBrowserSnapshot(state: BrowserState): string {
  if (!state.open) return 'Browser is closed.';
  const tabs = `${state.tabCount} open tab${state.tabCount === 1 ? '' : 's'}`;
  return `Browser is open. Active tab URL: ${state.activeUrl ?? 'about:blank'}. ${tabs}.`;
}

/** The fields that differ from `previous` (an empty object when nothing did). */
export function diffBrowserState(previous: BrowserState, current: BrowserState): Partial<BrowserState> {
  const changed: Partial<BrowserState> = {};
  if (previous.open !== current.open) changed.open = current.open;
  if (previous.activeUrl !== current.activeUrl) changed.activeUrl = current.activeUrl;
  if (previous.tabCount !== current.tabCount) changed.tabCount = current.tabCount;
  return changed;
}

export function describeBrowserDelta(changed: Partial<BrowserState>): string {
  const parts: string[] = [];
  if (changed.open !== undefined) parts.push(changed.open ? 'browser opened' : 'browser closed');
  if ('activeUrl' in changed) parts.push(`active tab URL is now ${changed.activeUrl ?? 'about:blank'}`);
  if (changed.tabCount !== undefined) parts.push(`${changed.tabCount} open tabs`);
  return `Browser changed: ${parts.join('; ')}.`;
}

/** The state the model last saw: the latest snapshot's value with every later delta applied. */
export function currentBrowserState(
  lastSnapshot: InputMessage | undefined,
  deltas: readonly InputMessage[],
): BrowserState | undefined {
  const valueOf = (m: InputMessage) => (m.metadata?.state as { value?: BrowserState } | undefined)?.value;
  let state = lastSnapshot ? valueOf(lastSnapshot) : undefined;
  for (const delta of deltas) state = valueOf(delta) ?? state;
  return state;
}

export function browserStateProcessor(options: BrowserStateProcessorOptions): Processor {
  return {
    id: options.id ?? 'browser-state',
    stateId: options.stateId ?? 'browser',
    async computeStateSignal(args: ComputeStateSignalArgs): Promise<ComputedStateSignal | undefined> {
      const browser = await options.read();
      const previous = currentBrowserState(args.lastSnapshot, args.deltasSinceSnapshot);
      const changed = previous ? diffBrowserState(previous, browser) : undefined;
      const refresh = Boolean(args.lastSnapshot && !args.contextWindow.hasSnapshot);
      if (previous && changed && Object.keys(changed).length === 0 && !refresh) return undefined;
      const cacheKey = stableBrowserStateCacheKey(browser);
      if (previous && changed && !refresh) {
        return { mode: 'delta', cacheKey, contents: describeBrowserDelta(changed), value: browser, delta: changed };
      }
      return { mode: 'snapshot', cacheKey, contents: describeBrowserSnapshot(browser), value: browser };
    },
  };
}
