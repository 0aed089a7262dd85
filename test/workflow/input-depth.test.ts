/**
 * A thread bounds the nesting of its inputs itself (`maxInputDepth`, 64 levels), not only its clients and the
 * gateway: an integration that signals Temporal directly bypasses both. Sent raw with the Temporal client, an update
 * nested deeper is refused by its validator with `InvalidInput` (and is not in the history); a signal is dropped with
 * one `Dropped invalid <name> payload` log line, after the `input-depth` patch marker; an input at the bound is
 * taken; the thread goes on answering, with no workflow task failure. Up to the depths the raw fuzzer sends (3,000
 * levels; a Node sender's `JSON.stringify` fails a little deeper, test/unit/state/input-depth.test.ts goes further).
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../client/connect';
import { readHistoryChain } from '../../client/history-chain';
import {
  approveToolUpdate,
  sendMessageSignal,
  sendNotificationSignal,
  submitInputUpdate,
  submitNotificationsUpdate,
} from '../../protocol/definitions';
import { threadKey } from '../../protocol/ids';
import type { NotificationBatch, ThreadInput } from '../../protocol/schemas';
import { INPUT_DEPTH_PATCH } from '../../workflows/thread';
import { sendAndWaitForAnswer, startHarness, type Harness } from '../support/harness';
import { nested, updateRefusal } from '../support/raw-payloads';

/** Log lines of the workflows, by message. */
const lines: { message: string; workflowId?: string }[] = [];

let h: Harness;

beforeAll(async () => {
  // Before the harness, whose own install then finds this one: the workflows' log lines come here.
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry: LogEntry) => {
      lines.push({ message: entry.message, workflowId: entry.meta?.workflowId as string | undefined });
    }),
    shutdownSignals: [],
  });
  h = await startHarness();
}, 180_000);

afterAll(async () => {
  await h?.close();
});

/** An input whose metadata makes it `levels` deep in all (the input is level 1, metadata level 2). */
const message = (id: string, levels: number): ThreadInput => ({
  id,
  agentId: 'tester',
  delivery: 'send',
  type: 'user',
  contents: id,
  metadata: { deep: nested(levels - 2) },
});

/** A send whose one notification is `levels` deep (the notification is level 1, its payload level 2). */
const batch = (id: string, levels: number): NotificationBatch =>
  ({
    id,
    agentId: 'tester',
    notifications: [{ source: 'ci', kind: 'log', summary: id, payload: nested(levels - 1), priority: 'low' }],
  }) as NotificationBatch;

