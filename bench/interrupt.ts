/**
 * (e) Interrupt latency: while a step streams, `sendMessage(..., { ifActive: { behavior: 'interrupt' } })` cancels it
 * and a fresh step answers the new input. Measured from the send call to (a) the model server seeing the interrupted
 * request's connection close, and (b) the new step's first `text-delta` at a subscriber.
 *
 * Cancellation reaches a running activity only in the response to one of its heartbeats, so how the interrupted step
 * behaves matters: two variants, one whose model stream keeps sending chunks (every chunk heartbeats, throttled by
 * the worker), one whose stream hangs after its first chunk (only the step's heartbeat timer runs).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ThreadEvent } from '../protocol/events';
import type { SendResult } from '../client/connect';
import type { ScriptedReply } from '../test/support/model-server';
import { defaultThreadConfig } from '../protocol/thread-config';
import { quickReply, wallClock, withTimeout, type BenchEnv } from './env';
import { findEvent, settledHistory, splitAt, stepEvent } from './history';
import { summarize, summarizeEach, type Summary } from './stats';

/** Evenly spread fractions in [0, 1) (golden-ratio sequence): reproducible "random" moments. */
const spread = (i: number) => (i * 0.6180339887498949) % 1;

export const interruptVariants = {
  /** 400 chunks 50 ms apart (20 s): still streaming when interrupted. Interrupted at its first text-delta. */
  streaming: {
    label: 'streaming (a chunk every 50 ms), interrupted at its first text-delta',
    reply: { text: Array.from({ length: 400 }, (_, i) => `w${i} `), chunkDelayMs: 50 },
    delayMs: (): number => 0,
  },
  /** One chunk, then nothing until the connection closes. Interrupted at that chunk's text-delta. */
  hanging: {
    label: 'hanging after its first chunk, interrupted at that text-delta',
    reply: { text: ['partial '], hang: true },
    delayMs: (): number => 0,
  },
  /**
   * The same hang, interrupted at a moment spread over one period of the step's heartbeat timer, starting once the
   * heartbeats its first chunk produced have gone out (the throttle holds them for up to 1 s).
   */
  hangingLater: {
    label: 'hanging after its first chunk, interrupted 1.1–4.4 s into the hang',
    reply: { text: ['partial '], hang: true },
    delayMs: (i: number): number => 1_100 + spread(i) * 3_333,
  },
} satisfies Record<string, { label: string; reply: ScriptedReply; delayMs: (sample: number) => number }>;

export type InterruptVariant = keyof typeof interruptVariants;

export const interruptSegments = [
  'send → step cancellation requested (update accepted, workflow task completed; server)',
  '→ step cancellation recorded (cancel delivered in a heartbeat response, model call aborted; server)',
  '→ next step activity task started',
  '→ next model request received',
  '→ first text-delta of the new step at subscriber',
] as const;

type Segment = (typeof interruptSegments)[number];

interface InterruptSample {
  toClosed: number;
  toNewFirstDelta: number;
  toSendResolved: number;
  /** From the interrupted step's start (activity task started, server) to the send: where in its heartbeat cycle. */
  stepAgeAtSend: number;
  segments: Record<Segment, number>;
}

export interface InterruptSeries {
  label: string;
  toClosed: Summary;
  toNewFirstDelta: Summary;
  toSendResolved: Summary;
  stepAgeAtSend: Summary;
  segments: Record<Segment, Summary>;
}

export interface InterruptResult {
  samples: number;
  warmup: number;
  /** The worker's heartbeat settings the latency depends on. */
  heartbeat: { stepHeartbeatTimeoutMs: number; stepTimerMs: number; maxThrottleMs: number };
  series: Record<InterruptVariant, InterruptSeries>;
}

export async function benchInterrupt(
  env: BenchEnv,
  { samples, warmup }: { samples: number; warmup: number },
): Promise<InterruptResult> {
  const measured: Record<InterruptVariant, InterruptSample[]> = { streaming: [], hanging: [], hangingLater: [] };
  const variants = Object.keys(interruptVariants) as InterruptVariant[];
  let variant: InterruptVariant = 'streaming';
  env.probe.reply = (req) => {
    const text = JSON.stringify(req.messages);
    // The new question's request also carries the interrupted one (it is in the conversation): check it first.
    if (text.includes('new question ')) return quickReply;
    return text.includes('interrupted-') ? interruptVariants[variant].reply : quickReply;
  };
  try {
    // Interleaved, so both variants see the same machine state.
    for (let i = 0; i < warmup + samples; i++) {
      for (const v of variants) {
        variant = v;
        const sample = await interruptTurn(env, interruptVariants[v].delayMs(i));
        if (i >= warmup) measured[v].push(sample);
      }
    }
  } finally {
    env.probe.reply = () => quickReply;
  }
  const heartbeatTimeoutMs = defaultThreadConfig.step.heartbeatTimeoutMs;
  return {
    samples,
    warmup,
    heartbeat: {
      stepHeartbeatTimeoutMs: heartbeatTimeoutMs,
      // activities/step.ts: setInterval(heartbeat, max(200, heartbeatTimeout / 3)).
      stepTimerMs: Math.round(Math.max(200, heartbeatTimeoutMs / 3)),
      // worker/index.ts: maxHeartbeatThrottleInterval.
      maxThrottleMs: 1_000,
    },
    series: Object.fromEntries(variants.map((v) => [v, series(interruptVariants[v].label, measured[v])])) as Record<
      InterruptVariant,
      InterruptSeries
    >,
  };
}

