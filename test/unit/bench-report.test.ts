/**
 * The arithmetic of BENCHMARKS.md's issue #12 targets and floor comparisons (bench/targets.ts), on synthetic results:
 * no timing is measured here.
 */
import { describe, expect, it } from 'vitest';
import {
  bytesGrowthPerTurn,
  comparisons,
  evaluateTargets,
  largestInputAt,
  slope,
  type TargetInputs,
  type TargetRow,
} from '../../bench/targets';

const pcts = (p50: number, p99: number) => ({ p50, p99 });
const ingest = (signalsPerSecond: number, handledPerSecond = signalsPerSecond, ok = true) => ({
  signalsPerSecond,
  handledPerSecond,
  verification: { ok },
});
const floor = (acceptedPerSecond: number, handledPerSecond = acceptedPerSecond) => ({
  acceptedPerSecond,
  handledPerSecond,
});
const notifications = (accepted: number, acceptedPerSecond: number, modelRequests: number) => ({
  accepted,
  acceptedPerSecond,
  history: { eventsPerNotification: 5, eventsByType: { WorkflowTaskCompleted: 10 } as Record<string, number> },
  wakes: { modelRequests },
  workerLog: {} as Record<string, number>,
  ok: true,
});

/** A run that meets every target, by construction; each test breaks one thing. */
function passing(): TargetInputs {
  return {
    idleWake: {
      freshThread: { toFirstDelta: pcts(40, 60) },
      idleThread: { toFirstDelta: pcts(20, 50) },
      floor: { toFirstDelta: pcts(5, 15) },
      temporalFloor: {
        series: { newByUpdate: { toActivity: pcts(30, 50) }, idleByUpdate: { toActivity: pcts(14, 35) } },
        activityToActivity: pcts(16, 40),
      },
    },
    injection: { stepEndToNextRequest: pcts(20, 50) },
    interrupt: {
      series: {
        short: { label: '300 ms step', samples: 10, notClosed: 0, toClosed: pcts(30, 100) },
        streaming: { label: 'long step', samples: 10, notClosed: 0, toClosed: pcts(40, 120) },
      },
    },
    signalIngest: {
      oneThread: ingest(180),
      manyThreads: ingest(270, 170),
      manyThreadsStateDependent: ingest(110),
      floor: { oneWorkflow: floor(186), manyByUpdate: floor(116), manyBySignal: floor(287, 179) },
    },
    history: {
      // Turn 1 starts the workflow; later turns add 11 or 12 events and the same bytes.
      eventsPerTurn: [[30], [12], [11], [12], [11]],
      bytesPerTurn: [[5000], [2000], [2003], [2001], [2004]],
      largestInputPerTurn: [[1500], [1500], [1500], [1500], [1500]],
    },
    notifications: {
      ...notifications(10_000, 150, 1_500),
      floor: floor(149),
      paced: notifications(2_000, 46.5, 1_000),
    },
    memory: { rssPerEvictedThread: 100, rssPerEvictedThreadStandardError: 400, rssPerCachedThread: 40_000 },
    http: {
      newThread: { inProcess: pcts(40, 60), gateway: pcts(42, 70) },
      idleThread: { inProcess: pcts(20, 50), gateway: pcts(22.5, 60) },
      ingest: { inProcess: { acceptedPerSecond: 100 }, gateway: { acceptedPerSecond: 95 } },
    },
  };
}

const byId = (rows: TargetRow[]) => Object.fromEntries(rows.map((row) => [row.id, row]));
const failing = (r: TargetInputs) =>
  evaluateTargets(r)
    .filter((row) => !row.met)
    .map((row) => row.id);

