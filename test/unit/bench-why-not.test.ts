/**
 * BENCHMARKS.md's "why not" list (bench/why-not.ts): each unmet target explained with the run's own figures, on
 * synthetic results; met targets explained by nothing.
 */
import { describe, expect, it } from 'vitest';
import { floorSegments } from '../../bench/floor/latency';
import { wakeSegments } from '../../bench/idle-wake';
import { injectionSegments } from '../../bench/injection';
import { interruptSegments } from '../../bench/interrupt';
import type { TargetRow } from '../../bench/targets';
import { whyNot, type WhyNotInputs } from '../../bench/why-not';

const row = (id: string, met: boolean): TargetRow => ({ id, target: id, measured: '', bound: '', met });
const pcts = (p50: number, p99: number) => ({ p50, p99 });
const ingestCase = (signals: number, events: number, tasks: number, activities: number) => ({
  signals,
  cpuSeconds: { benchProcess: 10, devServer: 20 },
  rpcAttempts: { OK: signals, 'RESOURCE_EXHAUSTED: workflow is closing': 7 },
  history: { events, workflowTasks: tasks, activities, taskScheduleToStart: { p50: 12.5 } },
  continueAsNew: { spanningLatency: { p50: 300, max: 2000 }, otherLatency: { p50: 40 } },
});
const notificationCase = (accepted: number, runs: number) => ({
  accepted,
  wakes: { runs, notificationsPerRun: accepted / runs, modelRequests: runs * 2 },
  history: {
    eventsPerNotification: 12.5,
    eventsByType: {
      WorkflowTaskCompleted: accepted * 1.5,
      ActivityTaskScheduled: accepted,
      TimerStarted: accepted / 2,
    },
  },
});

/** Segments named as bench/idle-wake.ts and bench/floor/latency.ts name theirs, with the given p50s. */
const withP50s = (names: readonly string[], p50s: number[]) =>
  Object.fromEntries(names.map((name, i) => [name, { p50: p50s[i] }]));
const wake = (p50s: number[]) => withP50s(wakeSegments, p50s);
const floorUpdate = (p50s: number[]) => withP50s(floorSegments, p50s);

function inputs(): WhyNotInputs {
  return {
    idleWake: {
      freshThread: { segments: wake([5, 26.5, 24, 1, 8, 3, 3]) },
      idleThread: { segments: wake([3.3, 0.8, 11.5, 0.9, 7.9, 2.4, 2.8]) },
      floor: { toFirstDelta: pcts(5.1, 25.8) },
      temporalFloor: {
        series: { newByUpdate: { toActivity: pcts(46, 90) }, idleByUpdate: { toActivity: pcts(15.4, 40) } },
        activityToActivity: { p50: 9.9 },
        segments: { newByUpdate: floorUpdate([5, 25, 15, 0.5, 2]), idleByUpdate: floorUpdate([3, 0.7, 8, 0.4, 3.3]) },
      },
    },
    signalIngest: {
      oneThread: ingestCase(3000, 10_000, 900, 400),
      manyThreads: ingestCase(3000, 12_000, 3000, 1000),
      manyThreadsStateDependent: ingestCase(3000, 35_000, 6000, 3000),
      floor: {
        oneWorkflow: { eventsPerInput: 3 },
        manyByUpdate: { eventsPerInput: 5 },
        manyBySignal: { eventsPerInput: 4 },
      },
    },
    history: {
      laterTurnTypes: [
        ...['WorkflowTaskScheduled', 'WorkflowTaskStarted', 'WorkflowTaskCompleted'],
        ...['WorkflowExecutionUpdateAccepted', 'WorkflowExecutionUpdateCompleted', 'UpsertWorkflowSearchAttributes'],
        ...['ActivityTaskScheduled', 'ActivityTaskStarted', 'ActivityTaskCompleted'],
        ...['WorkflowTaskScheduled', 'WorkflowTaskStarted', 'WorkflowTaskCompleted', 'UpsertWorkflowSearchAttributes'],
        ...['ActivityTaskScheduled', 'ActivityTaskStarted', 'ActivityTaskCompleted'],
        ...['WorkflowTaskScheduled', 'WorkflowTaskStarted', 'WorkflowTaskCompleted'],
      ],
    },
    injection: {
      stepEndToNextRequest: pcts(16.6, 26.2),
      segments: withP50s(injectionSegments, [1.6, 2.0, 7.4, 0.1, 3.4, 1.4]),
    },
    interrupt: {
      series: {
        short: interrupted('300 ms step', pcts(25, 70), [pcts(21, 60), pcts(9, 30)]),
        later: interrupted('long step hanging, interrupted later', pcts(34, 407), [pcts(29, 340), pcts(11, 89)]),
      },
    },
    notifications: {
      ...notificationCase(10_000, 3_500),
      floor: { eventsPerInput: 5 },
      paced: notificationCase(2_000, 800),
    },
    memory: { rssPerEvictedThread: 104_296, heapPerEvictedThread: 1_343 },
    http: {
      newThread: { gateway: { p50: 42 }, gatewayLocalClient: { p50: 51.5 } },
      idleThread: { gateway: { p50: 22.5 }, gatewayLocalClient: { p50: 35 } },
      segments: {
        newThread: { inProcess: split(3, 35, 0), gateway: split(4.5, 35.5, 1) },
        idleThread: { inProcess: split(2, 18, 0), gateway: split(3.5, 18.5, 1.2) },
      },
      ingest: {
        concurrency: 32,
        inProcess: {
          acceptedPerSecond: 100,
          acceptLatency: { mean: 320 },
          cpuMsPerSignal: { benchProcess: 3, devServer: 5, clientProcess: 0 },
        },
        gateway: {
          acceptedPerSecond: 85,
          acceptLatency: { mean: 376.5 },
          cpuMsPerSignal: { benchProcess: 4, devServer: 5, clientProcess: 1 },
        },
        gatewayLocalClient: {
          acceptedPerSecond: 70,
          acceptLatency: { mean: 457 },
          cpuMsPerSignal: { benchProcess: 5.5, devServer: 5, clientProcess: 0 },
        },
      },
    },
  };
}