async function interruptTurn(env: BenchEnv, delayMs: number): Promise<InterruptSample> {
  const target = { resourceId: 'bench', threadId: `interrupt-${randomUUID()}` };
  const first = `interrupted-${randomUUID()}`;
  const question = `new question ${randomUUID()}`;
  const sub = env.agent.subscribeToThread(target);
  const firstArrival = env.probe.arrival(first);
  // Stamped as soon as the model server sees the interrupted request's connection close.
  const closedAt = firstArrival.then(({ req }) => req.closed).then(() => performance.now());
  const nextArrival = env.probe.arrival(question);

  let sent = NaN;
  let interrupt: Promise<{ result: SendResult; at: number }> | undefined;
  let stepStarts = 0;
  let newFirstDelta = NaN;
  const onEvent = (event: ThreadEvent) => {
    if (event.type === 'step-start') stepStarts += 1;
    if (event.type !== 'text-delta') return;
    if (stepStarts === 1 && !interrupt) {
      interrupt = sleep(delayMs).then(() => {
        sent = performance.now();
        return env.agent
          .sendMessage(question, { ...target, ifActive: { behavior: 'interrupt' } })
          .then((result) => ({ result, at: performance.now() }));
      });
    } else if (stepStarts >= 2 && Number.isNaN(newFirstDelta)) {
      newFirstDelta = performance.now();
    }
  };
  let closed: number, request: number, resolved: number;
  const types: string[] = [];
  try {
    const watching = (async () => {
      for await (const event of sub.stream) {
        onEvent(event);
        types.push(event.type);
        if (event.type === 'error') throw new Error(`The run failed: ${JSON.stringify(event.payload)}`);
        if (event.type === 'finish') return;
      }
    })();
    await env.agent.sendMessage(first, target);
    await withTimeout(watching, 'an interrupt turn');
    const send = await withTimeout(interrupt!, 'the interrupting send');
    if (send.result.action !== 'interrupt') {
      throw new Error(`The interrupting message was not an interrupt (action: ${send.result.action}).`);
    }
    if (!types.includes('step-interrupted')) throw new Error(`No step-interrupted event: ${types.join(', ')}`);
    const { req } = await firstArrival;
    if (!req.closedEarly) throw new Error('The interrupted model request was not closed early.');
    [closed, { at: request }, resolved] = await withTimeout(
      Promise.all([closedAt, nextArrival, Promise.resolve(send.at)]),
      'the interrupted request to close',
    );
  } finally {
    sub.unsubscribe();
  }
  const { events } = await settledHistory(env, target);
  const firstStarted = stepEvent(events, 0, 'ActivityTaskStarted', 0);
  const cancelRequested = findEvent(events, 0, 'ActivityTaskCancelRequested');
  const cancelled = findEvent(events, 0, 'ActivityTaskCanceled');
  const nextStarted = stepEvent(events, 0, 'ActivityTaskStarted', 1);
  return {
    toClosed: closed - sent,
    toNewFirstDelta: newFirstDelta - sent,
    toSendResolved: resolved - sent,
    stepAgeAtSend: wallClock(sent) - firstStarted.at,
    segments: splitAt(interruptSegments, [
      wallClock(sent),
      cancelRequested.at,
      cancelled.at,
      nextStarted.at,
      wallClock(request),
      wallClock(newFirstDelta),
    ]),
  };
}

function series(label: string, samples: InterruptSample[]): InterruptSeries {
  return {
    label,
    toClosed: summarize(samples.map((s) => s.toClosed)),
    toNewFirstDelta: summarize(samples.map((s) => s.toNewFirstDelta)),
    toSendResolved: summarize(samples.map((s) => s.toSendResolved)),
    stepAgeAtSend: summarize(samples.map((s) => s.stepAgeAtSend)),
    segments: summarizeEach(
      interruptSegments,
      samples.map((s) => s.segments),
    ),
  };
}
