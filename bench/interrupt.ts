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
import type { ScriptedReply } from '../test/support/model-server';
import { defaultThreadConfig } from '../protocol/thread-config';
import { quickReply, wallClock, withTimeout, type BenchEnv } from './env';
import { findEvent, settledHistory, splitAt, stepEvent } from './history';
import { summarize, summarizeEach, type Summary } from './stats';

/** Evenly spread fractions in [0, 1) (golden-ratio sequence): reproducible "random" moments. */
const spread = (i: number) => (i * 0.6180339887498949) % 1;

const streamingReply: ScriptedReply = { text: Array.from({ length: 400 }, (_, i) => `w${i} `), chunkDelayMs: 50 };

export const interruptVariants = {
  /** Six chunks 50 ms apart: a 300 ms step, interrupted at its first text-delta (≈ 250 ms before it would end). */
  short: {
    label: '300 ms step (6 chunks 50 ms apart), interrupted at its first text-delta',
    reply: { text: Array.from({ length: 6 }, (_, i) => `s${i} `), chunkDelayMs: 50 },
    delayMs: (): number => 0,
    how: 'interrupt',
  },
  /** 400 chunks 50 ms apart (20 s): still streaming when interrupted. Interrupted at its first text-delta. */
  streaming: {
    label: 'long step streaming (a chunk every 50 ms), interrupted at its first text-delta',
    reply: streamingReply,
    delayMs: (): number => 0,
    how: 'interrupt',
  },
  /** One chunk, then nothing until the connection closes. Interrupted at that chunk's text-delta. */
  hanging: {
    label: 'long step hanging after its first chunk, interrupted at that text-delta',
    reply: { text: ['partial '], hang: true },
    delayMs: (): number => 0,
    how: 'interrupt',
  },
  /**
   * The same hang, interrupted at a moment spread over one period of the step's heartbeat timer, starting once the
   * heartbeats its first chunk produced have gone out (the throttle holds them for up to 1 s).
   */
  hangingLater: {
    label: 'long step hanging after its first chunk, interrupted 1.1–4.4 s into the hang',
    reply: { text: ['partial '], hang: true },
    delayMs: (i: number): number => 1_100 + spread(i) * 3_333,
    how: 'interrupt',
  },
  /** The streaming step again, aborted (`abortThread`) at its first text-delta: no new step follows. */
  abort: {
    label: 'long step streaming, aborted (`abortThread`) at its first text-delta',
    reply: streamingReply,
    delayMs: (): number => 0,
    how: 'abort',
  },
} satisfies Record<
  string,
  { label: string; reply: ScriptedReply; delayMs: (sample: number) => number; how: 'interrupt' | 'abort' }
>;

export type InterruptVariant = keyof typeof interruptVariants;

export const interruptSegments = [
  'send → step cancellation requested (update accepted, workflow task completed; server)',
  '→ step reported cancelled (notice heard on the bus, model call aborted, cancellation confirmed by the server; server)',
  '→ next step activity task started',
  '→ next model request received',
  '→ first text-delta of the new step at subscriber',
] as const;

type Segment = (typeof interruptSegments)[number];

interface InterruptSample {
  /** The send → the model server saw the interrupted request's connection close; Infinity: it was never closed early. */
  toClosed: number;
  /** Interrupt: the send → the new step's first text-delta at the subscriber (NaN for an abort). */
  toNewFirstDelta: number;
  toSendResolved: number;
  /** What the send answered: the interrupt's `action`, or `abort` / `not aborted`. */
  action: string;
  /** From the interrupted step's start (activity task started, server) to the send: where in its heartbeat cycle. */
  stepAgeAtSend: number;
  /** Interrupts that closed the request: where the time went. */
  segments?: Record<Segment, number>;
}

