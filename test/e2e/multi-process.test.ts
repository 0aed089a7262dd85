/**
 * Many machines, for real (issue 4, behaviour §2.4, §5 and §7): two worker processes and two gateway processes on one dev
 * server and one Redis, all on loopback, driven over HTTP and SSE like a browser would. Workers and gateways die by
 * SIGKILL. Tools run in the worker processes; they record each call in a file the test reads (test-agents.ts).
 *
 * Every test starts its own cluster (fresh task queue, model server, processes) and kills it when it ends. Waits have
 * generous upper bounds: a killed worker's step is retried only after its heartbeat timeout, and the thread's next
 * workflow task may first wait out the dead worker's sticky queue (10 s, worker/index.ts); the machine may be busy.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { RedisBus } from '../../bus/redis';
import type { ThreadEvent } from '../../protocol/events';
import type { InputResult, ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import type { ThreadConfigInput } from '../../protocol/thread-config';
import type { ThreadView } from '../../protocol/views';
import { collectUntil, startHarness, textByRun, userTurns, type Harness } from '../support/harness';
import { echoResponder } from '../support/model-server';
import {
  gatewayEnvFor,
  startGatewayProcess,
  startWorkerProcess,
  workerEnvFor,
  type GatewayProcess,
  type WorkerProcess,
  type WorkerProcessEnv,
} from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';
import { openSse, sseEvents, type SseStream } from '../support/sse';
import { readToolLog, type ToolLogEntry } from '../support/test-agents';

const WAIT_MS = 60_000;

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

interface Cluster {
  /** Temporal client, model server and a client on the Redis bus, in this process. */
  h: Harness;
  /** The worker processes started so far, in order (killed ones included). */
  workers: WorkerProcess[];
  gatewayA: GatewayProcess;
  gatewayB: GatewayProcess;
  /** Starts one more worker process like the first two. */
  startWorker(): Promise<WorkerProcess>;
  /** Every tool call the worker processes ran, in the order they ran. */
  toolCalls(): Promise<ToolLogEntry[]>;
}

/**
 * Two worker processes and two gateway processes sharing this test's task queue and the Redis bus. Threads the
 * gateways create get `threadConfig`; `agents` are the test agent ids every process serves (default `tester`).
 */
async function startCluster(options: { threadConfig?: ThreadConfigInput; agents?: string[] } = {}): Promise<Cluster> {
  const bus = new RedisBus(redis.url);
  const h = await startHarness({ bus, noWorker: true, threadConfig: options.threadConfig });
  const logDir = await mkdtemp(join(tmpdir(), 'threadline-tool-log-'));
  onTestFinished(async () => {
    await h.close();
    await bus.close();
    await rm(logDir, { recursive: true, force: true });
  });
  const toolLog = join(logDir, 'tool-calls.jsonl');
  const agents = options.agents ? { THREADLINE_TEST_AGENTS: options.agents.join(',') } : {};
  const workerEnv: WorkerProcessEnv = { ...workerEnvFor(h, redis.url), ...agents, THREADLINE_TEST_TOOL_LOG: toolLog };
  const gatewayEnv = { ...gatewayEnvFor(h, redis.url, options.threadConfig), ...agents };
  // allSettled: every process that did start is registered for killing before a failure to start is reported.
  const started = await Promise.allSettled([
    startWorkerProcess(workerEnv),
    startWorkerProcess(workerEnv),
    startGatewayProcess(gatewayEnv),
    startGatewayProcess(gatewayEnv),
  ]);
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  const [w1, w2, a, b] = started.map((s) => (s as PromiseFulfilledResult<WorkerProcess | GatewayProcess>).value);
  const workers = [w1, w2];
  return {
    h,
    workers,
    gatewayA: a as GatewayProcess,
    gatewayB: b as GatewayProcess,
    async startWorker() {
      const worker = await startWorkerProcess(workerEnv);
      workers.push(worker);
      return worker;
    },
    toolCalls: () => readToolLog(toolLog),
  };
}

