/**
 * The server may hand an update back unprocessed (`UnprocessedUpdate`: a workflow task that carried it completed
 * without accepting or refusing it; docs/operations.md, the query-task race). Nothing was recorded, so the client sends
 * it again until `deliveryTimeoutMs`, and past it answers `UnavailableError` (503 with Retry-After), not a conflict.
 * The refusal is made by the client's own Temporal `Client` (the race is rare and timing-bound); the thread, the
 * worker and the resend are real, on the dev server.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Client, WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect, type ThreadlineClient } from '../../client/connect';
import { UnavailableError } from '../../protocol/errors';
import type { ThreadTarget } from '../../protocol/schemas';
import { sendAndWaitForAnswer, startHarness, type Harness } from '../support/harness';

let h: Harness;
let spied: ThreadlineClient | undefined;
beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await spied?.close();
  spied = undefined;
});
afterAll(async () => h?.close());

/** The server's answer for an update no workflow task accepted or refused (its message and type, as 1.29 sends). */
function unprocessed(): WorkflowUpdateFailedError {
  return new WorkflowUpdateFailedError(
    'Workflow Update failed',
    ApplicationFailure.create({
      type: 'UnprocessedUpdate',
      message:
        "Workflow Update is rejected because it wasn't processed by worker. Probably, Workflow Update is not " +
        'supported by the worker.',
      nonRetryable: true,
    }),
  );
}

/**
 * A client of its own whose sends all go by update-with-start (`knownThreads: 0`), so that one spy sees each attempt.
 */
async function spiedClient(deliveryTimeoutMs?: number) {
  const temporal = new Client({ connection: h.temporal.connection });
  const attempts = vi.spyOn(temporal.workflow, 'executeUpdateWithStart');
  const client = await connect({
    bus: h.bus,
    client: temporal,
    taskQueue: h.taskQueue,
    knownThreads: 0,
    deliveryTimeoutMs,
  });
  spied = client;
  return { agent: client.agent('tester'), attempts };
}

/** How many of the thread's stored messages carry `marker`. */
async function stored(t: ThreadTarget, marker: string): Promise<number> {
  const messages = (await h.client.getMessages(t, { limit: 50 }))?.messages ?? [];
  return messages.filter((m) => JSON.stringify(m).includes(marker)).length;
}

describe('an update the server hands back unprocessed', () => {
  it('is sent again and recorded once', async () => {
    const t = h.thread();
    await sendAndWaitForAnswer(h, t, 'first');
    const { agent, attempts } = await spiedClient();
    attempts.mockRejectedValueOnce(unprocessed());
    const marker = `again ${randomUUID()}`;

    const answer = await agent.sendMessage(marker, t);

    expect(answer).toMatchObject({ accepted: true });
    expect(attempts).toHaveBeenCalledTimes(2);
    expect(await stored(t, marker)).toBe(1);
  });

  it('still unprocessed at the deadline: UnavailableError with Retry-After, and nothing recorded', async () => {
    const t = h.thread();
    await sendAndWaitForAnswer(h, t, 'first');
    const { agent, attempts } = await spiedClient(300);
    attempts.mockRejectedValue(unprocessed());
    const marker = `never ${randomUUID()}`;

    const error = await agent.sendMessage(marker, t).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as UnavailableError).message).toContain('handed the update back unprocessed');
    expect((error as UnavailableError).message).toContain('send it again with the same id');
    expect((error as UnavailableError).retryAfterSeconds).toBeGreaterThan(0);
    expect(attempts.mock.calls.length).toBeGreaterThan(1);
    attempts.mockRestore();
    expect(await stored(t, marker)).toBe(0);
  });
});
