/**
 * Delivery while a thread's workflow task is on a retry attempt (issue #14): Temporal refuses updates from the task's
 * third attempt ("Workflow Task in failed state", FAILED_PRECONDITION) until a worker completes it. Reproduced on the
 * real dev server with a worker whose every workflow task fails: the client resends until the task recovers and then
 * answers, and at its delivery deadline answers UnavailableError (503, Retry-After) with nothing delivered. Reads
 * (queries), refused by Temporal meanwhile, are the same 503.
 */
import { fileURLToPath } from 'node:url';
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../client/connect';
import { UnavailableError } from '../../protocol/errors';
import { threadKey } from '../../protocol/ids';
import type { SendTarget } from '../../protocol/api';
import type { ThreadTarget } from '../../protocol/schemas';
import { summarizeAgents } from '../../agents/summary';
import { serveGateway } from '../../gateway/serve';
import { startHarness, testAgent, within, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ noWorker: true });
}, 120_000);
afterAll(async () => {
  await h?.close();
});

/** Persisted when idle, delivered when active: the thread decides, so the client asks it with an update. */
const persistWhenIdle = (t: ThreadTarget): SendTarget => ({ ...t, ifIdle: { behavior: 'persist' } });

/** A worker on the harness's task queue whose every workflow task fails; `stop()` shuts it down. */
async function startFailingWorker(): Promise<{ stop(): Promise<void> }> {
  const connection = await NativeConnection.connect({ address: h.address });
  const worker = await Worker.create({
    connection,
    taskQueue: h.taskQueue,
    workflowsPath: fileURLToPath(new URL('../support/failing-thread-workflow.ts', import.meta.url)),
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** Waits (bounded) until the thread's pending workflow task is on attempt 3 or later: updates are refused then. */
async function untilTaskFailing(t: ThreadTarget): Promise<void> {
  const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
  await within(
    (async () => {
      while (((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) < 3) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })(),
    `the workflow task of ${t.threadId} on its third attempt`,
    120_000,
  );
}

describe('an input while the thread’s workflow task is on a retry attempt', () => {
  it('is answered once the task recovers, and is a 503 to send again when it does not within the deadline', async () => {
    const t = h.thread();
    const failing = await startFailingWorker();
    // A persist-only signal goes by signal-with-start: the server takes it whatever the task's state, and starts the
    // thread, whose tasks the failing worker fails.
    const first = await h.client.agent('tester').sendSignal(
      { type: 'reactive', contents: 'first' },
      {
        ...t,
        ifActive: { behavior: 'persist' },
        ifIdle: { behavior: 'persist' },
      },
    );
    expect(first).toMatchObject({ accepted: true, action: 'persist' });
    await untilTaskFailing(t);

    // At the deadline: a clear retryable error, and nothing delivered.
    const impatient = await connect({ bus: h.bus, client: h.temporal, taskQueue: h.taskQueue, deliveryTimeoutMs: 1 });
    const refused = await impatient
      .agent('tester')
      .sendSignal({ type: 'reactive', contents: 'refused' }, persistWhenIdle(t), { id: 'refused-1' })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(UnavailableError);
    expect(refused).toMatchObject({ status: 503, retryAfterSeconds: 5 });
    expect((refused as Error).message).toMatch(/workflow task is being retried.*send it again with the same id/s);
    const abort = await impatient.abortThread(t).catch((err: unknown) => err);
    expect(abort).toBeInstanceOf(UnavailableError);
    for (const read of [
      () => impatient.getThread(t),
      () => impatient.getMessages(t),
      () => impatient.listNotifications(t),
    ]) {
      await expect(read()).rejects.toMatchObject({ name: 'UnavailableError', status: 503, retryAfterSeconds: 5 });
    }
    // Over HTTP: 503 with Retry-After, which a client (the HTTP SDK, the chaos harness) waits out and sends again.
    const gateway = await serveGateway({ client: impatient, agents: summarizeAgents([testAgent]), port: 0 });
    try {
      const res = await fetch(`${gateway.url}/api/agents/tester/signals`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          ...persistWhenIdle(t),
          signal: { id: 'refused-2', type: 'reactive', contents: 'refused over HTTP' },
        }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('UnavailableError');
      // Reads are queries, which Temporal refuses too while the task fails: a 503 to retry, not a 500.
      const thread = `${gateway.url}/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`;
      for (const path of ['', '/messages', '/notifications']) {
        const read = await fetch(thread + path);
        expect({ path, status: read.status, retryAfter: read.headers.get('retry-after') }).toEqual({
          path,
          status: 503,
          retryAfter: '5',
        });
        expect(((await read.json()) as { error: { message: string } }).error.message).toMatch(
          /workflow task is being retried.*retry after 5 s/s,
        );
      }
    } finally {
      await gateway.close();
    }

    // Within the deadline: the client resends while refused, and answers once a worker completes the task.
    let refusals = 0;
    const counting: WorkflowClientInterceptor = {
      async startUpdateWithStart(input, next) {
        try {
          return await next(input);
        } catch (err) {
          refusals++;
          throw err;
        }
      },
    };
    const patient = await connect({
      bus: h.bus,
      client: new Client({ connection: h.temporal.connection, interceptors: { workflow: [counting] } }),
      taskQueue: h.taskQueue,
      deliveryTimeoutMs: 600_000,
    });
    const answer = patient
      .agent('tester')
      .sendSignal({ type: 'reactive', contents: 'answered' }, persistWhenIdle(t), { id: 'answered-1' });
    await within(
      (async () => {
        while (refusals < 2) await new Promise((resolve) => setTimeout(resolve, 100));
      })(),
      'the send refused while the task fails',
      120_000,
    );
    await failing.stop();
    await h.startWorker();
    await expect(within(answer, 'the answer once the task recovers', 300_000)).resolves.toMatchObject({
      accepted: true,
      action: 'persist',
      signalId: 'answered-1',
    });

    // The refused input was never delivered; the answered one is in the thread once.
    const messages = (await h.client.getMessages(t, { limit: 20 }))?.messages ?? [];
    const texts = JSON.stringify(messages);
    expect(texts).toContain('first');
    expect(texts).toContain('answered');
    expect(texts).not.toContain('refused');
    await impatient.close();
    await patient.close();
  }, 600_000);
});
