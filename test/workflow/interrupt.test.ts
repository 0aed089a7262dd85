/**
 * Interrupt and abort reach the provider request at once, on a real dev server (behaviour §2.5): the workflow cancels
 * the step's activity as it always did, and a cancel notice over the bus lets the step's worker stop the model call
 * before Temporal's cancellation arrives in a heartbeat response (activities/cancel-notices.ts).
 *
 * The steps here stream for 300 ms from the moment the test interrupts them, well inside the heartbeat throttle (1 s):
 * without the notice the model would finish its reply before the step heard of the cancellation. The tests assert what
 * the model server saw (the request closed before the reply finished) and the events subscribers got, never a time.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ThreadEvent } from '../../protocol/events';
import type { StepInput } from '../../protocol/step';
import type { ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { RedisBus } from '../../bus/redis';
import { createWorker, type ThreadlineWorker } from '../../worker/index';
import { collectUntil, startHarness, testAgent, within, type Harness } from '../support/harness';
import { echoResponder, type ReceivedRequest, type ScriptedReply } from '../support/model-server';
import { startWorkerProcess, workerEnvFor, type WorkerProcess } from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';

/** Six chunks 50 ms apart: a 300 ms reply. */
const reply300ms: ScriptedReply = { text: ['one ', 'two ', 'three ', 'four ', 'five ', 'six '], chunkDelayMs: 50 };

let h: Harness;

beforeAll(async () => {
  // A short heartbeat timeout bounds how long a step stopped by a notice waits for a cancellation that never comes.
  h = await startHarness({ threadConfig: { step: { heartbeatTimeoutMs: 3_000, initialRetryMs: 100 } } });
});
afterAll(async () => {
  await h?.close();
});

const tester = () => h.client.agent(testAgent.id);

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
  return first;
}

/** The thread's events from now until `done` holds. */
function collect(t: ThreadTarget, done: (all: ThreadEvent[]) => boolean, on: Harness = h): Promise<ThreadEvent[]> {
  const sub = on.client.subscribeToThread(t);
  return collectUntil(sub.stream, (_e, all) => done(all), 60_000).finally(() => sub.unsubscribe());
}

const ended = (runId: string | undefined) => (all: ThreadEvent[]) =>
  all.some((e) => (e.type === 'finish' || e.type === 'abort') && e.runId === runId);

/** Event types without the token stream. */
const shape = (events: ThreadEvent[]) =>
  events.map((e) => e.type).filter((type) => !['text-start', 'text-delta', 'text-end'].includes(type));

/** The keys of the thread's steps so far, in order (from the step activities' inputs in its history). */
async function stepKeys(t: ThreadTarget): Promise<string[]> {
  const history = await h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId)).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a) => a?.activityType?.name === 'runStep')
    .map((a) => defaultPayloadConverter.fromPayload<StepInput>(a!.input!.payloads![0]).stepKey);
}

/**
 * Interrupts a 300 ms step with a new message as soon as the step called the model: the request closes before the
 * reply ended, the interrupted step's chunks precede `step-interrupted`, and the next step answers the new message.
 */
async function interruptA300msStep(on: Harness): Promise<void> {
  const t = on.thread();
  const arrived = scriptFor('write an essay', reply300ms, on);
  const agent = on.client.agent(testAgent.id);
  const start = await agent.sendMessage('write an essay', t);
  const events = collect(t, ended(start.runId), on);
  const req = await within(arrived, 'the step to call the model');

  const sent = await agent.sendMessage('a new question', { ...t, ifActive: { behavior: 'interrupt' } });
  expect(sent).toMatchObject({ action: 'interrupt', runId: start.runId });
  expect(await within(req.ended, 'the interrupted request to end')).toBe('closed');

  const all = await events;
  expect(shape(all).slice(shape(all).indexOf('step-interrupted'))).toEqual([
    'step-interrupted',
    'data-user-message',
    'step-start',
    'step-finish',
    'finish',
  ]);
  const interruptedAt = all.findIndex((e) => e.type === 'step-interrupted');
  const nextStart = all.findIndex((e, i) => i > interruptedAt && e.type === 'step-start');
  expect(all.slice(interruptedAt, nextStart).filter((e) => e.type.startsWith('text-'))).toEqual([]);
  expect(textOf(all.slice(nextStart))).toBe('Echo: a new question');
}

const textOf = (events: ThreadEvent[]) =>
  events
    .filter((e) => e.type === 'text-delta')
    .map((e) => (e.payload as { text: string }).text)
    .join('');

describe('interrupt', () => {
  it('closes the provider request of a 300 ms step before its reply ends; the run answers the new message', () =>
    interruptA300msStep(h));
});

describe('abortThread', () => {
  it('closes the provider request of a 300 ms step before its reply ends; the run ends with abort', async () => {
    const t = h.thread();
    const arrived = scriptFor('count slowly', reply300ms);
    const start = await tester().sendMessage('count slowly', t);
    const events = collect(t, ended(start.runId));
    const req = await within(arrived, 'the step to call the model');

    expect(await tester().abortThread(t)).toMatchObject({ aborted: true, runId: start.runId });
    expect(await within(req.ended, 'the aborted request to end')).toBe('closed');

    const all = await events;
    expect(shape(all)).toEqual(['start', 'data-user-message', 'step-start', 'step-interrupted', 'abort']);
  });
});

describe('cancel notices', () => {
  it('a notice for a step that already ended, or for another namespace, stops nothing', async () => {
    const t = h.thread();
    const first = await tester().sendMessage('hello', t);
    await collect(t, ended(first.runId));
    const [finished] = await stepKeys(t);

    const arrived = scriptFor('tell a story', reply300ms);
    const second = await tester().sendMessage('tell a story', t);
    const events = collect(t, ended(second.runId));
    const req = await within(arrived, 'the second step to call the model');
    const [, running] = await stepKeys(t);
    const key = threadKey(t.resourceId, t.threadId);
    await h.bus.sendNotice({ type: 'step-cancel', namespace: 'default', threadKey: key, stepKey: finished });
    await h.bus.sendNotice({ type: 'step-cancel', namespace: 'elsewhere', threadKey: key, stepKey: running });

    expect(await within(req.ended, 'the second request to end')).toBe('finished');
    const all = await events;
    expect(shape(all)).toEqual(['start', 'data-user-message', 'step-start', 'step-finish', 'finish']);
    expect(textOf(all)).toBe('one two three four five six ');
  });

  it('a notice the workflow never decided stops the model call, then the step is retried', async () => {
    const t = h.thread();
    const arrived = scriptFor('summarize the report', { text: ['partial '], hang: true });
    const start = await tester().sendMessage('summarize the report', t);
    const events = collect(t, ended(start.runId));
    const req = await within(arrived, 'the step to call the model');
    const [running] = await stepKeys(t);

    await h.bus.sendNotice({
      type: 'step-cancel',
      namespace: 'default',
      threadKey: threadKey(t.resourceId, t.threadId),
      stepKey: running,
    });
    expect(await within(req.ended, 'the request to end')).toBe('closed');

    // No cancellation was recorded: after the heartbeat timeout the attempt fails and Temporal runs the step again.
    const all = await events;
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
    // A fresh process spends its first step loading the model code: warm it up, as a running worker is.
    const t = m.thread();
    const warmUp = await m.client.agent(testAgent.id).sendMessage('warm up', t);
    await collect(t, ended(warmUp.runId), m);
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
