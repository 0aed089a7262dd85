/**
 * Chaos, for real: workers are child processes and die by SIGKILL (behaviour §5 run-retry, §7 ownership, §3 lanes).
 * Another worker process takes over the thread; subscribers read the Redis bus from this process.
 *
 * Temporal routes a thread's workflow tasks to the sticky queue of the worker that last ran it; after that worker
 * dies the task waits out `stickyQueueScheduleToStartTimeout` (10 s, the SDK's default) before any worker takes it
 * (unless the sticky queue has seen no poll for 10 s already), hence generous upper bounds on every wait.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisBus } from '../../bus/redis';
import type { ThreadEvent } from '../../protocol/events';
import type { StateSignalInput, ThreadInput, ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { collectUntil, startHarness, textByRun, userTurns, wakeEventTypes, type Harness } from '../support/harness';
import { startWorkerProcess, workerEnvFor } from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';

const WAIT_MS = 60_000;

let redis: RedisServer;
let bus: RedisBus;
let h: Harness;
beforeAll(async () => {
  redis = await startRedis();
  bus = new RedisBus(redis.url);
  h = await startHarness({
    bus,
    noWorker: true,
    // A dead worker's step is noticed after one heartbeat timeout and retried 200 ms later.
    threadConfig: { step: { heartbeatTimeoutMs: 2_000, initialRetryMs: 200 } },
  });
});
afterAll(async () => {
  await h?.close();
  await bus?.close();
  await redis?.stop();
});

/** Rejects after `ms` with `what` in the message. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms waiting for ${what}.`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function echoedIds(events: ThreadEvent[]): string[] {
  return events.filter((e) => e.type === 'data-user-message').map((e) => (e.payload as { id: string }).id);
}

/** What a browser watcher sends (issue 5): one lane, `browser`, whose cacheKey names the exact state. */
function browserState(tabs: number): StateSignalInput {
  return {
    id: 'browser',
    mode: 'snapshot',
    cacheKey: `browser:https://example.com:${tabs}-tabs`,
    contents: `Browser is open. Active tab URL: https://example.com. ${tabs} open tabs.`,
    value: { activeUrl: 'https://example.com', tabCount: tabs, open: true },
  };
}

const stateXml = (tabs: number) => `<state>${browserState(tabs).contents}</state>`;

/** The inputs of the thread's accepted updates, in history order (a refused update never reaches history). */
async function acceptedInputs(target: ThreadTarget): Promise<ThreadInput[]> {
  const history = await h.temporal.workflow.getHandle(threadKey(target.resourceId, target.threadId)).fetchHistory();
  return history.events!.flatMap((e) => {
    const payload = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
    return payload ? [defaultPayloadConverter.fromPayload<ThreadInput>(payload)] : [];
  });
}

