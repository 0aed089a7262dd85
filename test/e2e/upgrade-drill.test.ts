/**
 * The upgrade drill (docs/operations.md, "Upgrade drill"): threads live on the deployed workflow code, the worker is
 * replaced by one running a changed workflow, and every thread finishes correctly; the same change without its
 * `patched()` gate is caught by the replay check before it ships.
 *
 * The change (test/support/upgrade/settle-before-step.ts) adds a timer before every model step: a command where old
 * histories have none. Four threads are left on the old worker (a worker process running the global bundle of
 * workflows/): one idle after a turn, one parked on a tool approval, one mid-run (the model stream stalls halfway),
 * one with a notification digest timer pending. The old worker stops (SIGTERM: graceful; SIGKILL: dead), and a worker
 * process with the gated change takes over. Each thread then does what it was waiting for, and its history shows the
 * old steps without the timer, one patch marker, and every later step behind the timer. In the SIGTERM drill the
 * histories are also exported (`threadline history export`) and replayed (`threadline history replay --bundle`):
 * before the deploy against both candidates, after it against the gated change and the old code (a rollback).
 *
 * Waits are generous: after a SIGKILL a thread's next workflow task waits out the dead worker's sticky queue (10 s),
 * and its step a heartbeat timeout (2 s here).
 */
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replaySinks } from '../../worker/replay-sinks';
import { RedisBus } from '../../bus/redis';
import type { ThreadEvent } from '../../protocol/events';
import type { StoredMessage } from '../../protocol/messages';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import type { JsonEvent } from '../../worker/commands/divergence';
import { readHistoryChain } from '../../worker/commands/history-file';
import { formatThreadName } from '../../worker/commands/thread-name';
import { runThreadline, type CliRun } from '../support/cli';
import { collectUntil, startHarness, textByRun, userTurns, type Harness } from '../support/harness';
import { echoResponder } from '../support/model-server';
import { startWorkerProcess, workerEnvFor } from '../support/processes';
import { startRedis, type RedisServer } from '../support/redis';
import { readToolLog } from '../support/test-agents';
import { writeUpgradeBundle, type UpgradeVariant } from '../support/upgrade/bundle';
import { SETTLE_PATCH_ID, SETTLE_TIMER_SUMMARY } from '../support/upgrade/settle-before-step';
import { LOOP_STAMPS_LAST_INPUT_PATCH } from '../../workflows/search-attributes';
import { SETTLE_BEFORE_ACTING_PATCH } from '../../workflows/thread';

const WAIT_MS = 60_000;
/** Long enough that the digest is still pending when the old worker is gone; the drill waits it out once. */
const DIGEST_WINDOW_MS = 15_000;

const historiesDir = fileURLToPath(new URL('../replay/histories/', import.meta.url));

let redis: RedisServer;
let bus: RedisBus;
let h: Harness;
let dir: string;
let cliEnv: Record<string, string>;
const bundles = {} as Record<UpgradeVariant, string>;

beforeAll(async () => {
  redis = await startRedis();
  bus = new RedisBus(redis.url);
  h = await startHarness({
    bus,
    noWorker: true,
    threadConfig: { digestWindowMs: DIGEST_WINDOW_MS, step: { heartbeatTimeoutMs: 2_000, initialRetryMs: 200 } },
  });
  dir = await mkdtemp(join(tmpdir(), 'threadline-drill-'));
  cliEnv = { HOME: dir, XDG_CONFIG_HOME: dir, TEMPORAL_ADDRESS: h.address, TEMPORAL_TASK_QUEUE: h.taskQueue };
  // The deployed code is the suite's bundle of workflows/; the two candidates are bundled here, one after the other
  // (each takes a core for seconds).
  bundles.current = inject('workflowBundlePath');
  bundles.gated = await writeUpgradeBundle('gated', join(dir, 'gated.js'));
  bundles.ungated = await writeUpgradeBundle('ungated', join(dir, 'ungated.js'));
  bundles['switched-off'] = await writeUpgradeBundle('switched-off', join(dir, 'switched-off.js'));
});
afterAll(async () => {
  await h?.close();
  await bus?.close();
  await redis?.stop();
});

/** `threadline …` in-process (the binary's code path), with the drill's server and task queue. */
const cli = (...args: string[]): Promise<CliRun> => runThreadline(args, cliEnv);

interface ReplayReport {
  ok: boolean;
  executions: { ok: boolean; divergence?: { eventId: number; eventType: string; name?: string; message: string } }[];
}

