/**
 * behaviour §7 "Long threads continue-as-new … no input, queue entry … is ever lost across it" on a real Temporal dev
 * server: one thread, a low continue-as-new threshold, 30 inputs of every kind (wake, mid-step deliver, queued),
 * and the whole stream and the last prompt checked for loss, duplication and order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThreadEvent } from '../../protocol/events';
import type { SendResult } from '../../client/connect';
import { threadKey } from '../../protocol/ids';
import type { ThreadWorkflowArgs } from '../../workflows/thread';
import { afterFinishes, collectUntil, startHarness, userTurns, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  // 50 history events: a handful of runs per execution, so 30 inputs cross several boundaries.
  h = await startHarness({ threadConfig: { continueAsNewAfterEvents: 50 } });
});
afterAll(async () => {
  await h?.close();
});

/** The first event of one execution: how it started, and with what input. */
async function startedEvent(workflowId: string, runId: string) {
  const history = await h.temporal.workflow.getHandle(workflowId, runId).fetchHistory();
  return history.events![0].workflowExecutionStartedEventAttributes!;
}

/** Every execution of a workflow id, oldest first: the current one, then back along `continuedExecutionRunId`. */
async function executionChain(workflowId: string): Promise<string[]> {
  const chain: string[] = [];
  let runId: string | null | undefined = (await h.temporal.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    chain.unshift(runId);
    runId = (await startedEvent(workflowId, runId)).continuedExecutionRunId;
  }
  return chain;
}

/** What continue-as-new handed an execution: the previous execution's active run and queue. */
async function carriedState(workflowId: string, runId: string) {
  const payload = (await startedEvent(workflowId, runId)).input!.payloads![0];
  const { snapshot } = h.temporal.options.loadedDataConverter.payloadConverter.fromPayload<ThreadWorkflowArgs>(payload);
  return {
    runStep: snapshot?.run?.stepNumber ?? 0,
    pending: snapshot?.run?.pending.length ?? 0,
    queued: snapshot?.queue.length ?? 0,
  };
}

interface Sent {
  id: string;
  text: string;
  result: SendResult;
}

const SLOW = '(slow)';

/**
 * idle: sendMessage on an idle thread. mid: a slow step, and `extra` sendMessages while it streams.
 * queued: a slow step, and `extra` queueMessages behind it. 30 inputs in all; the last round follows the re-sends.
 *
 * Eight inputs during one step add at least 40 history events (each update: a workflow task and two update events)
 * to the one execution that runs the step, so that execution continues as new at the next step boundary with the
 * run active and inputs pending (mid) or with the run finished and runs queued (queued).
 */
const rounds: { kind: 'idle' | 'mid' | 'queued'; extra: number }[] = [
  { kind: 'idle', extra: 0 },
  { kind: 'mid', extra: 2 },
  { kind: 'queued', extra: 2 },
  { kind: 'mid', extra: 8 },
  { kind: 'idle', extra: 0 },
  { kind: 'queued', extra: 8 },
  { kind: 'queued', extra: 2 },
  { kind: 'idle', extra: 0 },
];