describe('a worker process killed with SIGKILL', { timeout: 4 * WAIT_MS }, () => {
  it('in the middle of a streaming step: a new worker retries the step, the run completes, every input answered once', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const env = workerEnvFor(h, redis.url);
    const before = h.model.requests.length;
    const chunks = Array.from({ length: 30 }, (_, i) => `w${i} `);
    const longReply = chunks.join('');
    const secondReply = 'Answered the second message too.';
    // The first attempt streams half the reply and then stalls, so the kill lands mid-stream however slow the
    // machine. The retry's reply is held until the mid-run message is accepted, so that message joins this run
    // whatever the timing (its update waits out worker A's sticky queue).
    let releaseRetry!: () => void;
    const retryMayAnswer = new Promise<void>((resolve) => (releaseRetry = resolve));
    h.model.setResponder(async (req) => {
      if (userTurns(req.messages).at(-1) === 'second') return { text: secondReply };
      if (req.index === before) return { text: chunks.slice(0, 15), chunkDelayMs: 50, hang: true };
      await retryMayAnswer;
      return { text: chunks, chunkDelayMs: 50 };
    });
    const sub = agent.subscribeToThread(t);
    try {
      const a = await startWorkerProcess(env);
      let streaming!: () => void;
      const someDeltas = new Promise<void>((resolve) => (streaming = resolve));
      const collected = collectUntil(
        sub.stream,
        (e, all) => {
          if (all.filter((x) => x.type === 'text-delta').length >= 5) streaming();
          return e.type === 'finish';
        },
        2 * WAIT_MS,
      );
      collected.catch(() => undefined); // awaited below; keeps an early timeout from being an unhandled rejection

      const first = await agent.sendMessage('first', t);
      expect(first).toMatchObject({ accepted: true, action: 'wake' });
      const [killed] = (await h.model.waitForRequests(before + 1, WAIT_MS)).slice(before);
      await within(Promise.race([someDeltas, collected]), WAIT_MS, 'the first text deltas');

      const killedAt = Date.now();
      expect(await a.kill('SIGKILL')).toBeNull();
      // The kernel closed worker A's sockets: the model server saw the streaming request cut short.
      await within(killed.closed, WAIT_MS, 'the killed request to close');
      expect(killed.closedEarly).toBe(true);

      // The update needs a workflow task, and a workflow task needs a worker: start B, then send.
      await startWorkerProcess(env);
      const second = await agent.sendMessage('second', t);
      const acceptedAt = Date.now();
      expect(second).toMatchObject({ accepted: true, action: 'deliver', runId: first.runId });
      releaseRetry();

      const events = await collected;
      const types = events.map((e) => e.type);

      // One run, one finish, every event of it.
      expect(types.filter((x) => x === 'start')).toHaveLength(1);
      expect(types.filter((x) => x === 'finish')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'finish', runId: first.runId, payload: { reason: 'stop' } });
      expect(new Set(events.map((e) => e.runId))).toEqual(new Set([first.runId]));

      // run-retry announces the retried step before any of its output; the killed attempt's text was a prefix.
      const retryAt = types.indexOf('run-retry');
      expect(types.filter((x) => x === 'run-retry')).toHaveLength(1);
      const killedStep = events.find((e) => e.type === 'step-start')!.payload as { stepNumber: number };
      expect(events[retryAt].payload).toEqual({ stepNumber: killedStep.stepNumber, attempt: 2 });
      expect(types.slice(retryAt + 1, retryAt + 4)).toEqual(['step-start', 'text-start', 'text-delta']);
      const partial = textByRun(events.slice(0, retryAt)).get(first.runId!)!;
      expect(partial.length).toBeGreaterThan(0);
      expect(partial.length).toBeLessThan(longReply.length);
      expect(longReply.startsWith(partial)).toBe(true);

      // After run-retry the run's text is the whole scripted reply exactly once, then the answer to the second input.
      expect(textByRun(events).get(first.runId!)).toBe(longReply + secondReply);

      // Every input echoed exactly once, in order; the mid-run one at the step boundary after the retried step.
      expect(echoedIds(events)).toEqual([first.signalId, second.signalId]);
      const secondEcho = events.findIndex((e) => (e.payload as { id?: string })?.id === second.signalId);
      expect(secondEcho).toBeGreaterThan(types.indexOf('step-finish'));

      // The model: the killed request, its retry with the same prompt, then one step answering the second input.
      const requests = h.model.requests.slice(before);
      expect(requests.map((r) => userTurns(r.messages))).toEqual([['first'], ['first'], ['first', 'second']]);
      const last = requests.at(-1)!;
      expect(last.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
      expect(last.messages[2].content).toBe(longReply);

      const retried = requests[1];
      const firstResumedDelta = events.slice(retryAt).find((e) => e.type === 'text-delta')!;
      console.log(
        `[worker-kill] kill → retried model request ${retried.receivedAt - killedAt} ms; ` +
          `kill → run-retry published ${events[retryAt].at - killedAt} ms; ` +
          `kill → mid-run message accepted ${acceptedAt - killedAt} ms; ` +
          `release → first resumed token ${firstResumedDelta.at - acceptedAt} ms`,
      );
    } finally {
      releaseRetry();
      h.model.setResponder(undefined);
      sub.unsubscribe();
    }
  });

  it('with state lanes accepted: the lane tracking survives (the same state is still skipped, the version unchanged) and the model still sees the state', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const env = workerEnvFor(h, redis.url);
    const persistIdle = { ifIdle: { behavior: 'persist' as const } };
    const question = 'How many tabs are open?';
    const before = h.model.requests.length;
    // The first attempt of the first step streams a little and stalls, so the kill lands mid-run; its retry is held
    // until the lanes were checked on the new worker.
    let releaseRetry!: () => void;
    const retryMayAnswer = new Promise<void>((resolve) => (releaseRetry = resolve));
    h.model.setResponder(async (req) => {
      const last = userTurns(req.messages).at(-1);
      if (last === question && req.index === before) return { text: ['Let ', 'me ', 'look. '], hang: true };
      if (last === question) {
        await retryMayAnswer;
        return { text: 'Three tabs are open.' };
      }
      if (last === stateXml(4)) return { text: 'Now there are four.' };
      return { text: 'Still four tabs.' };
    });
    const sub = agent.subscribeToThread(t);
    try {
      const a = await startWorkerProcess(env);
      const s1 = await agent.sendStateSignal(browserState(3), { ...t, ...persistIdle });
      expect(s1).toMatchObject({ accepted: true, action: 'persist', version: 1 });

      let streaming!: () => void;
      const someDeltas = new Promise<void>((resolve) => (streaming = resolve));
      const collected = collectUntil(
        sub.stream,
        (e, all) => {
          if (all.filter((x) => x.type === 'text-delta').length >= 2) streaming();
          return e.type === 'finish';
        },
        2 * WAIT_MS,
      );
      collected.catch(() => undefined); // awaited below; keeps an early timeout from being an unhandled rejection

      const first = await agent.sendMessage(question, t);
      expect(first).toMatchObject({ accepted: true, action: 'wake' });
      const [killed] = (await h.model.waitForRequests(before + 1, WAIT_MS)).slice(before);
      await within(Promise.race([someDeltas, collected]), WAIT_MS, 'the first text deltas');

      // Mid-run, the browser changes: the new state joins the run; sending it again is skipped.
      const s2 = await agent.sendStateSignal(browserState(4), { ...t, ...persistIdle });
      expect(s2).toMatchObject({ accepted: true, action: 'deliver', runId: first.runId, version: 2 });
      const repeated = await agent.sendStateSignal(browserState(4), { ...t, ...persistIdle });
      expect(repeated).toMatchObject({ accepted: true, action: 'skipped', reason: 'unchanged', version: 2 });

      expect(await a.kill('SIGKILL')).toBeNull();
      await within(killed.closed, WAIT_MS, 'the killed request to close');
      await startWorkerProcess(env);

      // The new worker rebuilt the lane: the same state is still a duplicate, at the same version.
      const afterKill = await agent.sendStateSignal(browserState(4), { ...t, ...persistIdle });
      expect(afterKill).toMatchObject({ accepted: true, action: 'skipped', reason: 'unchanged', version: 2 });
      expect((await h.client.getThread(t))!.lanes).toMatchObject([
        {
          id: 'browser',
          currentCacheKey: browserState(4).cacheKey,
          currentMode: 'snapshot',
          version: 2,
          lastSignalId: s2.signalId,
          lastSnapshotSignalId: s2.signalId,
          value: browserState(4).value,
        },
      ]);
      releaseRetry();

      // One run: the retried step, then a step for the state that arrived mid-run.
      const events = await collected;
      expect(events.filter((e) => e.type === 'run-retry')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'finish')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'finish', runId: first.runId, payload: { reason: 'stop' } });
      // Only accepted states were announced; the skipped ones left no trace on the stream.
      expect(events.filter((e) => e.type === 'state-updated').map((e) => e.payload)).toEqual([
        expect.objectContaining({ version: 1, currentCacheKey: browserState(3).cacheKey, action: 'persist' }),
        expect.objectContaining({ version: 2, currentCacheKey: browserState(4).cacheKey, action: 'deliver' }),
      ]);

      // The next turn, served by the new worker, still carries both states.
      const next = await agent.sendMessage('Still there?', t);
      expect(next).toMatchObject({ accepted: true, action: 'wake' });
      await collectUntil(sub.stream, (e) => e.type === 'finish', WAIT_MS);

      // The model: the killed request and its retry (same prompt), the mid-run state as its own turn, and the next
      // turn with every state in place.
      const requests = h.model.requests.slice(before);
      expect(requests.map((r) => userTurns(r.messages))).toEqual([
        [stateXml(3), question],
        [stateXml(3), question],
        [stateXml(3), question, stateXml(4)],
        [stateXml(3), question, stateXml(4), 'Still there?'],
      ]);

      // History holds the two accepted states and none of the skipped ones: the validator refused those.
      const inputs = await acceptedInputs(t);
      expect(inputs.filter((i) => i.type === 'state').map((i) => i.id)).toEqual([s1.signalId, s2.signalId]);
      const ids = new Set(inputs.map((i) => i.id));
      expect([repeated.signalId, afterKill.signalId].filter((id) => ids.has(id))).toEqual([]);
    } finally {
      releaseRetry();
      h.model.setResponder(undefined);
      sub.unsubscribe();
    }
  });

  it('while the thread is idle: the next message is answered normally by a new worker', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const env = workerEnvFor(h, redis.url);
    const before = h.model.requests.length;
    const a = await startWorkerProcess(env);

    const sub = agent.subscribeToThread(t);
    try {
      const first = await agent.sendMessage('hello', t);
      expect(first.action).toBe('wake');
      const firstRun = await collectUntil(sub.stream, (e) => e.type === 'finish', WAIT_MS);
      // Queries wait for an in-flight workflow task: once this answers, the idle thread's history is settled.
      expect(await h.client.getThread(t)).toMatchObject({ status: 'idle', runsCompleted: 1 });

      expect(await a.kill('SIGKILL')).toBeNull();
      await startWorkerProcess(env);

      const next = await agent.sendMessage('again', t);
      expect(next).toMatchObject({ accepted: true, action: 'wake' });
      expect(next.runId).not.toBe(first.runId);
      const secondRun = await collectUntil(sub.stream, (e) => e.type === 'finish', WAIT_MS);

      expect(secondRun.map((e) => e.type)).toEqual(wakeEventTypes(2));
      expect(new Set(secondRun.map((e) => e.runId))).toEqual(new Set([next.runId]));
      expect(textByRun(secondRun).get(next.runId!)).toBe('Echo: again');
      expect(echoedIds([...firstRun, ...secondRun])).toEqual([first.signalId, next.signalId]);

      const requests = h.model.requests.slice(before);
      expect(requests.map((r) => userTurns(r.messages))).toEqual([['hello'], ['hello', 'again']]);
      expect(requests.every((r) => !r.closedEarly)).toBe(true);
      expect(await h.client.getThread(t)).toMatchObject({ status: 'idle', runsCompleted: 2, messageCount: 4 });
    } finally {
      sub.unsubscribe();
    }
  });
});