/** `threadline history replay FILE --bundle <variant> --json`. */
async function replayExport(file: string, variant: UpgradeVariant): Promise<ReplayReport & { code?: number }> {
  const run = await cli('history', 'replay', file, '--bundle', bundles[variant], '--json');
  expect(run.err).toBe('');
  return { code: run.code, ...(JSON.parse(run.out) as ReplayReport) };
}

describe('the replay check', () => {
  it('fails every committed history on the change without its gate, naming the event, and passes them with the gate', async () => {
    const files = (await readdir(historiesDir)).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const history = historyFromJSON(JSON.parse(await readFile(join(historiesDir, file), 'utf8')));
      // What test/replay/replay.test.ts does, against each candidate bundle instead of the checkout's.
      await Worker.runReplayHistory({ workflowBundle: { codePath: bundles.gated }, sinks: replaySinks }, history, file);
      const ungated = Worker.runReplayHistory(
        { workflowBundle: { codePath: bundles.ungated }, sinks: replaySinks },
        history,
        file,
      );
      await expect(ungated, file).rejects.toMatchObject({
        name: 'DeterminismViolationError',
        message: expect.stringMatching(
          /Nondeterminism error: Timer machine does not handle this event: HistoryEvent\(id: \d+, ActivityTaskScheduled\)/,
        ),
      });
    }
    // The operator's form of the same check names the event and says what to do.
    const run = await cli('history', 'replay', join(historiesDir, files[0]), '--bundle', bundles.ungated);
    expect(run.code).toBe(1);
    expect(run.out).toMatch(/DIVERGES at event \d+ \(ActivityTaskScheduled runStep\)/);
    expect(run.out).toContain('gate the change');
  });
});

const MIDRUN_ASK = 'drill mid-run: write a long answer';
const MIDRUN_FOLLOW_UP = 'drill mid-run: and one more thing';
const FOLLOW_UP_REPLY = 'One more thing, answered.';
const APPROVAL_ASK = 'drill approval: delete acme/app';
const APPROVAL_REPLY = 'Deleted acme/app as you approved.';
const IDLE_FIRST = 'drill idle: hello';
const IDLE_AGAIN = 'drill idle: again';
const DIGEST_ASK = 'drill digest: what did I miss?';
const longReply = Array.from({ length: 20 }, (_, i) => `part${i} `);

/** A thread the drill follows: its target and every event the bus gave its subscription so far. */
interface DrillThread {
  t: ThreadTarget;
  events: ThreadEvent[];
  /** Reads on until `done` holds for an event read from now on. */
  until(done: (e: ThreadEvent) => boolean): Promise<ThreadEvent[]>;
}

function follow(t: ThreadTarget): DrillThread {
  const sub = h.client.subscribeToThread(t);
  const events: ThreadEvent[] = [];
  return {
    t,
    events,
    async until(done) {
      const read = await collectUntil(sub.stream, (e) => done(e), 2 * WAIT_MS);
      events.push(...read);
      return read;
    },
  };
}

const isFinish = (e: ThreadEvent) => e.type === 'finish';

// The replay checks do not depend on how the old worker stopped: they run once, in the SIGTERM drill.
const drills = [
  { signal: 'SIGTERM', replayChecks: true },
  { signal: 'SIGKILL', replayChecks: false },
] as const;

