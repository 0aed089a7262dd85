import { describe, expect, it } from 'vitest';
import {
  computedStateVersion,
  isUnchanged,
  nextVersion,
  recordState,
  refreshCopies,
  windowHasSnapshot,
  type Lane,
} from '../../protocol/lanes';
import type { InputMessage } from '../../protocol/messages';

const stateMessage = (id: string, cacheKey: string, mode: 'snapshot' | 'delta', version: number): InputMessage => ({
  id,
  role: 'user',
  type: 'state',
  contents: `${mode} ${cacheKey}`,
  at: 1,
  metadata: { state: { laneId: 'browser', mode, cacheKey, version, value: { cacheKey } } },
});

describe('lane tracking (behaviour §3.1)', () => {
  it('compares only the latest state: cacheKey and mode both', () => {
    const lane = recordState(undefined, stateMessage('s1', 'A', 'snapshot', 1), 10, 5);
    expect(isUnchanged(lane, { cacheKey: 'A', mode: 'snapshot' })).toBe(true);
    expect(isUnchanged(lane, { cacheKey: 'A', mode: 'delta' })).toBe(false);
    expect(isUnchanged(lane, { cacheKey: 'B', mode: 'snapshot' })).toBe(false);
    expect(isUnchanged(undefined, { cacheKey: 'A', mode: 'snapshot' })).toBe(false);
    const b = recordState(lane, stateMessage('s2', 'B', 'snapshot', 2), 11, 5);
    expect(isUnchanged(b, { cacheKey: 'A', mode: 'snapshot' })).toBe(false);
    expect(nextVersion(b, { cacheKey: 'A', mode: 'snapshot' })).toBe(3);
  });

  it('keeps the snapshot as the base and the deltas since it, bounded', () => {
    let lane: Lane = recordState(undefined, stateMessage('s1', 'A', 'snapshot', 1), 10, 2);
    for (let v = 2; v <= 5; v++) lane = recordState(lane, stateMessage(`d${v}`, `A${v}`, 'delta', v), 10 + v, 2);
    expect(lane.tracking).toMatchObject({
      version: 5,
      currentMode: 'delta',
      lastSignalId: 'd5',
      lastSnapshotSignalId: 's1',
    });
    expect(lane.lastSnapshot!.id).toBe('s1');
    expect(lane.deltasSinceSnapshot.map((d) => d.id)).toEqual(['d4', 'd5']);
    lane = recordState(lane, stateMessage('s6', 'B', 'snapshot', 6), 20, 2);
    expect(lane.deltasSinceSnapshot).toEqual([]);
    expect(lane.tracking.lastSnapshotSignalId).toBe('s6');
  });

  it('finds the snapshot in a window by version, and copies the current state at the same version', () => {
    let lane = recordState(undefined, stateMessage('s1', 'A', 'snapshot', 1), 10, 5);
    lane = recordState(lane, stateMessage('d2', 'A2', 'delta', 2), 11, 5);
    expect(windowHasSnapshot([], 'browser', lane)).toBe(false);
    const copies = refreshCopies(lane, '7', 'run-1', 99);
    expect(copies.map((c) => c.id)).toEqual(['s1:refresh:7', 'd2:refresh:7']);
    expect(copies.map((c) => (c.metadata!.state as { version: number; refreshOf: string }).version)).toEqual([1, 2]);
    expect(copies[0].metadata!.state).toMatchObject({ refreshOf: 's1' });
    expect(windowHasSnapshot(copies, 'browser', lane)).toBe(true);
    // A copy of a copy still names the original.
    const again = refreshCopies({ ...lane, lastSnapshot: copies[0], deltasSinceSnapshot: [] }, '9', 'run-2', 100);
    expect(again[0].metadata!.state).toMatchObject({ refreshOf: 's1' });
  });

  it('versions a processor-computed state: nothing when current and seen, same version when re-sent (behaviour §3.2)', () => {
    const { tracking } = recordState(undefined, stateMessage('s1', 'A', 'delta', 4), 10, 5);
    expect(computedStateVersion(undefined, { cacheKey: 'A', mode: 'snapshot' }, false)).toBe(1);
    expect(computedStateVersion(tracking, { cacheKey: 'A', mode: 'delta' }, true)).toBeNull();
    expect(computedStateVersion(tracking, { cacheKey: 'A', mode: 'delta' }, false)).toBe(4);
    expect(computedStateVersion(tracking, { cacheKey: 'A', mode: 'snapshot' }, false)).toBe(4);
    expect(computedStateVersion(tracking, { cacheKey: 'A', mode: 'snapshot' }, true)).toBe(5);
    expect(computedStateVersion(tracking, { cacheKey: 'B', mode: 'delta' }, false)).toBe(5);
  });
});
