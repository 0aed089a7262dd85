/**
 * A thread with large messages stays under Temporal's 2 MB payload limit (docs/limits.md): the stored conversation is
 * bounded in bytes (`maxStoredBytes`), so what continue-as-new carries stays bounded however much was said, and the
 * step's input carries only what changed (`StepWindow`), so a long conversation never makes a step's input grow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { temporal } from '@temporalio/proto';
import { threadKey } from '../../protocol/ids';
import type { ThreadWorkflowArgs } from '../../protocol/thread-config';
import type { ThreadSnapshot } from '../../workflows/state';
import { collectUntil, startHarness, type Harness } from '../support/harness';

const MAX_STORED_BYTES = 256 * 1024;
let h: Harness;
beforeAll(async () => {
  // A small byte bound and frequent continue-as-new, so a few hundred kilobytes exercise both.
  h = await startHarness({ threadConfig: { maxStoredBytes: MAX_STORED_BYTES, continueAsNewAfterEvents: 60 } });
});
afterAll(async () => {
  await h?.close();
});

/** Every execution's start payload of a workflow id, newest first, along `continuedExecutionRunId`. */
type Carried = { bytes: number; args: ThreadWorkflowArgs<ThreadSnapshot> };
async function carried(workflowId: string): Promise<Carried[]> {
  const out: Carried[] = [];
  const converter = h.temporal.options.loadedDataConverter.payloadConverter;
  let runId: string | null | undefined = (await h.temporal.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await h.temporal.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const started = history.events![0].workflowExecutionStartedEventAttributes!;
    const payload = started.input!.payloads![0];
    out.push({ bytes: payload.data!.length, args: converter.fromPayload<ThreadWorkflowArgs<ThreadSnapshot>>(payload) });
    runId = started.continuedExecutionRunId;
  }
  return out;
}

describe('a thread with large messages', () => {
  it('keeps its stored conversation within maxStoredBytes across continue-as-new, newest kept', async () => {
    const t = h.thread();
    const agent = h.client.agent('tester');
    const big = (i: number) => `note ${i} ${'x'.repeat(8 * 1024)}`;
    // 80 notes of 8 KiB (640 KiB), persisted without waking the thread.
    for (let i = 0; i < 80; i++) {
      const sent = await agent.sendSignal(
        { type: 'notification', contents: big(i) },
        { ...t, ifIdle: { behavior: 'persist' } },
      );
      expect(sent.action).toBe('persist');
    }
    const sub = agent.subscribeToThread(t);
    const answered = await agent.sendMessage('summarize', t);
    await collectUntil(sub.stream, (e) => e.type === 'finish' && e.runId === answered.runId);
    sub.unsubscribe();

    const chain = await carried(threadKey(t.resourceId, t.threadId));
    expect(chain.length).toBeGreaterThan(1); // it continued as new at least once
    for (const { bytes, args } of chain.slice(0, -1)) {
      const stored = JSON.stringify(args.snapshot!.messages).length;
      expect(stored).toBeLessThanOrEqual(MAX_STORED_BYTES);
      expect(bytes).toBeLessThan(MAX_STORED_BYTES + 64 * 1024);
    }
    // The newest notes and the question stayed; the oldest left.
    const page = (await h.client.getMessages(t, { limit: 200 }))!;
    const texts = page.messages.map((m) => JSON.stringify(m));
    expect(texts.some((m) => m.includes('note 79 '))).toBe(true);
    expect(texts.some((m) => m.includes('note 0 '))).toBe(false);
    expect(texts.some((m) => m.includes('summarize'))).toBe(true);
    expect(JSON.stringify(page.messages).length).toBeLessThanOrEqual(MAX_STORED_BYTES);
  });
});