describe.each(drills)('the upgrade drill, the old worker stopped by $signal', ({ signal, replayChecks }) => {
  it(
    'an idle thread, one parked on an approval, one mid-run and one with a digest pending all finish on the upgraded worker; the patch marker fronts the new code path',
    { timeout: 6 * WAIT_MS },
    async () => {
      const toolLog = join(dir, `tools-${signal}.jsonl`);
      const env = {
        ...workerEnvFor(h, redis.url),
        THREADLINE_TEST_AGENTS: 'tester,admin',
        THREADLINE_TEST_TOOL_LOG: toolLog,
      };
      const tester = h.client.agent('tester');
      const admin = h.client.agent('admin');

      // The scripted model, by the thread's first message. The mid-run thread's first attempt stalls halfway; its
      // retry (on the new worker) is held until the follow-up joined the run, so the follow-up gets a step of its own.
      let midrunAttempts = 0;
      let releaseRetry!: () => void;
      const retryMayAnswer = new Promise<void>((resolve) => (releaseRetry = resolve));
      h.model.setResponder(async (req) => {
        const turns = userTurns(req.messages);
        if (turns[0] === MIDRUN_ASK) {
          if (turns.at(-1) === MIDRUN_FOLLOW_UP) return { text: FOLLOW_UP_REPLY };
          if (midrunAttempts++ === 0) return { text: longReply.slice(0, 8), chunkDelayMs: 20, hang: true };
          await retryMayAnswer;
          return { text: longReply };
        }
        if (turns[0] === APPROVAL_ASK) {
          return req.messages.some((m: { role: string }) => m.role === 'tool')
            ? { text: APPROVAL_REPLY }
            : { toolCalls: [{ id: `call-${signal}`, name: 'deleteRepo', args: { repo: 'acme/app' } }] };
        }
        return echoResponder(req);
      });

      try {
        // ── On the deployed code ──────────────────────────────────────────────────────────────────────────────
        const began = Date.now();
        const phases: string[] = [];
        const phase = (name: string) => phases.push(`${name} ${Date.now() - began}`);
        const old = await startWorkerProcess(env);

        const idle = follow(h.thread());
        const idleFirst = await tester.sendMessage(IDLE_FIRST, idle.t);
        await idle.until(isFinish);

        const approval = follow(h.thread());
        const asked = await admin.sendMessage(APPROVAL_ASK, approval.t);
        await approval.until((e) => e.type === 'tool-call-approval');
        await untilSettled(approval.t);

        const midrun = follow(h.thread());
        const midrunFirst = await tester.sendMessage(MIDRUN_ASK, midrun.t);
        let deltas = 0;
        await midrun.until((e) => e.type === 'text-delta' && ++deltas >= 3);

        const digest = follow(h.thread());
        const low = await tester.sendNotificationSignal(
          { source: 'github', kind: 'ci-status', priority: 'low', summary: 'CI failed on main.' },
          digest.t,
        );
        expect(low.notifications[0]).toMatchObject({ action: 'summarize', status: 'pending' });
        await untilSettled(digest.t);

        expect(await h.client.getThread(idle.t)).toMatchObject({ status: 'idle', runsCompleted: 1 });
        expect(await h.client.getThread(approval.t)).toMatchObject({
          status: 'active',
          activeRun: { runId: asked.runId, status: 'awaiting-approval' },
        });
        expect(await h.client.getThread(midrun.t)).toMatchObject({ activeRun: { runId: midrunFirst.runId } });

        // ── Stop the old worker ───────────────────────────────────────────────────────────────────────────────
        // SIGTERM: it stops polling, gives the stalled step its 1 s grace, then hands it back; SIGKILL: gone.
        phase('threads set up');
        expect(await old.kill(signal)).toBe(signal === 'SIGTERM' ? 0 : null);
        phase('old worker gone');
        const digestTimers = pendingTimers(await historyOf(digest.t));
        expect(digestTimers, 'the digest fired before the old worker stopped: raise DIGEST_WINDOW_MS').toHaveLength(1);

        // The deploy check: what is live, exported and replayed against each candidate.
        const threads: DrillThreads = { idle, approval, midrun, digest };
        if (replayChecks) await deployCheck(threads);

        // ── The upgraded worker ───────────────────────────────────────────────────────────────────────────────
        phase('deploy check done');
        const upgraded = await startWorkerProcess({ ...env, THREADLINE_WORKFLOW_BUNDLE: bundles.gated });
        phase('upgraded worker polling');

        // Mid-run: a follow-up joins the run that the old worker started; the retried step answers, then a step
        // of the new code answers the follow-up.
        const followUp = await tester.sendMessage(MIDRUN_FOLLOW_UP, midrun.t);
        expect(followUp).toMatchObject({ accepted: true, action: 'deliver', runId: midrunFirst.runId });
        releaseRetry();

        // Parked: a human approves; the tool runs on the new worker and the model answers with its result.
        const decided = await h.client.sendToolApproval({
          ...approval.t,
          toolCallId: `call-${signal}`,
          approved: true,
        });
        expect(decided).toMatchObject({ accepted: true, runId: asked.runId, status: 'approved' });

        // Idle: the next message wakes it.
        const idleAgain = await tester.sendMessage(IDLE_AGAIN, idle.t);
        expect(idleAgain).toMatchObject({ accepted: true, action: 'wake' });

        await Promise.all([midrun.until(isFinish), approval.until(isFinish), idle.until(isFinish)]);
        phase('mid-run, approval and idle threads finished');

        // Digest: the timer armed on the old worker fires; the digest is stored; the next turn's model sees it.
        await digest.until(
          (e) => e.type === 'notification-updated' && (e.payload as { change: string }).change === 'summarized',
        );
        const digestBefore = h.model.requests.length;
        const digestAsk = await tester.sendMessage(DIGEST_ASK, digest.t);
        expect(digestAsk).toMatchObject({ accepted: true, action: 'wake' });
        await digest.until(isFinish);
        phase('digest thread finished');

        // ── Every thread finished correctly ──────────────────────────────────────────────────────────────────
        const finishes = (thread: DrillThread) =>
          thread.events
            .filter(isFinish)
            .map((e) => ({ runId: e.runId, reason: (e.payload as { reason: string }).reason }));

        expect(finishes(midrun)).toEqual([{ runId: midrunFirst.runId, reason: 'stop' }]);
        expect(midrun.events.filter((e) => e.type === 'run-retry')).toHaveLength(1);
        const retryAt = midrun.events.findIndex((e) => e.type === 'run-retry');
        expect(textByRun(midrun.events.slice(retryAt)).get(midrunFirst.runId!)).toBe(
          longReply.join('') + FOLLOW_UP_REPLY,
        );

        expect(finishes(approval)).toEqual([{ runId: asked.runId, reason: 'stop' }]);
        expect(approval.events.filter((e) => e.type === 'tool-result').map((e) => e.payload)).toEqual([
          expect.objectContaining({ toolName: 'deleteRepo', output: 'deleted acme/app' }),
        ]);
        expect(textByRun(approval.events).get(asked.runId!)).toBe(APPROVAL_REPLY);
        // The tool ran once, after the approval, on the upgraded worker.
        expect(await readToolLog(toolLog)).toEqual([
          expect.objectContaining({ toolName: 'deleteRepo', input: { repo: 'acme/app' }, pid: upgraded.pid }),
        ]);

        expect(finishes(idle)).toEqual([
          { runId: idleFirst.runId, reason: 'stop' },
          { runId: idleAgain.runId, reason: 'stop' },
        ]);
        expect(textByRun(idle.events).get(idleAgain.runId!)).toBe(`Echo: ${IDLE_AGAIN}`);

        expect(finishes(digest)).toEqual([{ runId: digestAsk.runId, reason: 'stop' }]);
        expect(userTurns(h.model.requests[digestBefore].messages).join('\n')).toContain(
          '<notification-summary pending="1" priority="low">github: 1</notification-summary>',
        );

        const conversation = async (thread: DrillThread) =>
          (await h.client.getMessages(thread.t))!.messages.map((m) => `${m.role}: ${messageText(m)}`);
        expect(await conversation(midrun)).toEqual([
          `user: ${MIDRUN_ASK}`,
          `assistant: ${longReply.join('')}`,
          `user: ${MIDRUN_FOLLOW_UP}`,
          `assistant: ${FOLLOW_UP_REPLY}`,
        ]);
        expect(await conversation(idle)).toEqual([
          `user: ${IDLE_FIRST}`,
          `assistant: Echo: ${IDLE_FIRST}`,
          `user: ${IDLE_AGAIN}`,
          `assistant: Echo: ${IDLE_AGAIN}`,
        ]);
        for (const thread of Object.values(threads)) {
          expect(await h.client.getThread(thread.t)).toMatchObject({ status: 'idle', activeRun: null });
        }

        // ── The histories: old steps as they were, one marker, every later step behind the new timer ─────────────
        // Model steps scheduled by the old code, then by the new. The digest thread ran its first step after the
        // upgrade, so its digest timer (armed by the old code) fired into the new one.
        const expected = { idle: [1, 1], approval: [1, 1], midrun: [1, 1], digest: [0, 1] };
        for (const [name, thread] of Object.entries(threads)) {
          const events = await historyOf(thread.t);
          const shape = historyShape(events);
          expect(shape.workflowTaskFailures, `${name}: failed workflow tasks`).toEqual([]);
          // Threadline's own markers (every execution records them in its first task), then the drill's.
          expect(shape.patchMarkers, `${name}: patch markers`).toEqual([
            SETTLE_BEFORE_ACTING_PATCH,
            LOOP_STAMPS_LAST_INPUT_PATCH,
            SETTLE_PATCH_ID,
          ]);
          expect([shape.stepsBeforeMarker, shape.stepsAfterMarker], `${name}: steps before and after`).toEqual(
            expected[name as keyof typeof expected],
          );
          expect(shape.settleTimersBeforeMarker, `${name}: new timers in the old code path`).toBe(0);
          expect(shape.stepsWithoutSettleAfterMarker, `${name}: new steps without the timer`).toBe(0);
          // Every workflow task after the marker ran on the upgraded worker.
          expect(shape.workersAfterMarker, name).toEqual([`${upgraded.pid}@`]);
        }
        // The digest timer fired into a workflow task of the upgraded worker.
        const digestHistory = await historyOf(digest.t);
        expect(workerOfTaskAfter(digestHistory, digestTimers[0])).toBe(`${upgraded.pid}@`);

        // After the deploy: a restart of the new code and a switch-off replay them; a rollback to the old code would not.
        if (replayChecks) await rollbackCheck(threads);
        phase('histories checked');
        console.log(`[upgrade-drill ${signal}] ms since the first thread: ${phases.join(', ')}`);
      } finally {
        releaseRetry();
        h.model.setResponder(undefined);
      }
    },
  );
});

