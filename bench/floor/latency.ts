/**
 * The floor's latency series, one sample of each per round (bench/idle-wake.ts runs a round between its Threadline
 * samples, so every series sees the same machine state):
 *
 * - new workflow: update-with-start (and signal-with-start) → the activity's code running, and the call returning;
 * - idle wake: an update (and a signal) to a workflow waiting on a condition → the activity's code running, and the
 *   call returning;
 * - activity → activity: one input asks for two activities; the first one returning → the second one's code running.
 *
 * Before an idle wake the workflow is settled (no workflow task or activity pending), as a Threadline thread is
 * before its idle wake.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { withTimeout } from '../env';
import { summarize, type Summary } from '../stats';
import type { FloorWorld } from './world';

export const floorLatencySeries = {
  newByUpdate: 'new workflow: update-with-start',
  newBySignal: 'new workflow: signal-with-start',
  idleByUpdate: 'idle workflow: update',
  idleBySignal: 'idle workflow: signal',
} as const;

export type FloorLatencyName = keyof typeof floorLatencySeries;

interface Timed {
  /** The call → the activity's code running. */
  toActivity: number;
  /** The call → it returned (update: completed; signal: accepted). */
  toReturned: number;
}

export type FloorRoundSample = Record<FloorLatencyName, Timed> & { activityToActivity: number };

export interface FloorLatencyResult {
  series: Record<FloorLatencyName, { toActivity: Summary; toReturned: Summary }>;
  /** One activity returning → the next one's code running (the workflow schedules it in the task that records the first). */
  activityToActivity: Summary;
}

export async function floorRound(floor: FloorWorld): Promise<FloorRoundSample> {
  const idle = `floor-idle-${randomUUID()}`;
  const newByUpdate = await timed(floor, (input) => floor.updateWithStart(idle, input));
  await settled(floor, idle);
  const idleByUpdate = await timed(floor, (input) => floor.update(idle, input));
  await settled(floor, idle);
  const idleBySignal = await timed(floor, (input) => floor.signal(idle, input));
  await settled(floor, idle);
  const activityToActivity = await twoActivities(floor, idle);
  const newBySignal = await timed(floor, (input) => floor.signalWithStart(`floor-signal-${randomUUID()}`, input));
  return { newByUpdate, newBySignal, idleByUpdate, idleBySignal, activityToActivity };
}

export function summarizeFloorLatency(samples: FloorRoundSample[]): FloorLatencyResult {
  const names = Object.keys(floorLatencySeries) as FloorLatencyName[];
  return {
    series: Object.fromEntries(
      names.map((name) => [
        name,
        {
          toActivity: summarize(samples.map((s) => s[name].toActivity)),
          toReturned: summarize(samples.map((s) => s[name].toReturned)),
        },
      ]),
    ) as FloorLatencyResult['series'],
    activityToActivity: summarize(samples.map((s) => s.activityToActivity)),
  };
}

async function timed(
  floor: FloorWorld,
  send: (input: { marker: string; activities: number }) => Promise<unknown>,
): Promise<Timed> {
  const marker = randomUUID();
  const running = floor.probe.when(marker, 0, 'started');
  const t0 = performance.now();
  const returned = send({ marker, activities: 1 }).then(() => performance.now());
  const [activityAt, returnedAt] = await withTimeout(Promise.all([running, returned]), 'a floor sample');
  floor.probe.forget(marker, 1);
  return { toActivity: activityAt - t0, toReturned: returnedAt - t0 };
}

async function twoActivities(floor: FloorWorld, workflowId: string): Promise<number> {
  const marker = randomUUID();
  const ended = floor.probe.when(marker, 0, 'ended');
  const next = floor.probe.when(marker, 1, 'started');
  await floor.update(workflowId, { marker, activities: 2 });
  const [endedAt, nextAt] = await withTimeout(Promise.all([ended, next]), 'a floor activity → activity sample');
  floor.probe.forget(marker, 2);
  await settled(floor, workflowId);
  return nextAt - endedAt;
}

/** Waits until the workflow has no workflow task and no activity pending: it waits on its condition. */
export async function settled(floor: FloorWorld, workflowId: string, timeoutMs = 10_000): Promise<void> {
  const handle = floor.client.workflow.getHandle(workflowId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { raw } = await handle.describe();
    if (!raw.pendingWorkflowTask && (raw.pendingActivities?.length ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`Floor workflow ${workflowId} did not settle within ${timeoutMs} ms.`);
    await sleep(5);
  }
}
