/**
 * (b) Active injection: a message sent while a step streams joins the run at the next step boundary. Measured from
 * the step's end (its `step-finish` reaching the subscriber) to the next model request, whose messages carry the
 * injected input.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ThreadEvent } from '../protocol/events';
import type { SendResult } from '../client/connect';
import type { ScriptedReply } from '../test/support/model-server';
import { quickReply, wallClock, watchTurn, withTimeout, type BenchEnv } from './env';
import { findEvent, settledHistory, splitAt, stepEvent } from './history';
import { summarize, summarizeEach, type Summary } from './stats';

/** The first step: 10 chunks, 30 ms apart. The injected message is sent at its first text-delta. */
export const slowReply: ScriptedReply = { text: Array.from({ length: 10 }, (_, i) => `slow${i} `), chunkDelayMs: 30 };

export const injectionSegments = [
  '`step-finish` at subscriber → step activity completed (server)',
  '→ workflow task started (matched to a poller)',
  '→ workflow task completed (poll response, activation, workflow code, reply)',
  '→ next step activity task started (matched to a poller)',
  '→ step code running (poll response, SDK dispatch; `step-start` at subscriber)',
  '→ model request received',
] as const;

type Segment = (typeof injectionSegments)[number];

interface InjectionSample {
  stepEndToNextRequest: number;
  sendToAccepted: number;
  segments: Record<Segment, number>;
}

export interface InjectionResult {
  samples: number;
  warmup: number;
  stepEndToNextRequest: Summary;
  sendToAccepted: Summary;
  segments: Record<Segment, Summary>;
}

export async function benchInjection(
  env: BenchEnv,
  { samples, warmup }: { samples: number; warmup: number },
): Promise<InjectionResult> {
  const measured: InjectionSample[] = [];
  env.probe.reply = (req) => {
    const text = JSON.stringify(req.messages);
    return text.includes('inject-') || !text.includes('slow-') ? quickReply : slowReply;
  };
  try {
    for (let i = 0; i < warmup + samples; i++) {
      const sample = await injectionTurn(env);
      if (i >= warmup) measured.push(sample);
    }
  } finally {
    env.probe.reply = () => quickReply;
  }
  return {
    samples,
    warmup,
    stepEndToNextRequest: summarize(measured.map((s) => s.stepEndToNextRequest)),
    sendToAccepted: summarize(measured.map((s) => s.sendToAccepted)),
    segments: summarizeEach(
      injectionSegments,
      measured.map((s) => s.segments),
    ),
  };
}

async function injectionTurn(env: BenchEnv): Promise<InjectionSample> {
  const target = { resourceId: 'bench', threadId: `inject-${randomUUID()}` };
  const slow = `slow-${randomUUID()}`;
  const inject = `inject-${randomUUID()}`;
  const sub = env.agent.subscribeToThread(target);
  let injected: Promise<{ sent: number; accepted: number; result: SendResult }> | undefined;
  const injectOnFirstDelta = (event: ThreadEvent) => {
    if (event.type !== 'text-delta' || injected) return;
    const sent = performance.now();
    injected = env.agent.sendMessage(inject, target).then((result) => ({ sent, accepted: performance.now(), result }));
  };
  let stepEnd: number, stepStart: number, request: number, sent: number, accepted: number;
  try {
    const nextRequest = env.probe.arrival(inject);
    const watching = watchTurn(sub.stream, injectOnFirstDelta);
    await env.agent.sendMessage(slow, target);
    const [turn, arrival] = await withTimeout(Promise.all([watching, nextRequest]), 'an injection turn');
    const send = await injected!;
    if (send.result.action !== 'deliver') {
      throw new Error(`The injected message was not delivered to the active run (action: ${send.result.action}).`);
    }
    if (turn.stepFinishes.length < 2) throw new Error('The injected message did not get a step of its own.');
    [stepEnd, stepStart, request] = [turn.stepFinishes[0], turn.stepStarts[1], arrival.at];
    [sent, accepted] = [send.sent, send.accepted];
  } finally {
    sub.unsubscribe();
  }
  const { events } = await settledHistory(env, target);
  const completed = stepEvent(events, 0, 'ActivityTaskCompleted', 0);
  const taskStarted = findEvent(events, completed.id, 'WorkflowTaskStarted');
  const taskCompleted = findEvent(events, completed.id, 'WorkflowTaskCompleted');
  const nextStarted = stepEvent(events, 0, 'ActivityTaskStarted', 1);
  const segments = splitAt(injectionSegments, [
    wallClock(stepEnd),
    completed.at,
    taskStarted.at,
    taskCompleted.at,
    nextStarted.at,
    wallClock(stepStart),
    wallClock(request),
  ]);
  return {
    stepEndToNextRequest: request - stepEnd,
    sendToAccepted: accepted - sent,
    segments,
  };
}