describe('continue-as-new', () => {
  it('loses, duplicates and reorders nothing across several executions', { timeout: 240_000 }, async () => {
    const t = h.thread();
    const workflowId = threadKey(t.resourceId, t.threadId);
    const agent = h.client.agent('tester');
    const sub = agent.subscribeToThread(t);
    const events: ThreadEvent[] = [];
    const waitForFinishes = async (n: number): Promise<void> => {
      events.push(...(await collectUntil(sub.stream, afterFinishes(n), 60_000)));
    };
    const sent: Sent[] = [];
    const send = async (delivery: 'send' | 'queue', id: string, text: string): Promise<SendResult> => {
      const message = { id, contents: text };
      const result = delivery === 'send' ? await agent.sendMessage(message, t) : await agent.queueMessage(message, t);
      sent.push({ id, text, result });
      return result;
    };
    // A slow reply (2 s) keeps the step streaming while the test sends into it; every other reply is immediate.
    h.model.setResponder((req) => {
      const last = userTurns(req.messages).at(-1) ?? '';
      return last.endsWith(SLOW)
        ? { text: ['working ', 'on ', 'it ', 'right ', 'now'], chunkDelayMs: 400 }
        : { text: `reply to ${last}` };
    });

    try {
      for (const [i, { kind, extra }] of rounds.entries()) {
        if (i === rounds.length - 1) {
          // Re-sends of ids accepted by earlier executions: the first input created the thread, so the first
          // execution accepted it, and the thread is at least on its third execution by now.
          expect((await executionChain(workflowId)).length).toBeGreaterThanOrEqual(3);
          const firstOf = (action: string) => sent.find((s) => s.result.action === action)!;
          const originals = [sent[0], firstOf('deliver'), firstOf('queued')];
          for (const original of originals) {
            const again = await agent.sendMessage({ id: original.id, contents: original.text }, t);
            expect(again).toMatchObject({
              accepted: true,
              action: original.result.action,
              runId: original.result.runId,
              signalId: original.id,
              duplicate: true,
            });
          }
        }
        if (kind === 'idle') {
          const r = await send('send', `in-${i}`, `turn ${i}`);
          expect(r).toMatchObject({ action: 'wake', signalId: `in-${i}` });
          await waitForFinishes(1);
          continue;
        }
        const requestsBefore = h.model.requests.length;
        const first = await send('send', `in-${i}`, `turn ${i} ${SLOW}`);
        expect(first.action).toBe('wake');
        // The step has called the model and is streaming its slow reply.
        await h.model.waitForRequests(requestsBefore + 1, 30_000);
        const more: SendResult[] = [];
        for (let k = 1; k <= extra; k++) {
          more.push(
            kind === 'mid'
              ? await send('send', `in-${i}-mid-${k}`, `turn ${i} mid ${k}`)
              : await send('queue', `in-${i}-queued-${k}`, `turn ${i} queued ${k}`),
          );
        }
        if (kind === 'mid') {
          for (const r of more) expect(r).toMatchObject({ action: 'deliver', runId: first.runId });
          await waitForFinishes(1);
        } else {
          for (const r of more) expect(r.action).toBe('queued');
          expect(new Set([first.runId, ...more.map((r) => r.runId)]).size).toBe(extra + 1);
          await waitForFinishes(extra + 1);
        }
      }
    } finally {
      h.model.setResponder(undefined);
      sub.unsubscribe();
    }

    expect(sent).toHaveLength(30);
    const chain = await executionChain(workflowId);
    console.log(`continue-as-new: ${chain.length} executions of ${workflowId}`);
    expect(chain.length).toBeGreaterThanOrEqual(3);
    // The boundaries this test is about were crossed: a run with inputs waiting for its next step, and queued runs.
    const carried = await Promise.all(chain.slice(1).map((runId) => carriedState(workflowId, runId)));
    expect(carried.some((c) => c.runStep >= 1 && c.pending > 0)).toBe(true);
    expect(carried.some((c) => c.queued > 0)).toBe(true);

    // Event ids are strictly increasing across every boundary.
    const ids = events.map((e) => Number(e.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);

    // Every input is echoed exactly once, into the run its result named.
    const echoes = events.filter((e) => e.type === 'data-user-message');
    const echoedIds = echoes.map((e) => (e.payload as { id: string }).id);
    expect([...echoedIds].sort()).toEqual(sent.map((s) => s.id).sort());
    for (const s of sent)
      expect(echoes.find((e) => (e.payload as { id: string }).id === s.id)!.runId).toBe(s.result.runId);

    // Every input is exactly one user turn of the last prompt, in the order the inputs entered the context.
    const messageCount = (await h.client.getThread(t))!.messageCount;
    expect(messageCount).toBeLessThanOrEqual(100); // the default context window holds the whole conversation
    const turns = userTurns(h.model.requests.at(-1)!.messages);
    const textOf = new Map(sent.map((s) => [s.id, s.text]));
    expect(turns).toEqual(echoedIds.map((id) => textOf.get(id)));
    for (const s of sent) expect(turns.filter((x) => x === s.text)).toHaveLength(1);

    // One run per wake or queued result, started in acceptance order, each finished exactly once.
    const runs = sent
      .filter((s) => s.result.action === 'wake' || s.result.action === 'queued')
      .map((s) => s.result.runId);
    expect(runs).toHaveLength(20);
    const starts = events.filter((e) => e.type === 'start').map((e) => e.runId);
    expect(starts).toEqual(runs);
    const finishes = events.filter((e) => e.type === 'finish');
    expect(finishes.map((e) => e.runId)).toEqual(runs);
    for (const f of finishes) expect(f.payload).toMatchObject({ runId: f.runId, reason: 'stop' });
    for (const runId of runs) {
      expect(events.findIndex((e) => e.type === 'start' && e.runId === runId)).toBeLessThan(
        events.findIndex((e) => e.type === 'finish' && e.runId === runId),
      );
    }

    // One model call per step, none repeated or interrupted.
    expect(events.filter((e) => e.type === 'step-start')).toHaveLength(h.model.requests.length);
    expect(events.filter((e) => ['error', 'run-retry', 'step-interrupted'].includes(e.type))).toEqual([]);
    expect(await h.client.getThread(t)).toMatchObject({ status: 'idle', queue: [], runsCompleted: runs.length });
  });
});
