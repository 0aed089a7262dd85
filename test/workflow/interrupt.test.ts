/**
 * Interrupt and abort reach the provider request at once, on a real dev server (behaviour §2.5): the workflow cancels
 * the step's activity as it always did, and a cancel notice over the bus lets the step's worker stop the model call
 * before Temporal's cancellation arrives in a heartbeat response (activities/cancel-notices.ts).
 *
 * The interrupted steps stream a 300 ms reply. The test interrupts once the first chunk reached subscribers (the step
 * heartbeated on it, so the SDK sends its next heartbeat, the one that could carry the cancellation, a second later)
 * and lets the rest of the reply go once the workflow has decided: without the notice the model finishes its reply
 * before the step hears of the cancellation. The tests assert what the model server saw (the request closed before the
 * reply finished) and what subscribers got, never a time.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import type { ThreadEvent } from '../../protocol/events';
import type { StepInput } from '../../protocol/step';
import type { ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { RedisBus } from '../../bus/redis';
import type { ControlNotice } from '../../bus/types';
import { createWorker, type ThreadlineWorker } from '../../worker/index';
import { collectUntil, startHarness, testAgent, within, type Harness } from '../support/harness';
import { echoResponder, type ReceivedRequest, type ScriptedReply } from '../support/model-server';
import { startWorkerProcess, workerEnvFor, type WorkerProcess } from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';

let h: Harness;

beforeAll(async () => {
  // A short heartbeat timeout bounds how long a step stopped by a notice waits for a cancellation that never comes.
  h = await startHarness({ threadConfig: { step: { heartbeatTimeoutMs: 3_000, initialRetryMs: 100 } } });
  await warmUp(h);
});
afterAll(async () => {
  await h?.close();
});

const tester = () => h.client.agent(testAgent.id);

/**
 * One turn, so the first interrupted step does not run in a cold worker (loading the model code, a first workflow
 * task): the interrupts below should happen well within the step's heartbeat throttle, as on a running worker.
 */
async function warmUp(on: Harness): Promise<void> {
  const t = on.thread();
  const sub = on.client.subscribeToThread(t);
  const sent = await on.client.agent(testAgent.id).sendMessage('warm up', t);
  await collectUntil(sub.stream, (_e, all) => ended(sent.runId)(all)).finally(() => sub.unsubscribe());
}

/** Six chunks 50 ms apart, a 300 ms reply, held after the first chunk until `release()`. */
function heldReply(): { reply: ScriptedReply; release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  onTestFinished(() => release());
  return {
    reply: { text: ['one ', 'two ', 'three ', 'four ', 'five ', 'six '], chunkDelayMs: 50, holdAfterFirstChunk: held },
    release,
  };
}

/** Answers the first request whose prompt mentions `marker` with `reply`, every other one with an echo. */
function scriptFor(marker: string, reply: ScriptedReply, on: Harness = h): Promise<ReceivedRequest> {
  let matched = false;
  let arrived!: (req: ReceivedRequest) => void;
  const first = new Promise<ReceivedRequest>((resolve) => (arrived = resolve));
  on.model.setResponder((req) => {
    if (matched || !JSON.stringify(req.messages).includes(marker)) return echoResponder(req);
    matched = true;
    arrived(req);
    return reply;
  });
  return within(first, `the model request of "${marker}"`);
}

/** Records a thread's events from now on; `until(done)` resolves with them once `done` holds (fails after 60 s). */
function record(t: ThreadTarget, on: Harness = h) {
  const sub = on.client.subscribeToThread(t);
  onTestFinished(() => sub.unsubscribe());
  const events: ThreadEvent[] = [];
  let wake = () => {};
  void (async () => {
    for await (const event of sub.stream) {
      events.push(event);
      wake();
    }
  })().catch(() => undefined);
  return {
    until: (done: (all: ThreadEvent[]) => boolean, what: string): Promise<ThreadEvent[]> =>
      within(
        new Promise<ThreadEvent[]>((resolve) => {
          wake = () => done(events) && resolve([...events]);
          wake();
        }),
        what,
        60_000,
      ),
  };
}