/** `POST <gateway>/api/agents/<agentId>/<route>` with a JSON body, as a browser would. */
async function post<T>(
  gateway: GatewayProcess,
  agentId: string,
  route: string,
  body: unknown,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${gateway.url}/api/agents/${agentId}/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** `POST <gateway>/api/agents/<agentId>/send-message`. */
function sendMessage(
  gateway: GatewayProcess,
  message: string,
  t: ThreadTarget,
  agentId = 'tester',
): Promise<{ status: number; body: InputResult }> {
  return post<InputResult>(gateway, agentId, 'send-message', { message, ...t });
}

/** The browser's SSE route for a thread (EventSource-style, resumable with `Last-Event-ID`). */
function eventsUrl(gateway: GatewayProcess, t: ThreadTarget): string {
  return `${gateway.url}/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}/events`;
}

async function getThread(gateway: GatewayProcess, t: ThreadTarget): Promise<ThreadView> {
  const response = await fetch(
    `${gateway.url}/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`,
  );
  expect(response.status).toBe(200);
  return (await response.json()) as ThreadView;
}

const eventsOf = (sse: SseStream): ThreadEvent[] => sseEvents(sse.messages);
// SSE events are the bus's events plus the fields Mastra's chunks carry (gateway/wire-event.ts, additive only):
// compare them with `toMatchObject`, which checks every bus field and the array lengths and allows the extra fields.
const count = (events: ThreadEvent[], type: ThreadEvent['type']) => events.filter((e) => e.type === type).length;

/** The thread's whole stream as the bus retains it, from its first event to the first `finish`. */
async function wholeStream(h: Harness, t: ThreadTarget): Promise<ThreadEvent[]> {
  const sub = h.client.subscribeToThread(t, { lastEventId: '0-0' });
  try {
    return await collectUntil(sub.stream, (e) => e.type === 'finish', WAIT_MS);
  } finally {
    sub.unsubscribe();
  }
}

/** Redis stream ids (`<ms>-<seq>`) in order: true when `a` comes strictly before `b`. */
function isBefore(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am < bm || (am === bm && as < bs);
}

/**
 * The worker process running the thread's step right now. Temporal records, per pending activity, the identity of
 * the worker that started it, and a worker's default identity is `<pid>@<host>`.
 */
async function workerRunningStep(c: Cluster, t: ThreadTarget): Promise<WorkerProcess> {
  const description = await c.h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId)).describe();
  const pending = description.raw.pendingActivities ?? [];
  const step = pending.find((a) => a.activityType?.name === 'runStep');
  const pid = Number(step?.lastWorkerIdentity?.split('@')[0]);
  const worker = c.workers.find((w) => w.pid === pid);
  if (!worker) {
    throw new Error(
      `No worker process of this test runs the step. Pending activities: ${JSON.stringify(pending)}; ` +
        `worker pids: ${c.workers.map((w) => w.pid).join(', ')}.`,
    );
  }
  return worker;
}

