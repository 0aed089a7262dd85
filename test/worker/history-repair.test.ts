/**
 * `threadline history repair` on a thread that is really stuck: a worker whose workflow records a command the real
 * code does not (test/support/divergent-interceptor.ts) serves two turns, then only workers with the real code remain,
 * and every workflow task of the thread fails as nondeterministic (an input sent meanwhile waits). The command names
 * the diverging event, plans a reset to the last workflow task before it (changing nothing without --yes), resets with
 * --yes, and the thread goes on: the waiting input is answered, the turn the reset undid is redone, no user message is
 * lost or doubled, and the history replays.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connect } from '../../client/connect';
import { threadKey } from '../../protocol/ids';
import type { StoredMessage } from '../../protocol/messages';
import { createWorker, type ThreadlineWorker } from '../../worker';
import { CannotRepair, resetThread, type RepairPlan } from '../../worker/commands/history-repair';
import { formatThreadName } from '../../worker/commands/thread-name';
import { runThreadline } from '../support/cli';
import { sendAndWaitForAnswer, startHarness, testAgent, within, type Harness } from '../support/harness';

let h: Harness;
let env: Record<string, string>;
beforeAll(async () => {
  h = await startHarness({ noWorker: true });
  const dir = await mkdtemp(join(tmpdir(), 'threadline-repair-'));
  env = { HOME: dir, XDG_CONFIG_HOME: dir, TEMPORAL_ADDRESS: h.address, TEMPORAL_TASK_QUEUE: h.taskQueue };
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const cli = (args: string[]) => runThreadline(args, env);

/** A worker with the real workflow code plus the divergent interceptor (bundled on the spot). */
async function startDivergentWorker(): Promise<{ stop(): Promise<void> }> {
  const connection = await NativeConnection.connect({ address: h.address });
  const w: ThreadlineWorker = await createWorker({
    agents: [testAgent],
    bus: h.bus,
    connection,
    taskQueue: h.taskQueue,
    models: { openaiBaseUrl: h.model.url, openaiApiKey: 'test' },
    shutdownGraceTimeMs: 1_000,
    worker: {
      interceptors: {
        workflowModules: [fileURLToPath(new URL('../support/divergent-interceptor.ts', import.meta.url))],
      },
    },
  });
  const running = w.run();
  return {
    async stop() {
      await w.shutdown();
      await running;
      await connection.close();
    },
  };
}