type DrillThreads = Record<'idle' | 'approval' | 'midrun' | 'digest', DrillThread>;

/** `threadline history export` of each thread into the drill's folder; resolves with the files by thread. */
async function exportAll(threads: DrillThreads, suffix: string): Promise<[string, string][]> {
  const files: [string, string][] = [];
  for (const [name, thread] of Object.entries(threads)) {
    const file = join(dir, `${name}-${suffix}.json`);
    const exported = await cli('history', 'export', formatThreadName(thread.t), '--out', file);
    expect(exported.code, exported.err).toBe(0);
    files.push([name, file]);
  }
  return files;
}

/**
 * The runbook's deploy check on the live threads, with no worker running: each replays on the gated change; the
 * ungated change diverges at the first model step of every thread that ran one.
 */
async function deployCheck(threads: DrillThreads): Promise<void> {
  for (const [name, file] of await exportAll(threads, 'before')) {
    expect(await replayExport(file, 'gated'), `${name} on the gated change`).toMatchObject({ code: 0, ok: true });
    const ungated = await replayExport(file, 'ungated');
    if (name === 'digest') {
      // No step has run in this thread yet, and the change touches steps only: nothing to diverge from.
      expect(ungated, `${name} on the ungated change`).toMatchObject({ code: 0, ok: true });
    } else {
      expect(ungated, `${name} on the ungated change`).toMatchObject({
        code: 1,
        ok: false,
        executions: [{ divergence: { eventType: 'ActivityTaskScheduled', name: 'runStep' } }],
      });
    }
  }
}