const ended = (runId: string | undefined) => (all: ThreadEvent[]) =>
  all.some((e) => (e.type === 'finish' || e.type === 'abort') && e.runId === runId);

const firstChunk = (all: ThreadEvent[]) => all.some((e) => e.type === 'text-delta');

/** Event types without the token stream. */
const shape = (events: ThreadEvent[]) =>
  events.map((e) => e.type).filter((type) => !['text-start', 'text-delta', 'text-end'].includes(type));

const textOf = (events: ThreadEvent[]) =>
  events
    .filter((e) => e.type === 'text-delta')
    .map((e) => (e.payload as { text: string }).text)
    .join('');

/** The keys of the thread's steps so far, in order (from the step activities' inputs in its history). */
async function stepKeys(t: ThreadTarget): Promise<string[]> {
  const history = await h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId)).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a) => a?.activityType?.name === 'runStep')
    .map((a) => defaultPayloadConverter.fromPayload<StepInput>(a!.input!.payloads![0]).stepKey);
}

/**
 * Interrupts a 300 ms step with a new message: the request closes before the reply ended, the interrupted step's
 * chunks precede `step-interrupted`, and the next step answers the new message.
 */
async function interruptA300msStep(on: Harness): Promise<void> {
  const t = on.thread();
  const rec = record(t, on);
  const held = heldReply();
  const arrived = scriptFor('write an essay', held.reply, on);
  const agent = on.client.agent(testAgent.id);
  const start = await agent.sendMessage('write an essay', t);
  const req = await arrived;
  await rec.until(firstChunk, 'the first chunk');

  const sent = await agent.sendMessage('a new question', { ...t, ifActive: { behavior: 'interrupt' } });
  held.release();
  expect(sent).toMatchObject({ action: 'interrupt', runId: start.runId });
  expect(await within(req.ended, 'the interrupted request to end')).toBe('closed');

  const all = await rec.until(ended(start.runId), 'the run to end');
  expect(shape(all)).toEqual([
    'start',
    'data-user-message',
    'step-start',
    'step-interrupted',
    'data-user-message',
    'step-start',
    'step-finish',
    'finish',
  ]);
  const interruptedAt = all.findIndex((e) => e.type === 'step-interrupted');
  const nextStart = all.findIndex((e, i) => i > interruptedAt && e.type === 'step-start');
  expect(textOf(all.slice(0, interruptedAt))).not.toBe('one two three four five six ');
  expect(all.slice(interruptedAt, nextStart).filter((e) => e.type.startsWith('text-'))).toEqual([]);
  expect(textOf(all.slice(nextStart))).toBe('Echo: a new question');
}

describe('interrupt', () => {
  it('closes the provider request of a 300 ms step before its reply ends; the run answers the new message', () =>
    interruptA300msStep(h));
});

describe('abortThread', () => {
  it('closes the provider request of a 300 ms step before its reply ends; the run ends with abort', async () => {
    const t = h.thread();
    const rec = record(t);
    const held = heldReply();
    const arrived = scriptFor('count slowly', held.reply);
    const start = await tester().sendMessage('count slowly', t);
    const req = await arrived;
    await rec.until(firstChunk, 'the first chunk');

    const aborted = await tester().abortThread(t);
    held.release();
    expect(aborted).toMatchObject({ aborted: true, runId: start.runId });
    expect(await within(req.ended, 'the aborted request to end')).toBe('closed');

    const all = await rec.until(ended(start.runId), 'the abort');
    expect(shape(all)).toEqual(['start', 'data-user-message', 'step-start', 'step-interrupted', 'abort']);
  });
});