export interface InterruptSeries {
  label: string;
  how: 'interrupt' | 'abort';
  samples: number;
  /** Samples whose model request ended on its own before the interrupt or abort reached it (counted as ∞ below). */
  notClosed: number;
  toClosed: Summary;
  toNewFirstDelta: Summary;
  toSendResolved: Summary;
  stepAgeAtSend: Summary;
  /** What the sends answered, by action. */
  actions: Record<string, number>;
  /** Over the interrupts that closed the request. */
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
  const variants = Object.keys(interruptVariants) as InterruptVariant[];
  const measured = Object.fromEntries(variants.map((v) => [v, [] as InterruptSample[]])) as Record<
    InterruptVariant,
    InterruptSample[]
  >;
  let variant: InterruptVariant = 'streaming';
  env.probe.reply = (req) => {
    const text = JSON.stringify(req.messages);
    // The new question's request also carries the interrupted one (it is in the conversation): check it first.
    if (text.includes('new question ')) return quickReply;
    return text.includes('interrupted-') ? interruptVariants[variant].reply : quickReply;
  };
  try {
    // Interleaved, so every variant sees the same machine state.
    for (let i = 0; i < warmup + samples; i++) {
      for (const v of variants) {
        variant = v;
        const sample = await interruptTurn(env, v, interruptVariants[v].delayMs(i));
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
    series: Object.fromEntries(variants.map((v) => [v, series(v, measured[v])])) as Record<
      InterruptVariant,
      InterruptSeries
    >,
  };
}

async function interruptTurn(env: BenchEnv, variant: InterruptVariant, delayMs: number): Promise<InterruptSample> {
  const { how } = interruptVariants[variant];
  const target = { resourceId: 'bench', threadId: `interrupt-${randomUUID()}` };
  const first = `interrupted-${randomUUID()}`;
  const question = `new question ${randomUUID()}`;
  const sub = env.agent.subscribeToThread(target);
  const firstArrival = env.probe.arrival(first);
  // Stamped as soon as the model server sees the interrupted request's connection close (never, if it ends first).
  let closed = Infinity;
  void firstArrival.then(({ req }) => req.closed).then(() => (closed = performance.now()));
  let nextRequest = NaN;
  void env.probe.arrival(question).then(({ at }) => (nextRequest = at));

  let sent = NaN;
  let send: Promise<{ action: string; at: number }> | undefined;
  let stepStarts = 0;
  let newFirstDelta = NaN;
  const act = () => {
    sent = performance.now();
    const done = (action: string) => ({ action, at: performance.now() });
    return how === 'abort'
      ? env.client.abortThread(target).then((r) => done(r.aborted ? 'abort' : 'not aborted'))
      : env.agent.sendMessage(question, { ...target, ifActive: { behavior: 'interrupt' } }).then((r) => done(r.action));
  };
  const types: string[] = [];
  try {
    const watching = (async () => {
      for await (const event of sub.stream) {
        const at = performance.now();
        types.push(event.type);
        if (event.type === 'step-start') stepStarts += 1;
        if (event.type === 'error') throw new Error(`The run failed: ${JSON.stringify(event.payload)}`);
        if (event.type === 'text-delta' && stepStarts === 1 && !send) send = sleep(delayMs).then(act);
        // The new step's deltas are the first ones after its model request arrived.
        if (event.type === 'text-delta' && at > nextRequest && Number.isNaN(newFirstDelta)) newFirstDelta = at;
        const ended = event.type === 'finish' || event.type === 'abort';
        if (ended && send && (how === 'abort' || !Number.isNaN(newFirstDelta))) return;
      }
    })();
    await env.agent.sendMessage(first, target);
    await withTimeout(watching, 'an interrupt turn');
  } finally {
    sub.unsubscribe();
  }
  const answered = await withTimeout(send!, 'the interrupting send');
  const { req } = await firstArrival;
  // The close, if there is one, is stamped before the next step could start; give its callback a moment all the same.
  if (req.closedEarly) await withTimeout(req.closed, 'the close to be stamped').then(() => sleep(0));
  const { events } = await settledHistory(env, target);
  const firstStarted = stepEvent(events, 0, 'ActivityTaskStarted', 0);
  const sample: InterruptSample = {
    toClosed: closed - sent,
    toNewFirstDelta: newFirstDelta - sent,
    toSendResolved: answered.at - sent,
    action: answered.action,
    stepAgeAtSend: wallClock(sent) - firstStarted.at,
  };
  if (how === 'interrupt' && Number.isFinite(closed)) {
    if (!types.includes('step-interrupted')) throw new Error(`No step-interrupted event: ${types.join(', ')}`);
    sample.segments = splitAt(interruptSegments, [
      wallClock(sent),
      findEvent(events, 0, 'ActivityTaskCancelRequested').at,
      findEvent(events, 0, 'ActivityTaskCanceled').at,
      stepEvent(events, 0, 'ActivityTaskStarted', 1).at,
      wallClock(nextRequest),
      wallClock(newFirstDelta),
    ]);
  }
  return sample;
}

function series(variant: InterruptVariant, samples: InterruptSample[]): InterruptSeries {
  const { label, how } = interruptVariants[variant];
  const actions: Record<string, number> = {};
  for (const s of samples) actions[s.action] = (actions[s.action] ?? 0) + 1;
  const withSegments = samples.flatMap((s) => (s.segments ? [s.segments] : []));
  return {
    label,
    how,
    samples: samples.length,
    notClosed: samples.filter((s) => !Number.isFinite(s.toClosed)).length,
    toClosed: summarize(samples.map((s) => s.toClosed)),
    toNewFirstDelta: summarize(samples.map((s) => s.toNewFirstDelta).filter(Number.isFinite)),
    toSendResolved: summarize(samples.map((s) => s.toSendResolved)),
    stepAgeAtSend: summarize(samples.map((s) => s.stepAgeAtSend)),
    actions,
    segments: summarizeEach(interruptSegments, withSegments),
  };
}