/**
 * After the deploy: the threads' histories replay on the gated change (a restarted upgraded worker takes them) and
 * on a later release that turns the change off behind a second gate (the runbook's roll forward), and not on the old
 * code, which meets a patch marker it never asked for (a rollback would leave every upgraded thread stuck).
 */
async function rollbackCheck(threads: DrillThreads): Promise<void> {
  for (const [name, file] of await exportAll(threads, 'after')) {
    expect(await replayExport(file, 'gated'), `${name} after, on the gated change`).toMatchObject({
      code: 0,
      ok: true,
    });
    expect(await replayExport(file, 'switched-off'), `${name} after, switched off`).toMatchObject({
      code: 0,
      ok: true,
    });
    expect(await replayExport(file, 'current'), `${name} after, on the old code`).toMatchObject({
      code: 1,
      ok: false,
      executions: [
        {
          divergence: {
            eventType: 'MarkerRecorded',
            name: SETTLE_PATCH_ID,
            message: expect.stringContaining(
              `Non-deprecated patch marker encountered for change ${SETTLE_PATCH_ID}, but there is no corresponding change command`,
            ),
          },
        },
      ],
    });
  }
}

/** The thread's history, every execution across continue-as-new, in Temporal's JSON form. */
async function historyOf(t: ThreadTarget): Promise<JsonEvent[]> {
  const chain = await readHistoryChain(h.temporal.workflow, threadKey(t.resourceId, t.threadId));
  return chain.flatMap((execution) => execution.history.events);
}