/** An interrupt series with its close and its first two segments (the rest empty), as bench/interrupt.ts names them. */
function interrupted(label: string, toClosed: { p50: number; p99: number }, first: { p50: number; p99: number }[]) {
  const segments = Object.fromEntries(interruptSegments.map((name, i) => [name, first[i] ?? pcts(NaN, NaN)]));
  return { label, toClosed, segments };
}

function split(recorded: number, published: number, received: number) {
  return {
    'send → start or update recorded by the server': { p50: recorded },
    "→ first text-delta published (a subscriber in the worker's process)": { p50: published },
    '→ first text-delta at the client': { p50: received },
  };
}

describe('why the unmet targets are not met', () => {
  it('says nothing about met targets', () => {
    expect(
      whyNot(
        ['2a', '2b', '7a', '9'].map((id) => row(id, true)),
        inputs(),
      ),
    ).toEqual([]);
  });

  it('groups the unmet ids of one cause and reads the figures of the run', () => {
    const reasons = whyNot([row('2a', false), row('2b', true), row('6a', false), row('8c', false)], inputs());
    expect(reasons.map((r) => r.ids)).toEqual([['2a'], ['6a'], ['8c']]);
    const [wake, ingest, notifications] = reasons.map((r) => r.text);
    expect(reasons.map((r) => r.ids)).not.toContainEqual(['3a']);
    expect(wake).toContain(
      'workflow task completed (poll response, activation, workflow code, reply): 11.5 vs floor 8.0 (+3.5)',
    );
    expect(wake).toContain(
      'step code running (poll response, SDK dispatch; `step-start` at subscriber): 7.9 vs floor 3.3 (+4.6)',
    );
    // The model request and the first text-delta (2.4 + 2.8) against the direct call's 5.1.
    expect(wake).toContain('model request received + first text-delta at subscriber: 5.2 vs `streamText` 5.1 (+0.1)');
    expect(wake).toContain('15.4 ms');
    // 35,000 events / 3,000 inputs against the update-with-start floor's 5; 30 CPU s per 3,000 = 10 per 1,000.
    expect(ingest).toContain('11.67 history events per input (the floor: 5.00)');
    expect(ingest).toContain('10.0 CPU s per 1,000 inputs');
    expect(notifications).toContain('1.50 workflow tasks');
    expect(notifications).toContain('2.9 notifications per run');
  });

  it('says how much more a client inside the bench process would add through the gateway', () => {
    const [gateway] = whyNot([row('10a', false), row('10b', false)], inputs());
    expect(gateway.ids).toEqual(['10a', '10b']);
    expect(gateway.text).toContain('would add 12.5 ms (idle) and 9.5 ms (new) more');
  });

  it('splits the idle wake through the gateway where it parts from the in-process client', () => {
    const [gateway] = whyNot([row('10a', false)], inputs());
    expect(gateway.text).toContain('send → start or update recorded by the server: 3.5 vs 2.0 (+1.5)');
    expect(gateway.text).toContain("published (a subscriber in the worker's process): 18.5 vs 18.0 (+0.5)");
    expect(gateway.text).toContain('→ first text-delta at the client: 1.2 vs 0.0 (+1.2)');
  });

  it('splits a new thread through the gateway when 10b alone is not met', () => {
    const [gateway] = whyNot([row('10a', true), row('10b', false)], inputs());
    expect(gateway.ids).toEqual(['10b']);
    expect(gateway.text).toContain('A new thread through the gateway beside the in-process client');
    expect(gateway.text).toContain('send → start or update recorded by the server: 4.5 vs 3.0 (+1.5)');
    expect(gateway.text).toContain('→ first text-delta at the client: 1.0 vs 0.0 (+1.0)');
    expect(gateway.text).not.toContain('The idle wake through the gateway');
  });

  it('splits both paths when neither is met', () => {
    const [gateway] = whyNot([row('10a', false), row('10b', false)], inputs());
    expect(gateway.text).toContain('The idle wake through the gateway beside the in-process client');
    expect(gateway.text).toContain('A new thread through the gateway beside the in-process client');
  });

  it('puts HTTP ingest beside the in-process rate, with both clients', () => {
    const [ingest] = whyNot([row('10c', false)], inputs());
    expect(ingest.ids).toEqual(['10c']);
    expect(ingest.text).toContain('85.0/s against 100.0/s in-process (85 %)');
    expect(ingest.text).toContain('70.0/s (70 %)');
    expect(ingest.text).toContain("in-process 3.00 in the bench's process + 5.00 in the dev server = 8.00");
    expect(ingest.text).toContain('4.00 + 5.00 + 1.00 in the client process = 10.00 (+2.0)');
    expect(ingest.text).toContain('8.00 / 10.00 = 80 %');
    expect(ingest.text).toContain(
      "With 32 sends in flight a side's rate is 32 over its mean accept latency: 320.0 ms in-process, 376.5 ms " +
        'through the gateway (+56.5)',
    );
  });

  it('splits a turn into the bare update-and-activity turn and what Threadline adds', () => {
    const [turn] = whyNot([row('7a', false)], inputs());
    expect(turn.text).toContain('A later turn adds 19 events');
    expect(turn.text).toContain('take 11');
    expect(turn.text).toContain('2 `UpsertWorkflowSearchAttributes`');
    expect(turn.text).toContain('1 more activity with 1 more workflow task (6 events)');
  });

  it("puts step end → next request beside the floor's activity → activity, with Threadline's split", () => {
    const [step] = whyNot([row('4', false)], inputs());
    expect(step.ids).toEqual(['4']);
    expect(step.text).toContain('Step end → next model request 16.6 ms p50');
    expect(step.text).toContain("the next one's code running, 9.9 ms");
    expect(step.text).toContain('workflow task completed (poll response, activation, workflow code, reply) 7.4');
  });

  it('sets a slow interrupt beside the workflow task that decided it, by the row the target numbers', () => {
    const reasons = whyNot([row('5a', true), row('5b', false)], inputs());
    expect(reasons.map((r) => r.ids)).toEqual([['5b']]);
    const [later] = reasons.map((r) => r.text);
    expect(later).toContain('long step hanging, interrupted later: the request closed at 34.0 / 407.0 ms p50 / p99');
    expect(later).toContain('the workflow task that decided the cancellation completed at 29.0 / 340.0 ms');
    expect(later).toContain('reported itself cancelled 11.0 / 89.0 ms later');
  });

  it('counts the hand-over refusals of one thread', () => {
    const [one] = whyNot([row('6d', false)], inputs());
    expect(one.text).toContain('7 update attempts were turned away');
    expect(one.text).toContain('300.0 ms p50 (2000.0 max)');
  });
});