describe('threadline history repair', () => {
  it('resets a thread stuck on a divergence to the task before it, and the thread goes on', async () => {
    const t = h.thread();
    const name = formatThreadName(t);
    const bundle = inject('workflowBundlePath');
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));

    const divergent = await startDivergentWorker();
    await sendAndWaitForAnswer(h, t, 'turn 1');
    await sendAndWaitForAnswer(h, t, 'turn 2');
    await divergent.stop();
    await h.startWorker();

    // A third input: the real code cannot replay the thread, so its tasks fail and the input waits (the client resends).
    const patient = await connect({
      bus: h.bus,
      client: h.temporal,
      taskQueue: h.taskQueue,
      deliveryTimeoutMs: 600_000,
    });
    const third = patient.agent('tester').sendMessage('turn 3', t);
    await within(
      (async () => {
        while (((await handle.describe()).raw.pendingWorkflowTask?.attempt ?? 0) < 2) {
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      })(),
      "the thread's workflow task failing again",
      120_000,
    );
    const stuck = await cli(['history', 'replay', name, '--bundle', bundle]);
    expect(stuck.code, stuck.out + stuck.err).toBe(1);
    expect(stuck.out).toContain('DIVERGES at event');

    // The plan: names the divergence and the reset point, changes nothing.
    const { runId } = await handle.describe();
    const planned = await cli(['history', 'repair', name, '--bundle', bundle]);
    expect(planned.code, planned.out + planned.err).toBe(0);
    expect(planned.out).toMatch(/diverges at event \d+ \(WorkflowPropertiesModified\)/);
    expect(planned.out).toMatch(/resets to event \d+ \(WorkflowTaskCompleted\)/);
    expect(planned.out).toContain('Nothing changed. Run again with --yes to reset.');
    expect((await handle.describe()).runId).toBe(runId);

    // Refusals change nothing either: a reset point that is not a completed workflow task, a malformed one.
    const notTask = await cli(['history', 'repair', name, '--bundle', bundle, '--event', '1']);
    expect(notTask.code).toBe(1);
    expect(notTask.err).toContain('event 1 of run');
    expect(notTask.err).toContain('WorkflowExecutionStarted, not a WorkflowTaskCompleted');
    const malformed = await cli(['history', 'repair', name, '--event', 'last']);
    expect(malformed.code).toBe(2);
    expect(malformed.err).toContain('--event takes an event id');
    expect((await handle.describe()).runId).toBe(runId);

    const repaired = await cli(['history', 'repair', name, '--bundle', bundle, '--yes', '--json']);
    expect(repaired.code, repaired.out + repaired.err).toBe(0);
    const result = JSON.parse(repaired.out) as RepairPlan & { reset: boolean; newRunId: string };
    expect(result).toMatchObject({ runId, reset: true, divergence: { eventType: 'WorkflowPropertiesModified' } });
    expect(result.resetEventId).toBeLessThan(result.divergence!.eventId);
    // Turn 2's input and its step came after the reset point: reapplied and run again.
    expect(result.redone.updates).toBeGreaterThanOrEqual(1);
    expect(result.redone.steps).toBeGreaterThanOrEqual(1);
    expect((await handle.describe()).runId).toBe(result.newRunId);
    // A plan made before someone else's reset is refused: resetting its run would terminate the new one.
    await expect(resetThread(h.temporal, 'default', result)).rejects.toThrow(CannotRepair);
    expect((await handle.describe()).runId).toBe(result.newRunId);

    // The waiting input is answered, and the thread finishes its runs: turn 3 joins the redone turn's run when it
    // arrives while that runs (one answer for both), else it runs on its own.
    await expect(within(third, 'the third input answered after the repair', 120_000)).resolves.toMatchObject({
      accepted: true,
    });
    const turnOf = (m: StoredMessage) =>
      m.role === 'user' ? /turn \d/.exec(JSON.stringify(m.contents))?.[0] : undefined;
    let messages: StoredMessage[] = [];
    await within(
      (async () => {
        for (;;) {
          const view = await h.client.getThread(t);
          messages = (await h.client.getMessages(t, { limit: 50 }))?.messages ?? [];
          const answered = messages.length > 0 && messages[messages.length - 1].role === 'assistant';
          if (view?.status === 'idle' && answered && messages.some((m) => turnOf(m) === 'turn 3')) return;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      })(),
      'the thread idle with every turn answered',
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; its messages: ${JSON.stringify(messages)}`);
    });
    // Every user message once, in order, each followed by an answer.
    expect(messages.flatMap((m) => (m.role === 'user' ? [turnOf(m)] : []))).toEqual(['turn 1', 'turn 2', 'turn 3']);
    expect(messages[1].role).toBe('assistant');
    const afterTurn2 = messages.slice(messages.findIndex((m) => turnOf(m) === 'turn 2'));
    expect(afterTurn2.filter((m) => m.role === 'assistant').length).toBeGreaterThanOrEqual(1);

    // Healthy again: it replays, and a second repair has nothing to do.
    const replayed = await cli(['history', 'replay', name, '--bundle', bundle]);
    expect(replayed.code, replayed.out + replayed.err).toBe(0);
    const again = await cli(['history', 'repair', name, '--bundle', bundle]);
    expect(again.code, again.out + again.err).toBe(0);
    expect(again.out).toContain('it is not stuck on a divergence, nothing to reset');
    await patient.close();
  }, 600_000);

  it('refuses a thread that does not exist (exit 1)', async () => {
    const missing = await cli(['history', 'repair', formatThreadName(h.thread())]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('No thread');
  });
});
