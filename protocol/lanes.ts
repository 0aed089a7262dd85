/**
 * State lanes (behaviour §3): named, thread-scoped context that changes over time (browser state, editor state, a
 * monitor's latest result). Pure functions over plain data: dedupe, versioning, "is the current state inside the
 * window the model will see", and the copies that put it back when it fell out.
 */
import type { StateInfo, StateMode } from './schemas';
import type { InputMessage, StoredMessage } from './messages';

/** What the thread tracks per lane (behaviour §3.1), as the API shows it. */
export interface LaneTracking {
  currentCacheKey: string;
  currentMode: StateMode;
  version: number;
  lastSignalId: string;
  lastSnapshotSignalId?: string;
  updatedAt: number;
  /** Copies of this lane's state in the context window of the latest step. */
  activeCopies: number;
}

/** A lane: its tracking, plus the current state itself, so it survives the window and the message store. */
export interface Lane {
  tracking: LaneTracking;
  value?: unknown;
  /** The latest snapshot, as stored. */
  lastSnapshot?: InputMessage;
  /** Deltas accepted after it, oldest first (at most `maxLaneDeltas`). */
  deltasSinceSnapshot: InputMessage[];
}

/** `metadata.state` of a stored state message: the lane, the version it set, the producer's value/delta. */
export interface StoredStateInfo extends StateInfo {
  version: number;
  /** Set on a copy re-emitted because the original fell out of the context window. */
  refreshOf?: string;
}

export function stateOf(message: StoredMessage): StoredStateInfo | undefined {
  if (message.role !== 'user' || message.type !== 'state') return undefined;
  return message.metadata?.state as StoredStateInfo | undefined;
}

/** Same cacheKey and mode as the lane's latest accepted state: nothing changed (only the latest is compared). */
export function isUnchanged(lane: Lane | undefined, state: Pick<StateInfo, 'cacheKey' | 'mode'>): boolean {
  return (
    lane !== undefined && lane.tracking.currentCacheKey === state.cacheKey && lane.tracking.currentMode === state.mode
  );
}

/** The version an accepted state gets: the next one, or the same one for an unchanged state re-emitted. */
export function nextVersion(lane: Lane | undefined, state: Pick<StateInfo, 'cacheKey' | 'mode'>): number {
  if (!lane) return 1;
  return isUnchanged(lane, state) ? lane.tracking.version : lane.tracking.version + 1;
}

/**
 * The version of a processor-computed state (behaviour §3.2), or null when it is the lane's current state and the window
 * still shows it (nothing to emit). The current state again because its snapshot left the window keeps its version.
 */
export function computedStateVersion(
  tracking: LaneTracking | undefined,
  state: Pick<StateInfo, 'cacheKey' | 'mode'>,
  hasSnapshot: boolean,
): number | null {
  if (!tracking) return 1;
  const sameKey = tracking.currentCacheKey === state.cacheKey;
  const unchanged = sameKey && tracking.currentMode === state.mode;
  if (unchanged && hasSnapshot) return null;
  const refresh = sameKey && !hasSnapshot && state.mode === 'snapshot';
  return refresh || unchanged ? tracking.version : tracking.version + 1;
}

/**
 * The lane after `message` (a state message carrying `metadata.state`) was accepted. A snapshot replaces the
 * current state; a delta is added to the deltas since it (the oldest dropped beyond `maxDeltas`).
 */
export function recordState(lane: Lane | undefined, message: InputMessage, at: number, maxDeltas: number): Lane {
  const state = stateOf(message)!;
  const snapshot = state.mode === 'snapshot';
  const deltas = snapshot ? [] : [...(lane?.deltasSinceSnapshot ?? []), message].slice(-maxDeltas);
  const tracking: LaneTracking = {
    currentCacheKey: state.cacheKey,
    currentMode: state.mode,
    version: state.version,
    lastSignalId: state.refreshOf ?? message.id,
    updatedAt: at,
    activeCopies: lane?.tracking.activeCopies ?? 0,
  };
  const lastSnapshotSignalId = snapshot ? (state.refreshOf ?? message.id) : lane?.tracking.lastSnapshotSignalId;
  if (lastSnapshotSignalId !== undefined) tracking.lastSnapshotSignalId = lastSnapshotSignalId;
  const next: Lane = {
    tracking,
    deltasSinceSnapshot: deltas,
    value: state.value !== undefined ? state.value : lane?.value,
  };
  const lastSnapshot = snapshot ? message : lane?.lastSnapshot;
  if (lastSnapshot) next.lastSnapshot = lastSnapshot;
  return next;
}

/** This lane's state messages inside `window`, oldest first. */
export function laneMessagesIn(window: readonly StoredMessage[], laneId: string): InputMessage[] {
  return window.filter((m): m is InputMessage => stateOf(m)?.laneId === laneId);
}

/** Whether `window` holds a copy of the lane's latest snapshot (the original or a re-emitted copy). */
export function windowHasSnapshot(window: readonly StoredMessage[], laneId: string, lane: Lane): boolean {
  const snapshot = lane.lastSnapshot && stateOf(lane.lastSnapshot);
  if (!snapshot) return false;
  return window.some((m) => {
    const state = stateOf(m);
    return state?.laneId === laneId && state.mode === 'snapshot' && state.version === snapshot.version;
  });
}

/**
 * Copies of the lane's current state (its latest snapshot, then the deltas since) to append when the snapshot is
 * no longer inside the window: the model always sees the current state. Same version, new ids derived from `tag`.
 */
export function refreshCopies(lane: Lane, tag: string, runId: string | undefined, at: number): InputMessage[] {
  if (!lane.lastSnapshot) return [];
  return [lane.lastSnapshot, ...lane.deltasSinceSnapshot].map((original) => {
    const state = stateOf(original)!;
    const copy: InputMessage = {
      ...original,
      id: `${original.id}:refresh:${tag}`,
      at,
      metadata: { ...original.metadata, state: { ...state, refreshOf: state.refreshOf ?? original.id } },
    };
    if (runId === undefined) delete copy.runId;
    else copy.runId = runId;
    return copy;
  });
}

/** The lane as `GET /api/threads/:r/:t` shows it. */
export function laneView(laneId: string, lane: Lane): LaneTracking & { id: string; value?: unknown } {
  return { id: laneId, ...lane.tracking, ...(lane.value !== undefined ? { value: lane.value } : {}) };
}
