/**
 * The floor's one activity: it stamps when its code starts running and when it returns (`performance.now()`, the
 * clock every bench uses; the activity runs in the bench process) and does nothing else.
 */
import { performance } from 'node:perf_hooks';

/** When each activity of a sample started and ended, by `marker#step`; a waiter resolves on the stamp it asked for. */
export class FloorProbe {
  private readonly stamps = new Map<string, { started?: number; ended?: number }>();
  private readonly waiting = new Map<string, (at: number) => void>();

  stamp(marker: string, step: number, what: 'started' | 'ended'): void {
    const key = `${marker}#${step}`;
    const at = performance.now();
    const entry = this.stamps.get(key) ?? {};
    entry[what] = at;
    this.stamps.set(key, entry);
    const waiter = this.waiting.get(`${key}:${what}`);
    if (waiter) {
      this.waiting.delete(`${key}:${what}`);
      waiter(at);
    }
  }

  /** Resolves when activity `step` of `marker` stamps `what` (at once if it already did). */
  when(marker: string, step: number, what: 'started' | 'ended'): Promise<number> {
    const key = `${marker}#${step}`;
    const at = this.stamps.get(key)?.[what];
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve) => this.waiting.set(`${key}:${what}`, resolve));
  }

  /** Drops a finished sample's stamps. */
  forget(marker: string, steps: number): void {
    for (let step = 0; step < steps; step++) this.stamps.delete(`${marker}#${step}`);
  }
}

export const createFloorActivities = (probe: FloorProbe) => ({
  async floorWork(marker: string, step: number): Promise<void> {
    probe.stamp(marker, step, 'started');
    probe.stamp(marker, step, 'ended');
  },
});

export type FloorActivities = ReturnType<typeof createFloorActivities>;
