/**
 * (a) Idle-wake overhead: `sendMessage` to an idle thread → model request → first `text-delta` at a subscriber,
 * against the floor of a direct AI SDK `streamText` call to the same model server. Samples are interleaved
 * (fresh thread, floor, second turn on that thread, a round of the bare-Temporal floor's series, …) so every series
 * sees the same machine state.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createOpenAI } from '@ai-sdk/openai';
import { streamText, type LanguageModel } from 'ai';
import type { ThreadTarget } from '../protocol/schemas';
import { benchAgent, wallClock, watchTurn, withTimeout, type BenchEnv, type TurnEvents } from './env';
import { floorRound, summarizeFloorLatency, type FloorLatencyResult, type FloorRoundSample } from './floor/latency';
import { findEvent, settledHistory, splitAt, stepEvent, type HistoryEvent } from './history';
import { summarize, summarizeEach, type Summary } from './stats';

/** Where a wake's time goes, in order; each is the time since the previous mark. */
export const wakeSegments = [
  'send → start or update recorded by the server',
  '→ workflow task started (matched to a poller)',
  '→ workflow task completed (poll response, activation, workflow code, reply)',
  '→ step activity task started (matched to a poller)',
  '→ step code running (poll response, SDK dispatch; `step-start` at subscriber)',
  '→ model request received',
  '→ first text-delta at subscriber',
] as const;

type Segment = (typeof wakeSegments)[number];

interface WakeSample {
  toModelRequest: number;
  toFirstDelta: number;
  toSendResolved: number;
  segments: Record<Segment, number>;
}

interface FloorSample {
  toModelRequest: number;
  toFirstDelta: number;
}

export interface WakeSeries {
  toModelRequest: Summary;
  toFirstDelta: Summary;
  toSendResolved: Summary;
  segments: Record<Segment, Summary>;
  /** First text-delta p50 minus the floor's, and their ratio. */
  overheadP50Ms: number;
  ratioP50: number;
}

export interface IdleWakeResult {
  samples: number;
  warmup: number;
  /** The first message to a thread: update-with-start creates the workflow. */
  freshThread: WakeSeries;
  /** The next message to the same thread once it is idle again: an update wakes the running workflow. */
  idleThread: WakeSeries;
  floor: { toModelRequest: Summary; toFirstDelta: Summary };
  /** The bare-Temporal floor (bench/floor/), one round of it between the Threadline samples of each round. */
  temporalFloor: FloorLatencyResult;
}

export async function benchIdleWake(
  env: BenchEnv,
  { samples, warmup }: { samples: number; warmup: number },
): Promise<IdleWakeResult> {
  const model = createOpenAI({ baseURL: env.modelUrl, apiKey: 'bench' }).chat('bench');
  const fresh: WakeSample[] = [];
  const idle: WakeSample[] = [];
  const floor: FloorSample[] = [];
  const temporalFloor: FloorRoundSample[] = [];
  for (let i = 0; i < warmup + samples; i++) {
    const target = { resourceId: 'bench', threadId: `wake-${randomUUID()}` };
    const first = await wakeTurn(env, target, 0);
    const direct = await floorCall(env, model);
    const second = await wakeTurn(env, target, first.historyLength);
    const bare = await floorRound(env.floor);
    if (i < warmup) continue;
    fresh.push(first.sample);
    floor.push(direct);
    idle.push(second.sample);
    temporalFloor.push(bare);
  }
  const floorSummary = {
    toModelRequest: summarize(floor.map((s) => s.toModelRequest)),
    toFirstDelta: summarize(floor.map((s) => s.toFirstDelta)),
  };
  return {
    samples,
    warmup,
    freshThread: series(fresh, floorSummary.toFirstDelta),
    idleThread: series(idle, floorSummary.toFirstDelta),
    floor: floorSummary,
    temporalFloor: summarizeFloorLatency(temporalFloor),
  };
}

/** One turn through Threadline: subscribe, `sendMessage`, wait for `finish`, then read the turn's history. */
async function wakeTurn(
  env: BenchEnv,
  target: ThreadTarget,
  historyBefore: number,
): Promise<{ sample: WakeSample; historyLength: number }> {
  const marker = `wake ${randomUUID()}`;
  const sub = env.agent.subscribeToThread(target);
  let t0: number, request: number, turn: TurnEvents, resolved: number;
  try {
    const arrival = env.probe.arrival(marker);
    const watching = watchTurn(sub.stream);
    t0 = performance.now();
    const sent = env.agent.sendMessage(marker, target).then(() => performance.now());
    [{ at: request }, turn, resolved] = await withTimeout(Promise.all([arrival, watching, sent]), 'an idle-wake turn');
  } finally {
    sub.unsubscribe();
  }
  const { events } = await settledHistory(env, target);
  return {
    sample: {
      toModelRequest: request - t0,
      toFirstDelta: turn.firstDelta - t0,
      toSendResolved: resolved - t0,
      segments: segmentsOf(events, historyBefore, [t0, turn.stepStarts[0], request, turn.firstDelta].map(wallClock)),
    },
    historyLength: events.length,
  };
}

/** Splits one wake at the history events between the send and the model request. */
function segmentsOf(events: HistoryEvent[], from: number, [sent, stepStart, request, firstDelta]: number[]) {
  const recorded =
    from === 0 ? findEvent(events, 0, 'WorkflowExecutionStarted') : findEvent(events, from, 'WorkflowTaskScheduled');
  const taskStarted = findEvent(events, from, 'WorkflowTaskStarted');
  const taskCompleted = findEvent(events, from, 'WorkflowTaskCompleted');
  const activityStarted = stepEvent(events, from, 'ActivityTaskStarted');
  return splitAt(wakeSegments, [
    sent,
    recorded.at,
    taskStarted.at,
    taskCompleted.at,
    activityStarted.at,
    stepStart,
    request,
    firstDelta,
  ]);
}

/** The floor: the same request through the AI SDK directly, no Temporal, no bus. */
async function floorCall(env: BenchEnv, model: LanguageModel): Promise<FloorSample> {
  const marker = `floor ${randomUUID()}`;
  const arrival = env.probe.arrival(marker);
  const t0 = performance.now();
  const result = streamText({
    model,
    system: benchAgent.instructions,
    messages: [{ role: 'user', content: [{ type: 'text', text: marker }] }],
    maxRetries: 0,
  });
  let firstDelta = NaN;
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta' && Number.isNaN(firstDelta)) firstDelta = performance.now();
    if (part.type === 'error') throw part.error;
  }
  const { at } = await withTimeout(arrival, 'a floor request');
  return { toModelRequest: at - t0, toFirstDelta: firstDelta - t0 };
}

function series(samples: WakeSample[], floorFirstDelta: Summary): WakeSeries {
  const toFirstDelta = summarize(samples.map((s) => s.toFirstDelta));
  return {
    toModelRequest: summarize(samples.map((s) => s.toModelRequest)),
    toFirstDelta,
    toSendResolved: summarize(samples.map((s) => s.toSendResolved)),
    segments: summarizeEach(
      wakeSegments,
      samples.map((s) => s.segments),
    ),
    overheadP50Ms: round(toFirstDelta.p50 - floorFirstDelta.p50),
    ratioP50: round(toFirstDelta.p50 / floorFirstDelta.p50),
  };
}

const round = (x: number) => Math.round(x * 100) / 100;
