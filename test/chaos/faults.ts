/**
 * Faults on a seeded schedule: a worker SIGKILLed every few seconds and started again at once (one of several, so
 * one always serves), a gateway SIGKILLed (its streams cut mid-flight) and started again on its port, Redis restarted
 * with its data (append-only file) and restarted empty (its data lost), the Temporal server SIGKILLed and started
 * again on the same database. The first part of the run is calm, to measure latencies without faults.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Rng } from './random';
import type { Topology } from './topology';

export type FaultKind = 'worker-kill' | 'gateway-kill' | 'redis-restart' | 'redis-wipe' | 'temporal-kill';

export const FAULT_KINDS: readonly FaultKind[] = [
  'worker-kill',
  'gateway-kill',
  'redis-restart',
  'redis-wipe',
  'temporal-kill',
];

export interface FaultWindow {
  kind: FaultKind;
  target: string;
  /** When the process was killed (ms since the epoch). */
  at: number;
  /** When it served again; unset while it is down. */
  recoveredAt?: number;
}

/** Inputs sent this long after a recovery still count as sent during the fault (sticky queues time out after 10 s). */
export const FAULT_TAIL_MS = 15_000;

export interface FaultPlan {
  at: number;
  kind: FaultKind;
}

/**
 * The schedule over `[start, end)`: calm for the first 15% (at most a minute), then worker kills every
 * `workerKillEveryMs` (±1/3: 3–6 s for 4.5 s), and gateway kills, Redis restarts (data kept), Redis restarts with
 * the data lost and Temporal kills spread over the rest, each at least once, repeating about every 50 s, 80 s, 90 s
 * and 110 s on long runs.
 */
export function planFaults(
  rng: Rng,
  start: number,
  end: number,
  workerKillEveryMs: number,
  temporal: boolean,
): FaultPlan[] {
  const calm = Math.min(60_000, (end - start) * 0.15);
  const from = start + calm;
  const span = end - from;
  const plan: FaultPlan[] = [];
  for (let t = from + rng.between(0, workerKillEveryMs); t < end; t += workerKillEveryMs * rng.between(2 / 3, 4 / 3)) {
    plan.push({ at: t, kind: 'worker-kill' });
  }
  const spread = (kind: FaultKind, firstAt: number, everyMs: number) => {
    for (let t = from + span * firstAt; t < end - 5_000; t += everyMs * rng.between(0.8, 1.2))
      plan.push({ at: t, kind });
  };
  spread('gateway-kill', rng.between(0.15, 0.3), 50_000);
  spread('redis-restart', rng.between(0.3, 0.4), 80_000);
  spread('redis-wipe', rng.between(0.45, 0.55), 90_000);
  if (temporal) spread('temporal-kill', rng.between(0.6, 0.75), 110_000);
  return plan.sort((a, b) => a.at - b.at);
}

/** Why a planned fault was not injected, by kind and reason. */
export type SkippedFaults = Partial<Record<FaultKind, Record<string, number>>>;

export class FaultInjector {
  readonly windows: FaultWindow[] = [];
  /** Faults not injected, and why (no worker could be spared, the previous fault of the process not recovered). */
  readonly skipped: SkippedFaults = {};
  /** The processes being killed or started again (`worker-0`, `gateway-1`, `redis`, `temporal`). */
  private readonly busy = new Set<string>();
  private readonly recoveries: Promise<void>[] = [];
  private stopped = false;

  constructor(
    private readonly topology: Topology,
    private readonly rng: Rng,
    private readonly log: (line: string) => void,
    /** Reads what Redis holds just before it loses its data (its writes paused meanwhile). */
    private readonly beforeWipe?: (redis: Redis) => Promise<void>,
  ) {}

  /** Injects each planned fault at its time; resolves once the plan is through (recoveries may still run). */
  async run(plan: readonly FaultPlan[]): Promise<void> {
    for (const fault of plan) {
      const wait = fault.at - Date.now();
      if (wait > 0) await sleep(wait);
      if (this.stopped) return;
      this.inject(fault.kind);
    }
  }

  /** Stops injecting, and waits until every process killed is serving again. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.recoveries);
  }

  /** Whether `at` falls in a fault (from the kill until FAULT_TAIL_MS after the recovery). */
  during(at: number): boolean {
    return this.windows.some((w) => at >= w.at && at <= (w.recoveredAt ?? Infinity) + FAULT_TAIL_MS);
  }

  counts(): Record<FaultKind, number> {
    const counts = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    for (const w of this.windows) counts[w.kind]++;
    return counts;
  }

  private inject(kind: FaultKind): void {
    const t = this.topology;
    switch (kind) {
      case 'worker-kill': {
        // Never the last one serving: a deployment loses one machine at a time, and the others carry the threads.
        // A killed worker is started again at once; a worker still starting is not serving and is not killed.
        const up = Array.from({ length: t.workerCount }, (_, i) => i).filter((i) => t.workerUp(i));
        if (up.length < 2) return this.skip(kind, 'only one worker serving, the others still starting');
        const i = this.rng.pick(up);
        return this.cycle(
          kind,
          `worker ${i + 1}`,
          `worker-${i}`,
          () => t.killWorker(i),
          () => t.startWorker(i),
        );
      }
      case 'gateway-kill': {
        const candidates = [0, 1].filter((i) => t.gatewayUp(i) && t.gatewayUp(1 - i));
        if (candidates.length === 0) return this.skip(kind, 'the other gateway not serving yet');
        const i = this.rng.pick(candidates);
        const pause = this.rng.between(500, 3_000);
        return this.cycle(
          kind,
          `gateway ${i + 1}`,
          `gateway-${i}`,
          () => t.killGateway(i),
          async () => {
            await sleep(pause);
            await t.startGateway(i);
          },
        );
      }
      case 'redis-restart':
        return this.cycle(
          kind,
          'redis',
          'redis',
          async () => undefined,
          () => t.restartRedis(),
        );
      case 'redis-wipe':
        return this.cycle(
          kind,
          'redis (data lost)',
          'redis',
          async () => undefined,
          () => t.wipeRedis(this.beforeWipe),
        );
      case 'temporal-kill': {
        const pause = this.rng.between(1_000, 5_000);
        return this.cycle(
          kind,
          'temporal server',
          'temporal',
          () => t.killTemporal(),
          async () => {
            await sleep(pause);
            await t.startTemporal();
          },
        );
      }
    }
  }

  private cycle(
    kind: FaultKind,
    target: string,
    lock: string,
    down: () => Promise<void>,
    up: () => Promise<void>,
  ): void {
    if (this.busy.has(lock)) return this.skip(kind, `the previous fault of ${lock} not recovered yet`);
    this.busy.add(lock);
    const window: FaultWindow = { kind, target, at: Date.now() };
    this.windows.push(window);
    this.log(`fault: ${kind} ${target}`);
    const recovery = (async () => {
      try {
        await down();
        await up();
        window.recoveredAt = Date.now();
        this.log(`recovered: ${target} after ${((window.recoveredAt - window.at) / 1000).toFixed(1)} s`);
      } catch (err) {
        this.log(`recovery of ${target} failed: ${String(err)}`);
      } finally {
        this.busy.delete(lock);
      }
    })();
    this.recoveries.push(recovery);
  }

  private skip(kind: FaultKind, why: string): void {
    const reasons = (this.skipped[kind] ??= {});
    reasons[why] = (reasons[why] ?? 0) + 1;
  }
}