/** Rejects after `ms` with `what` in the message. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms waiting for ${what}.`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe('two gateways and two workers on one Redis', { timeout: 5 * WAIT_MS }, () => {
  it("kill the step's worker and the subscriber's gateway mid-run: the subscriber resumes on the other gateway and sees the answer exactly once", async () => {
    // A dead worker's step is noticed after one heartbeat timeout and retried 200 ms later.
    const c = await startCluster({ threadConfig: { step: { heartbeatTimeoutMs: 3_000, initialRetryMs: 200 } } });
    const t = c.h.thread();
    const answer = Array.from({ length: 40 }, (_, i) => `token${i} `);
    // The first attempt streams a quarter of the answer and then stalls, so the worker dies mid-stream however slow
    // the machine. The retry is held until the subscriber has moved to gateway A, so gateway B dies mid-run too.
    let releaseRetry!: () => void;
    const retryMayAnswer = new Promise<void>((resolve) => (releaseRetry = resolve));
    onTestFinished(() => releaseRetry());
    c.h.model.setResponder(async (req) => {
      if (req.index === 0) return { text: answer.slice(0, 10), chunkDelayMs: 20, hang: true };
      await retryMayAnswer;
      return { text: answer, chunkDelayMs: 20 };
    });

    // Subscribe through gateway B, send through gateway A.
    const viaB = await openSse(eventsUrl(c.gatewayB, t));
    onTestFinished(() => viaB.close());
    const sent = await sendMessage(c.gatewayA, 'Tell me a long story.', t);
    expect(sent).toMatchObject({ status: 200, body: { accepted: true, action: 'wake' } });
    const runId = sent.body.runId!;
    await viaB.waitFor(() => count(eventsOf(viaB), 'text-delta') >= 5, WAIT_MS, 'the first text deltas on gateway B');

    // SIGKILL the worker running the step: the kernel cuts its model request.
    const [killedRequest] = await c.h.model.waitForRequests(1, WAIT_MS);
    const stepWorker = await workerRunningStep(c, t);
    expect(await stepWorker.kill('SIGKILL')).toBeNull();
    await within(killedRequest.closed, WAIT_MS, "the killed worker's model request to close");

    // The other worker retries the step; its run-retry reaches the subscriber, still on gateway B.
    await viaB.waitFor(() => count(eventsOf(viaB), 'run-retry') === 1, WAIT_MS, 'run-retry on gateway B');

    // SIGKILL gateway B: the subscriber's connection breaks before the run finished...
    expect(await c.gatewayB.kill('SIGKILL')).toBeNull();
    await viaB.waitFor(() => viaB.ended, WAIT_MS, 'the connection to gateway B to break');
    const beforeKill = eventsOf(viaB);
    expect(count(beforeKill, 'finish')).toBe(0);
    // ...and it reconnects to gateway A with the last id it saw, as EventSource does.
    const lastSeenId = viaB.messages.at(-1)!.id!;
    const viaA = await openSse(eventsUrl(c.gatewayA, t), { headers: { 'Last-Event-ID': lastSeenId } });
    onTestFinished(() => viaA.close());
    releaseRetry();
    const afterReconnect = await viaA.untilEvent((e) => e.type === 'finish', 2 * WAIT_MS);

    // Across the reconnect: ids strictly increase (no duplicate), and nothing is missing — the subscriber saw
    // exactly the thread's stream as the bus has it, from its first event to the run's finish.
    const seen = [...beforeKill, ...afterReconnect];
    const notIncreasing = seen.filter((e, i) => i > 0 && !isBefore(seen[i - 1].id, e.id)).map((e) => e.id);
    expect(notIncreasing).toEqual([]);
    expect(seen).toMatchObject(await wholeStream(c.h, t));

    // One run, one retry of its step, one finish.
    const types = seen.map((e) => e.type);
    expect(count(seen, 'start')).toBe(1);
    expect(count(seen, 'run-retry')).toBe(1);
    expect(seen[types.indexOf('run-retry')].payload).toMatchObject({ attempt: 2 });
    expect(seen.at(-1)).toMatchObject({ type: 'finish', runId, payload: { reason: 'stop' } });
    expect(new Set(seen.map((e) => e.runId).filter(Boolean))).toEqual(new Set([runId]));

    // The killed attempt's partial output came through gateway B; run-retry says to drop it. With that applied, the
    // run's text is the scripted answer exactly once, and all of the retried answer came through gateway A.
    const full = answer.join('');
    const partial = textByRun(seen.slice(0, types.indexOf('run-retry'))).get(runId)!;
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(full.length);
    expect(full.startsWith(partial)).toBe(true);
    expect(textByRun(seen).get(runId)).toBe(full);
    expect(
      afterReconnect.filter((e) => e.type === 'text-delta').map((e) => (e.payload as { text: string }).text),
    ).toEqual(answer);

    // The model: the killed request and its retry, with the same prompt.
    const requests = c.h.model.requests;
    expect(requests.map((r) => userTurns(r.messages))).toEqual([['Tell me a long story.'], ['Tell me a long story.']]);
    expect(requests.map((r) => r.closedEarly)).toEqual([true, false]);
  });

  it('20 clients race first messages to one new thread through both gateways: one execution, one run, every input answered once', async () => {
    const c = await startCluster();
    const t = c.h.thread();
    const inputs = Array.from({ length: 20 }, (_, i) => `racer ${i}`);
    // The first step is held until every client has its response, so all inputs meet the one active run.
    let allResponded!: () => void;
    const responded = new Promise<void>((resolve) => (allResponded = resolve));
    onTestFinished(() => allResponded());
    c.h.model.setResponder(async (req) => {
      if (req.index === 0) await responded;
      return echoResponder(req);
    });

    const watcher = await openSse(eventsUrl(c.gatewayB, t));
    onTestFinished(() => watcher.close());
    const responses = await Promise.all(
      inputs.map((message, i) => sendMessage(i % 2 === 0 ? c.gatewayA : c.gatewayB, message, t)),
    );
    allResponded();

    // Every response is a 200; exactly one client woke the thread, the others joined that same run.
    expect(responses.map((r) => r.status)).toEqual(inputs.map(() => 200));
    const results = responses.map((r) => r.body);
    expect(results.filter((r) => r.action === 'wake')).toHaveLength(1);
    expect(results.filter((r) => r.action === 'deliver')).toHaveLength(inputs.length - 1);
    const runId = results.find((r) => r.action === 'wake')!.runId!;
    expect(new Set(results.map((r) => r.runId))).toEqual(new Set([runId]));
    const signalIds = results.map((r) => r.signalId);
    expect(new Set(signalIds).size).toBe(inputs.length);

    // One run: every input echoed exactly once on the stream, then one finish.
    const events = await watcher.untilEvent((e) => e.type === 'finish', 2 * WAIT_MS);
    const echoed = events.filter((e) => e.type === 'data-user-message').map((e) => (e.payload as { id: string }).id);
    expect([...echoed].sort()).toEqual([...signalIds].sort());
    expect(count(events, 'start')).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'finish', runId });
    expect(await getThread(c.gatewayA, t)).toMatchObject({ status: 'idle', runsCompleted: 1 });

    // The model saw each input exactly once as a new turn: every request extends the previous one's conversation.
    let previous: string[] = [];
    const newTurns: string[] = [];
    for (const request of c.h.model.requests) {
      const turns = userTurns(request.messages);
      expect(turns.slice(0, previous.length)).toEqual(previous);
      newTurns.push(...turns.slice(previous.length));
      previous = turns;
    }
    expect([...newTurns].sort()).toEqual([...inputs].sort());
    expect(c.h.model.requests.every((r) => !r.closedEarly)).toBe(true);

    // One workflow execution for the thread, ever: Temporal's visibility lists exactly one, and it is the running one.
    const handle = c.h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    const executions = await listedExecutions(c.h, handle.workflowId);
    expect(executions).toEqual([(await handle.describe()).runId]);
    const history = await handle.fetchHistory();
    expect(history.events!.filter((e) => e.workflowExecutionStartedEventAttributes)).toHaveLength(1);
  });

  it('100 subscribers spread over both gateways receive identical event sequences', async () => {
    const c = await startCluster();
    const t = c.h.thread();
    const answer = Array.from({ length: 50 }, (_, i) => `part${i} `);
    c.h.model.enqueue({ text: answer, chunkDelayMs: 10 });

    const subscribers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => openSse(eventsUrl(i % 2 === 0 ? c.gatewayA : c.gatewayB, t))),
    );
    onTestFinished(() => subscribers.forEach((s) => s.close()));
    const sent = await sendMessage(c.gatewayA, 'Stream this to everyone.', t);
    expect(sent).toMatchObject({ status: 200, body: { action: 'wake' } });

    const received = await Promise.all(subscribers.map((s) => s.untilEvent((e) => e.type === 'finish', 2 * WAIT_MS)));
    const whole = await wholeStream(c.h, t);
    expect(textByRun(whole).get(sent.body.runId!)).toBe(answer.join(''));
    expect(count(whole, 'text-delta')).toBe(answer.length);
    for (const [i, events] of received.entries()) {
      expect(events, `subscriber ${i} (gateway ${i % 2 === 0 ? 'A' : 'B'})`).toMatchObject(whole);
    }
  });

  it('an agent that wants to delete a repository parks on an approval; every worker dies while it waits; a human approves from another device; the answer continues on the same subscription', async () => {
    const c = await startCluster({ agents: ['tester', 'admin'] });
    const t = c.h.thread();
    const toolCallId = 'call-delete-repo';
    const answer = ['Deleted ', 'acme/app ', 'as ', 'you ', 'approved.'];
    // The model asks for the tool first; once it has the tool's result, it answers.
    c.h.model.setResponder((req) =>
      req.messages.some((m: { role: string }) => m.role === 'tool')
        ? { text: answer, chunkDelayMs: 10 }
        : { toolCalls: [{ id: toolCallId, name: 'deleteRepo', args: { repo: 'acme/app' } }] },
    );

    // The browser subscribes through gateway B; the message goes through gateway A.
    const viaB = await openSse(eventsUrl(c.gatewayB, t));
    onTestFinished(() => viaB.close());
    const sent = await sendMessage(c.gatewayA, 'Please delete acme/app.', t, 'admin');
    expect(sent).toMatchObject({ status: 200, body: { accepted: true, action: 'wake' } });
    const runId = sent.body.runId!;

    // The run parks: the approval request reaches the subscriber, the tool has not run, the thread stays active.
    const parked = await viaB.untilEvent((e) => e.type === 'tool-call-approval', WAIT_MS);
    expect(parked.at(-1)).toMatchObject({
      runId,
      payload: { toolCallId, toolName: 'deleteRepo', args: { repo: 'acme/app' }, status: 'waiting' },
    });
    expect(await getThread(c.gatewayA, t)).toMatchObject({
      status: 'active',
      activeRun: {
        runId,
        status: 'awaiting-approval',
        approvals: [{ toolCallId, toolName: 'deleteRepo', status: 'waiting' }],
      },
    });
    await untilSettled(c, t);
    expect(await c.toolCalls()).toEqual([]);

    // Every worker process dies while the run waits; a fresh one replaces them.
    for (const worker of c.workers) expect(await worker.kill('SIGKILL')).toBeNull();
    const fresh = await c.startWorker();

    // A human approves from another device, through gateway A.
    const approved = await post<unknown>(c.gatewayA, 'admin', 'send-tool-approval', {
      ...t,
      toolCallId,
      approved: true,
    });
    expect(approved).toEqual({ status: 200, body: { accepted: true, toolCallId, runId, status: 'approved' } });

    // The rest of the run arrives on the subscription that was open all along.
    const resumed = await viaB.untilEvent((e) => e.type === 'finish', 2 * WAIT_MS);
    expect(viaB.ended).toBe(false);
    // Nothing lost or repeated: the subscriber saw exactly the thread's stream as the bus has it.
    const seen = [...parked, ...resumed];
    expect(seen).toMatchObject(await wholeStream(c.h, t));
    const types = seen.map((e) => e.type);
    const approvals = seen.filter((e) => e.type === 'tool-call-approval').map((e) => e.payload);
    expect(approvals).toEqual([
      expect.objectContaining({ toolCallId, status: 'waiting' }),
      expect.objectContaining({ toolCallId, status: 'approved' }),
    ]);
    const results = seen.filter((e) => e.type === 'tool-result');
    expect(results.map((e) => e.payload)).toEqual([
      expect.objectContaining({ toolCallId, toolName: 'deleteRepo', output: 'deleted acme/app' }),
    ]);
    // behaviour §5: events come in the order the thread decided them — the approval, then the tool's result.
    expect(types.indexOf('tool-result')).toBeGreaterThan(types.lastIndexOf('tool-call-approval'));
    expect(types.lastIndexOf('step-start')).toBeGreaterThan(types.indexOf('tool-result'));
    expect(count(seen, 'start')).toBe(1);
    expect(count(seen, 'run-retry')).toBe(0);
    expect(seen.at(-1)).toMatchObject({ type: 'finish', runId, payload: { reason: 'stop' } });
    expect(new Set(seen.map((e) => e.runId).filter(Boolean))).toEqual(new Set([runId]));
    expect(textByRun(seen).get(runId)).toBe(answer.join(''));

    // The tool ran exactly once, after the approval, in the fresh worker.
    expect(await c.toolCalls()).toEqual([
      expect.objectContaining({ toolName: 'deleteRepo', input: { repo: 'acme/app' }, toolCallId, pid: fresh.pid }),
    ]);
    // The model: asked once for the tool, once more with its result.
    const requests = c.h.model.requests;
    expect(requests).toHaveLength(2);
    expect(userTurns(requests[1].messages)).toEqual(['Please delete acme/app.']);
    const toolMessages = requests[1].messages.filter((m: { role: string }) => m.role === 'tool');
    expect(JSON.stringify(toolMessages)).toContain('deleted acme/app');

    // Deciding the same call again is a conflict, through either gateway; the thread is idle with one run done.
    const again = await post<{ error: { message: string } }>(c.gatewayB, 'admin', 'send-tool-approval', {
      ...t,
      toolCallId,
      approved: false,
    });
    expect(again.status).toBe(409);
    expect(await getThread(c.gatewayB, t)).toMatchObject({ status: 'idle', activeRun: null, runsCompleted: 1 });
    expect(await c.toolCalls()).toHaveLength(1);
  });
});

/**
 * Resolves once the thread has no workflow task and no activity in flight: what it decided is in its history, so a
 * worker killed now interrupts nothing but the wait itself.
 */
async function untilSettled(c: Cluster, t: ThreadTarget): Promise<void> {
  const handle = c.h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const { raw } = await handle.describe();
    if (!raw.pendingWorkflowTask && (raw.pendingActivities?.length ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`Thread ${handle.workflowId} did not settle within ${WAIT_MS} ms.`);
    await sleep(50);
  }
}

/** Run ids of the executions Temporal's visibility lists for `workflowId`, once it lists any (it lags a little). */
async function listedExecutions(h: Harness, workflowId: string): Promise<string[]> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const runIds: string[] = [];
    for await (const execution of h.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      runIds.push(execution.runId);
    }
    if (runIds.length > 0 || Date.now() > deadline) return runIds;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