describe('issue #12 targets', () => {
  it('lists every part from 1 to 10, one row per interrupt variant', () => {
    const ids = evaluateTargets(passing()).map((row) => row.id);
    expect(new Set(ids.map((id) => id.replace(/[a-z]$/, '')))).toEqual(
      new Set(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']),
    );
    expect(ids.filter((id) => id.startsWith('5'))).toEqual(['5a', '5b']);
  });

  it('meets every target of a run built to meet them except beating the floor itself', () => {
    // 3b asks for less than the floor: 40 ms is not below 30 + 5.
    expect(failing(passing())).toEqual(['3b']);
  });

  it('bounds the idle wake by both floors plus 3 ms at p50 and 10 ms at p99', () => {
    const r = passing();
    r.idleWake.idleThread.toFirstDelta = pcts(22, 60); // bounds: 14 + 5 + 3 = 22; 35 + 15 + 10 = 60
    expect(failing(r)).toEqual(['3b']);
    r.idleWake.idleThread.toFirstDelta = pcts(22.01, 60.01);
    expect(failing(r)).toEqual(['2a', '2b', '3b']);
    expect(byId(evaluateTargets(r))['2a'].bound).toContain('22.0');
  });

  it('bounds a new thread by the fresh floor plus streamText plus 5 ms, and beating it by the floors alone', () => {
    const r = passing();
    r.idleWake.freshThread.toFirstDelta = pcts(40.1, 60); // 30 + 5 + 5 = 40
    expect(failing(r)).toContain('3a');
    r.idleWake.freshThread.toFirstDelta = pcts(34.9, 60);
    expect(failing(r)).toEqual([]);
  });

  it('bounds step end → next request by the activity → activity floor plus 5 ms', () => {
    const r = passing();
    r.injection.stepEndToNextRequest = pcts(21.5, 50); // 16 + 5
    expect(failing(r)).toContain('4');
  });

  it('counts an interrupt that never closed the request as failing, whatever the others did', () => {
    const r = passing();
    r.interrupt.series.short = { label: '300 ms step', samples: 10, notClosed: 6, toClosed: pcts(Infinity, Infinity) };
    const row = byId(evaluateTargets(r))['5a'];
    expect(row.met).toBe(false);
    expect(row.measured).toContain('6 of 10 never closed early');
    r.interrupt.series.streaming.toClosed = pcts(50, 151);
    expect(failing(r)).toEqual(['3b', '5a', '5b']);
  });

  it('holds ingest to 90 % of the matching floor: update-with-start, signal-with-start accepted and handled, one workflow', () => {
    const r = passing();
    r.signalIngest.manyThreadsStateDependent = ingest(0.9 * 116 - 0.01);
    r.signalIngest.manyThreads = ingest(0.9 * 287, 0.9 * 179 - 0.01);
    r.signalIngest.oneThread = ingest(0.9 * 186 - 0.01);
    expect(failing(r)).toEqual(['3b', '6a', '6c', '6d']);
    r.signalIngest.manyThreads = ingest(100, 170, false);
    expect(failing(r)).toEqual(['3b', '6a', '6b', '6d', '6e']);
  });

  it('holds history to 12 events per later turn, flat bytes and a small step input at 2,000 messages', () => {
    const r = passing();
    r.history.eventsPerTurn = [[30], [12], [13], [12], [12]];
    r.history.bytesPerTurn = [[5000], [2000], [3300], [4600], [5900]]; // +1,300 bytes per turn
    r.history.largestInputPerTurn = [[1000], [2000], [3000], [4000], [5000]]; // +1,000 per turn → ~1 MB at turn 1,000
    expect(failing(r)).toEqual(['3b', '7a', '7b']);
    r.history.largestInputPerTurn = [[1000], [3000], [5000], [7000], [9000]];
    expect(failing(r)).toEqual(['3b', '7a', '7b', '7c']);
  });

  it('holds notifications to 3× today, 6 events each, 2,000 and 6,000 requests per 10,000, and no slow tasks', () => {
    const r = passing();
    r.notifications.acceptedPerSecond = 139; // 3 × 46.5 = 139.5
    r.notifications.wakes.modelRequests = 2_001; // per 10,000 accepted
    r.notifications.paced.wakes.modelRequests = 1_201; // 6,005 per 10,000 of 2,000 accepted
    expect(failing(r)).toEqual(['3b', '8a', '8c', '8d']);
    const quiet = passing();
    quiet.notifications.history.eventsPerNotification = 6.01;
    quiet.notifications.paced.history.eventsByType.WorkflowTaskTimedOut = 1;
    expect(failing(quiet)).toEqual(['3b', '8b', '8e']);
    const logged = passing();
    logged.notifications.workerLog = { 'Workflow task exceeded 5 s (took 5.2 s)': 2 };
    expect(byId(evaluateTargets(logged))['8e']).toMatchObject({ met: false, measured: '0 and 2' });
  });

  it('holds evicted idle threads to 1 KiB of RSS each and the gateway to 3 ms and 90 % of in-process ingest', () => {
    const r = passing();
    r.memory.rssPerEvictedThread = 1025;
    r.http.idleThread.gateway = pcts(23.01, 60);
    r.http.ingest.gateway.acceptedPerSecond = 89.9;
    expect(failing(r)).toEqual(['3b', '9', '10a', '10c']);
  });

  it('fails a target whose figures were not measured instead of passing it', () => {
    const r = passing();
    r.idleWake.temporalFloor.series.idleByUpdate.toActivity = pcts(NaN, NaN);
    expect(failing(r)).toEqual(['1', '2a', '2b', '3b']);
  });
});

describe('floor comparisons', () => {
  it('gives the difference and ratio at p50, the model-call paths against both floors summed', () => {
    const rows = comparisons(passing());
    const idle = rows.find((row) => row.path.startsWith('idle thread'))!;
    expect(idle.difference).toBeCloseTo(20 - (14 + 5));
    expect(idle.ratio).toBeCloseTo(20 / 19);
    expect(idle.floor).toMatch(/^19\.0 \/ 50\.0/);
    const handled = rows.find((row) => row.path.includes('handled'))!;
    expect(handled).toMatchObject({ difference: 170 - 179, unit: '/s' });
  });
});

describe('history fits', () => {
  it('fits the growth per turn over the later turns only', () => {
    expect(slope([1, 2, 3], [2, 4, 6])).toBeCloseTo(2);
    expect(slope([1], [2])).toBeNaN();
    // The first turn (workflow start) is left out: without it the bytes are flat.
    expect(bytesGrowthPerTurn([[9000], [2000], [2000], [2000]])).toBeCloseTo(0);
    // 100 bytes per turn from turn 2 (100): turn 1,000 is 99,900.
    expect(largestInputAt([[0], [100], [200], [300]], 1_000)).toBeCloseTo(99_900);
  });
});