describe('maxInputDepth in the thread, from a raw Temporal sender', () => {
  it('refuses deep updates, drops deep signals with a log line, takes an input at the bound, keeps answering', async () => {
    const t = h.thread();
    await sendAndWaitForAnswer(h, t, 'Hello');
    const workflowId = threadKey(t.resourceId, t.threadId);
    const handle = h.temporal.workflow.getHandle(workflowId);

    for (const levels of [65, 3_000]) {
      const input = await updateRefusal(
        handle.executeUpdate(submitInputUpdate, {
          args: [message(`deep-update-${levels}`, levels)],
          updateId: `depth-input-${levels}`,
        }),
      );
      expect(input.type).toBe('InvalidInput');
      expect(input.message).toBe(
        "The input nests arrays and objects deeper than 64 levels (this thread's maxInputDepth). Send a flatter value.",
      );
      const notifications = await updateRefusal(
        handle.executeUpdate(submitNotificationsUpdate, {
          args: [batch(`deep-batch-${levels}`, levels)],
          updateId: `depth-batch-${levels}`,
        }),
      );
      expect(notifications.type).toBe('InvalidInput');
      expect(notifications.message).toMatch(/^Notification 0 nests arrays and objects deeper than 64 levels/);
    }
    const approval = await updateRefusal(
      handle.executeUpdate(approveToolUpdate, {
        args: [{ toolCallId: 'call-1', approved: true, resumeData: nested(1_000) }],
        updateId: 'depth-approval',
      }),
    );
    expect(approval.type).toBe('InvalidInput');

    // Signals: dropped, each with its log line (3,000 levels: what the fuzzer sends, near what the sender can encode).
    await handle.signal(sendMessageSignal, message('deep-signal', 65));
    await handle.signal(sendMessageSignal, message('abyss-signal', 3_000));
    await handle.signal(sendNotificationSignal, batch('deep-signal-batch', 3_000));
    // At the bound: taken, as the clients take it.
    await handle.executeUpdate(submitInputUpdate, {
      args: [{ ...message('at-bound', 64), delivery: 'queue' }],
      updateId: 'depth-at-bound',
    });
    await sendAndWaitForAnswer(h, t, 'Still there?');

    const ids = (await h.client.getMessages(t, { limit: 50 }))!.messages.map((m) => m.id);
    expect(ids).toContain('at-bound');
    for (const id of ['deep-update-65', 'deep-update-3000', 'deep-signal', 'abyss-signal'])
      expect(ids).not.toContain(id);
    expect((await h.client.getThread(t))!.inbox.total).toBe(0);

    const dropped = (name: string) =>
      lines.filter((l) => l.workflowId === workflowId && l.message === `Dropped invalid ${name} payload`).length;
    await expect.poll(() => dropped('sendMessage'), { timeout: 60_000 }).toBe(2);
    await expect.poll(() => dropped('sendNotification'), { timeout: 60_000 }).toBe(1);

    const events = (await readHistoryChain(h.temporal.workflow, workflowId)).flatMap(
      (execution) => execution.history.events ?? [],
    );
    expect(events.filter((e) => String(e.eventType).includes('WORKFLOW_TASK_FAILED'))).toEqual([]);
    // No refused update is in the history; the one at the bound is.
    const acceptedUpdates = events
      .map(
        (e) =>
          (e.workflowExecutionUpdateAcceptedEventAttributes as { acceptedRequest?: { meta?: { updateId?: string } } })
            ?.acceptedRequest?.meta?.updateId,
      )
      .filter((id): id is string => id?.startsWith('depth-') === true);
    expect(acceptedUpdates).toEqual(['depth-at-bound']);
    // The signals were dropped behind the patch (a history recorded before took them).
    const patches = events.flatMap((e) => {
      const marker = e.markerRecordedEventAttributes as
        { markerName?: string; details?: Record<string, { payloads?: { data?: string }[] }> } | undefined;
      if (marker?.markerName !== 'core_patch') return [];
      // Core's patch marker: `{ id, deprecated }` as JSON under the `patch-data` key (base64 in a history's JSON).
      const data = marker.details?.['patch-data']?.payloads?.[0]?.data;
      return data ? [(JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id: string }).id] : [];
    });
    expect(patches).toContain(INPUT_DEPTH_PATCH);
  }, 300_000);

  it('is the bound of a client that admits deeper inputs, for the threads that client starts', async () => {
    const deeper = await connect({
      client: h.temporal,
      bus: h.bus,
      taskQueue: h.taskQueue,
      limits: { maxInputDepth: 100 },
    });
    try {
      const t = h.thread();
      const metadata = { deep: nested(80) };
      const result = await deeper.agent('tester').sendMessage({ contents: 'deep', metadata }, t);
      expect(result).toMatchObject({ accepted: true, action: 'wake' });
      const stored = (await deeper.getMessages(t, { limit: 5 }))!.messages.find((m) => m.id === result.signalId);
      expect(stored).toBeDefined();
      // A thread started by a default client keeps the default bound, whoever sends.
      const other = h.thread();
      await sendAndWaitForAnswer(h, other, 'Hello');
      await expect(deeper.agent('tester').sendMessage({ contents: 'deep', metadata }, other)).rejects.toThrow(
        /maxInputDepth/,
      );
    } finally {
      await deeper.close();
    }
  }, 300_000);
});