describe('cancel notices', () => {
  it('a notice for a step that already ended, or for another namespace, stops nothing', async () => {
    const t = h.thread();
    const rec = record(t);
    const first = await tester().sendMessage('hello', t);
    await rec.until(ended(first.runId), 'the first run to end');
    const [finished] = await stepKeys(t);

    const held = heldReply();
    const arrived = scriptFor('tell a story', held.reply);
    const second = await tester().sendMessage('tell a story', t);
    const req = await arrived;
    const [, running] = await stepKeys(t);
    const key = threadKey(t.resourceId, t.threadId);
    // A listener of our own: the bus hands each notice to every listener at once, the worker's included.
    const heard: ControlNotice[] = [];
    const stop = await h.bus.onNotice((notice) => heard.push(notice));
    onTestFinished(stop);
    await h.bus.sendNotice({ type: 'step-cancel', namespace: 'default', threadKey: key, stepKey: finished });
    await h.bus.sendNotice({ type: 'step-cancel', namespace: 'elsewhere', threadKey: key, stepKey: running });
    await within(
      new Promise<void>((resolve) => {
        const check = setInterval(() => heard.length === 2 && (clearInterval(check), resolve()), 5);
      }),
      'the notices to be heard',
    );
    held.release();

    expect(await within(req.ended, 'the second request to end')).toBe('finished');
    const all = await rec.until(ended(second.runId), 'the second run to end');
    expect(shape(all.slice(all.findIndex((e) => e.type === 'start' && e.runId === second.runId)))).toEqual([
      'start',
      'data-user-message',
      'step-start',
      'step-finish',
      'finish',
    ]);
    expect(textOf(all.filter((e) => e.runId === second.runId))).toBe('one two three four five six ');
  });

  it('a notice the workflow never decided stops the model call, then the step is retried', async () => {
    const t = h.thread();
    const rec = record(t);
    const arrived = scriptFor('summarize the report', { text: ['partial '], hang: true });
    const start = await tester().sendMessage('summarize the report', t);
    const req = await arrived;
    const [running] = await stepKeys(t);

    await h.bus.sendNotice({
      type: 'step-cancel',
      namespace: 'default',
      threadKey: threadKey(t.resourceId, t.threadId),
      stepKey: running,
    });
    expect(await within(req.ended, 'the request to end')).toBe('closed');

    // No cancellation was recorded: after the heartbeat timeout the attempt fails and Temporal runs the step again.
    const all = await rec.until(ended(start.runId), 'the run to end');
    expect(shape(all)).toEqual([
      'start',
      'data-user-message',
      'step-start',
      'run-retry',
      'step-start',
      'step-finish',
      'finish',
    ]);
    expect(textOf(all.slice(all.findIndex((e) => e.type === 'run-retry')))).toBe('Echo: summarize the report');
  });
});

describe('across processes, on the Redis bus', () => {
  let redis: RedisServer | undefined;
  let bus: RedisBus | undefined;
  let m: Harness | undefined;
  let workflows: ThreadlineWorker | undefined;
  let running: Promise<void> | undefined;
  let steps: WorkerProcess | undefined;

  beforeAll(async () => {
    redis = await startRedis();
    bus = new RedisBus(redis.url);
    m = await startHarness({ bus, noWorker: true });
    // This process runs the thread's workflow tasks, so its sink sends the notice; a worker process runs the steps.
    workflows = await createWorker({
      agents: [testAgent],
      bus,
      address: m.address,
      taskQueue: m.taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      shutdownGraceTimeMs: 1_000,
      worker: { activities: {} },
    });
    running = workflows.run();
    steps = await startWorkerProcess({ ...workerEnvFor(m, redis.url), THREADLINE_TEST_ACTIVITIES_ONLY: '1' });
    await warmUp(m);
  }, 120_000);
  afterAll(async () => {
    await steps?.kill('SIGKILL');
    await workflows?.shutdown();
    await running;
    await m?.close();
    await bus?.close();
    await redis?.stop();
  });

  it('an interrupt decided in one process closes the provider request of a step another process runs', () =>
    interruptA300msStep(m!));
});