/** Resolves once the thread has no workflow task and no activity in flight. */
async function untilSettled(t: ThreadTarget): Promise<void> {
  const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const { raw } = await handle.describe();
    if (!raw.pendingWorkflowTask && (raw.pendingActivities?.length ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`Thread ${handle.workflowId} did not settle within ${WAIT_MS} ms.`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function messageText(m: StoredMessage): string {
  if (m.role === 'assistant') return m.content.map((part) => ('text' in part ? part.text : '')).join('');
  if (m.role === 'user') return typeof m.contents === 'string' ? m.contents : JSON.stringify(m.contents);
  return JSON.stringify(m);
}

type Attributes = Record<string, unknown>;
const attributesOf = (e: JsonEvent, key: string) => (e[key] ?? {}) as Attributes;
/** A JSON payload's value (`{ metadata, data }`, data base64-encoded JSON). */
const payloadValue = (payload: unknown): unknown =>
  JSON.parse(Buffer.from((payload as { data: string }).data, 'base64').toString('utf8'));

/** Timer ids started and neither fired nor cancelled. */
function pendingTimers(events: JsonEvent[]): string[] {
  const started = events
    .filter((e) => e.eventType === 'EVENT_TYPE_TIMER_STARTED')
    .map((e) => String(attributesOf(e, 'timerStartedEventAttributes').timerId));
  const ended = new Set(
    events
      .filter((e) => e.eventType === 'EVENT_TYPE_TIMER_FIRED' || e.eventType === 'EVENT_TYPE_TIMER_CANCELED')
      .map((e) =>
        String(
          attributesOf(e, 'timerFiredEventAttributes').timerId ??
            attributesOf(e, 'timerCanceledEventAttributes').timerId,
        ),
      ),
  );
  return started.filter((id) => !ended.has(id));
}

/** The worker (`<pid>@`) whose workflow task took the firing of `timerId`. */
function workerOfTaskAfter(events: JsonEvent[], timerId: string): string | undefined {
  const fired = events.findIndex(
    (e) =>
      e.eventType === 'EVENT_TYPE_TIMER_FIRED' &&
      String(attributesOf(e, 'timerFiredEventAttributes').timerId) === timerId,
  );
  const started = events.slice(fired + 1).find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_STARTED');
  return started && workerOf(started);
}

function workerOf(event: JsonEvent): string {
  const identity = String(attributesOf(event, 'workflowTaskStartedEventAttributes').identity ?? '');
  return identity.replace(/@.*$/, '@');
}

const isSettleTimer = (e: JsonEvent) =>
  e.eventType === 'EVENT_TYPE_TIMER_STARTED' &&
  payloadValue((e.userMetadata as { summary?: unknown } | undefined)?.summary ?? { data: 'bnVsbA==' }) ===
    SETTLE_TIMER_SUMMARY;
const isStep = (e: JsonEvent) =>
  e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' &&
  (attributesOf(e, 'activityTaskScheduledEventAttributes').activityType as { name?: string })?.name === 'runStep';

/** What the drill checks in a thread's history, around the patch marker. */
function historyShape(events: JsonEvent[]) {
  const patchMarkers: string[] = [];
  let markerAt = events.length;
  for (const [i, e] of events.entries()) {
    const marker = attributesOf(e, 'markerRecordedEventAttributes');
    if (e.eventType !== 'EVENT_TYPE_MARKER_RECORDED' || marker.markerName !== 'core_patch') continue;
    // Core's patch marker: `{ id, deprecated }` under the `patch-data` key.
    const data = (marker.details as Record<string, { payloads: unknown[] }>)['patch-data'].payloads[0];
    const id = (payloadValue(data) as { id: string }).id;
    patchMarkers.push(id);
    if (id === SETTLE_PATCH_ID) markerAt = Math.min(markerAt, i);
  }
  const before = events.slice(0, markerAt);
  const after = events.slice(markerAt);
  // After the marker, each step must have its own settle timer since the previous step.
  let timerSinceStep = false;
  let stepsWithoutSettleAfterMarker = 0;
  for (const e of after) {
    if (isSettleTimer(e)) timerSinceStep = true;
    if (isStep(e)) {
      if (!timerSinceStep) stepsWithoutSettleAfterMarker += 1;
      timerSinceStep = false;
    }
  }
  const taskStarts = after.filter((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_STARTED');
  return {
    patchMarkers,
    workflowTaskFailures: events
      .filter((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_FAILED')
      .map((e) => JSON.stringify(e.workflowTaskFailedEventAttributes)),
    stepsBeforeMarker: before.filter(isStep).length,
    stepsAfterMarker: after.filter(isStep).length,
    settleTimersBeforeMarker: before.filter(isSettleTimer).length,
    stepsWithoutSettleAfterMarker,
    workersAfterMarker: [...new Set(taskStarts.map(workerOf))],
  };
}
