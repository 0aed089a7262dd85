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
 * before its idle wake. The two update series are also split at their history events, as bench/idle-wake.ts splits
 * Threadline's wakes, so the two can be read segment by segment.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { wallClock, withTimeout } from '../env';
import { eventsOf, findEvent, splitAt, type HistoryEvent } from '../history';
import { summarize, summarizeEach, type Summary } from '../stats';
import type { FloorWorld } from './world';

export const floorLatencySeries = {
  newByUpdate: 'new workflow: update-with-start',
  newBySignal: 'new workflow: signal-with-start',
  idleByUpdate: 'idle workflow: update',
  idleBySignal: 'idle workflow: signal',
} as const;

export type FloorLatencyName = keyof typeof floorLatencySeries;

/**
 * Where an update's time goes on the floor, in order, each the time since the previous mark: the first three are
 * bench/idle-wake.ts's first three for Threadline.
 */
export const floorSegments = [
  'send → start or update recorded by the server',
  '→ workflow task started (matched to a poller)',
  '→ workflow task completed (poll response, activation, workflow code, reply)',
  '→ activity task started (matched to a poller)',
  '→ activity code running (poll response, SDK dispatch)',
] as const;

export type FloorSegment = (typeof floorSegments)[number];

interface Timed {
  /** The call → the activity's code running. */
  toActivity: number;
  /** The call → it returned (update: completed; signal: accepted). */
  toReturned: number;
  /** `performance.now()` at the call and when the activity's code ran. */
  sentAt: number;
  activityAt: number;
}

/** The update series, split at their history events. */
type SplitName = 'newByUpdate' | 'idleByUpdate';

export type FloorRoundSample = Record<FloorLatencyName, Timed> & {
  activityToActivity: number;
  segments: Record<SplitName, Record<FloorSegment, number>>;
};

export interface FloorLatencyResult {
  series: Record<FloorLatencyName, { toActivity: Summary; toReturned: Summary }>;
  /** One activity returning → the next one's code running (the workflow schedules it in the task that records the first). */
  activityToActivity: Summary;
  segments: Record<SplitName, Record<FloorSegment, Summary>>;
}

export async function floorRound(floor: FloorWorld): Promise<FloorRoundSample> {
  const idle = `floor-idle-${randomUUID()}`;
  const handle = floor.client.workflow.getHandle(idle);
  const newByUpdate = await timed(floor, (input) => floor.updateWithStart(idle, input));
  await settled(floor, idle);
  const afterNew = await eventsOf(handle);
  const idleByUpdate = await timed(floor, (input) => floor.update(idle, input));
  await settled(floor, idle);
  const afterIdle = await eventsOf(handle);
  const segments = {
    newByUpdate: segmentsOf(afterNew, 0, newByUpdate),
    idleByUpdate: segmentsOf(afterIdle, afterNew.length, idleByUpdate),
  };
  const idleBySignal = await timed(floor, (input) => floor.signal(idle, input));
  await settled(floor, idle);
  const activityToActivity = await twoActivities(floor, idle);
  const newBySignal = await timed(floor, (input) => floor.signalWithStart(`floor-signal-${randomUUID()}`, input));
  return { newByUpdate, newBySignal, idleByUpdate, idleBySignal, activityToActivity, segments };
}

/** Splits one update at the history events between the call and the activity's code running. */
function segmentsOf(events: HistoryEvent[], from: number, { sentAt, activityAt }: Timed) {
  const recorded =
    from === 0 ? findEvent(events, 0, 'WorkflowExecutionStarted') : findEvent(events, from, 'WorkflowTaskScheduled');
  return splitAt(floorSegments, [
    wallClock(sentAt),
    recorded.at,
    findEvent(events, from, 'WorkflowTaskStarted').at,
    findEvent(events, from, 'WorkflowTaskCompleted').at,
    findEvent(events, from, 'ActivityTaskStarted').at,
    wallClock(activityAt),
  ]);
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
    segments: {
      newByUpdate: summarizeEach(
        floorSegments,
        samples.map((s) => s.segments.newByUpdate),
      ),
      idleByUpdate: summarizeEach(
        floorSegments,
        samples.map((s) => s.segments.idleByUpdate),
      ),
    },
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
  return { toActivity: activityAt - t0, toReturned: returnedAt - t0, sentAt: t0, activityAt };
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
