/**
 * A thread bounds its inputs itself (`maxInputBytes`), not only its clients: a raw Temporal sender that skips the
 * client's check cannot store an input the next step's activity could not carry (found by the raw payload fuzzer,
 * docs/fuzzing.md: a 1.2 MB `sendMessage` signal was taken, and the next step's workflow task failed and ended the
 * thread). An oversized update is refused with `InputTooLarge`; an oversized signal is dropped with a log line; the
 * thread goes on answering, with no workflow task failure. A client whose limit is raised starts its threads with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../client/connect';
import { readHistoryChain } from '../../client/history-chain';
import {
  sendMessageSignal,
  sendNotificationSignal,
  submitInputUpdate,
  submitNotificationsUpdate,
} from '../../protocol/definitions';
import { PayloadTooLargeError } from '../../protocol/errors';
import { threadKey } from '../../protocol/ids';
import type { NotificationBatch, ThreadInput } from '../../protocol/schemas';
import { defaultThreadConfig } from '../../protocol/thread-config';
import { sendAndWaitForAnswer, startHarness, type Harness } from '../support/harness';
import { updateRefusal } from '../support/raw-payloads';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const limit = defaultThreadConfig.maxInputBytes;
const message = (id: string, bytes: number): ThreadInput => ({
  id,
  agentId: 'tester',
  delivery: 'send',
  type: 'user',
  contents: 'x'.repeat(bytes),
});

describe('maxInputBytes in the thread', () => {
  it('refuses an oversized raw update, drops an oversized raw signal, and keeps answering', async () => {
    const t = h.thread();
    await sendAndWaitForAnswer(h, t, 'Hello');
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));

    const update = await updateRefusal(
      handle.executeUpdate(submitInputUpdate, { args: [message('big-update', limit)] }),
    );
    expect(update.type).toBe('InputTooLarge');
    expect(update.details?.[0]).toMatchObject({ limit: 'maxInputBytes', value: limit });
    expect(update.message).toMatch(/this thread takes at most 262144 \(its maxInputBytes\)/);

    const batch: NotificationBatch = {
      id: 'big-batch',
      agentId: 'tester',
      notifications: [{ source: 'ci', kind: 'log', summary: 'a big log', payload: 'x'.repeat(limit), priority: 'low' }],
    } as NotificationBatch;
    expect((await updateRefusal(handle.executeUpdate(submitNotificationsUpdate, { args: [batch] }))).type).toBe(
      'InputTooLarge',
    );

    // Under Temporal's 2 MB, over the thread's bound: what the fuzzer sent.
    await handle.signal(sendMessageSignal, message('big-signal', 1_200_000));
    await handle.signal(sendNotificationSignal, { ...batch, id: 'big-signal-batch' });
    await sendAndWaitForAnswer(h, t, 'Still there?');

    const ids = (await h.client.getMessages(t, { limit: 50 }))!.messages.map((m) => m.id);
    expect(ids).not.toContain('big-update');
    expect(ids).not.toContain('big-signal');
    expect((await h.client.getThread(t))!.inbox.total).toBe(0);
    const events = (await readHistoryChain(h.temporal.workflow, threadKey(t.resourceId, t.threadId))).flatMap(
      (execution) => execution.history.events ?? [],
    );
    expect(events.filter((e) => String(e.eventType).includes('WORKFLOW_TASK_FAILED'))).toEqual([]);
    expect(events.filter((e) => String(e.eventType).includes('WORKFLOW_EXECUTION_UPDATE_ACCEPTED'))).toHaveLength(2);
  }, 300_000);

  it('answers 413 from the client; a client with a raised limit starts threads that take it, older ones keep theirs', async () => {
    const older = h.thread();
    await expect(h.client.agent('tester').sendMessage('x'.repeat(limit), older)).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
    await sendAndWaitForAnswer(h, older, 'Hello');

    const raised = await connect({
      client: h.temporal,
      bus: h.bus,
      taskQueue: h.taskQueue,
      limits: { maxInputBytes: 2 * limit },
    });
    try {
      const t = h.thread();
      const result = await raised.agent('tester').sendMessage('y'.repeat(limit + 1_000), t);
      expect(result.action).toBe('wake');
      const ids = (await raised.getMessages(t, { limit: 5 }))!.messages.map((m) => m.id);
      expect(ids).toContain(result.signalId);
      // A thread keeps the bound it was created with: past it, the thread itself refuses even this client.
      const refused = raised.agent('tester').sendMessage('z'.repeat(limit + 1_000), older);
      await expect(refused).rejects.toBeInstanceOf(PayloadTooLargeError);
      await expect(refused).rejects.toThrow(/this thread takes at most 262144 \(its maxInputBytes\)/);
    } finally {
      await raised.close();
    }
  }, 300_000);
});
