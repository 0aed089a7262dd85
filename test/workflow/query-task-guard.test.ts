/**
 * The query-task guard (workflows/query-task-guard.ts, issue #14) on the real dev server. The race: a workflow waits on
 * an activity with no workflow task pending and no worker polling; a query comes (the server dispatches it straight to
 * matching, a legacy query task); the activity completes (a workflow task is scheduled) and an update arrives; then a
 * worker starts and polls. When it gets the query task first, sdk-core applies the activity's result from the query
 * task's history and the update comes in a later activation: live, the step's result is handled before the update;
 * replay puts both in one activation, update first (TMPRL1100). The guard fails that activation (the query fails, the
 * run is evicted), the real task replays the run, and the history replays. Which task the worker gets first is the
 * server's choice, so the race is run until the query task came first (the guard's failure says so).
 */
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { Context, CompleteAsyncError } from '@temporalio/activity';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { failedByQueryTaskGuard, retryGuardedQuery } from '../../protocol/query-task-guard';
import { raceInputUpdate, raceStateQuery } from '../support/query-race-workflow';
import { untilUpdateAdmitted } from '../support/updates';

const workflowsPath = fileURLToPath(new URL('../support/query-race-workflow.ts', import.meta.url));
/** Runs of the race before giving up on the server handing the query task out first (each run: about 1 in 2). */
const MAX_RACES = 10;

let temporal: Client;
let connection: NativeConnection;
let workflowBundle: { code: string };
beforeAll(async () => {
  const address = inject('temporalAddress');
  temporal = new Client({ connection: await Connection.connect({ address }) });
  connection = await NativeConnection.connect({ address });
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  workflowBundle = await bundleWorkflowCode({ workflowsPath, logger: quiet });
}, 180_000);
afterAll(async () => {
  await connection?.close();
  await temporal?.connection.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Ends a race's run; a run that did not split has already completed by itself, which is fine. */
async function terminateIfRunning(handle: WorkflowHandle, reason: string): Promise<void> {
  await handle.terminate(reason).catch((err: unknown) => {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  });
}

interface RaceOutcome {
  /**
   * The server turned the update back as not processed by the worker (`UnprocessedUpdate`): seen in some runs, with
   * and without the guard (docs/operations.md); the run is then terminated and not replayed.
   */
  unprocessedUpdate?: boolean;
  /** The query failed with the guard's message: the worker got the query task first. */
  guardFired: boolean;
  /** What the live workflow saw when the step resolved. */
  live: string[];
  replayError: unknown;
  queryAnswer: number;
}

async function race(guard: boolean): Promise<RaceOutcome> {
  const taskQueue = `query-race-${randomUUID()}`;
  let token: Uint8Array | undefined;
  let steps = 0;
  const activityWorker = await Worker.create({
    connection,
    taskQueue,
    activities: {
      async step() {
        if (steps++ > 0) return 'second';
        token = Context.current().info.taskToken;
        throw new CompleteAsyncError();
      },
      async publish() {},
    },
  });
  const live: string[] = [];
  const workflowWorker = () =>
    Worker.create({
      connection,
      taskQueue,
      workflowBundle,
      stickyQueueScheduleToStartTimeout: '1 second',
      sinks: {
        race: { activation: { fn: (_info, jobs: string[]) => void live.push(...jobs), callDuringReplay: false } },
      },
    });
  const activities = activityWorker.run();
  const first = await workflowWorker();
  const firstRun = first.run();
  let second: { worker: Worker; run: Promise<void> } | undefined;
  try {
    const handle = await temporal.workflow.start('queryRaceWorkflow', {
      taskQueue,
      workflowId: `query-race-${randomUUID()}`,
      args: [guard],
    });
    while (!token) await sleep(100);
    // No worker polls workflow tasks now, and none is pending: the query goes to matching as a query task.
    first.shutdown();
    await firstRun;
    const query = handle.query(raceStateQuery).then(
      (answer) => ({ answer, error: undefined }),
      (error: unknown) => ({ answer: undefined, error }),
    );
    await sleep(2_500);
    await temporal.activity.complete(token, 'first');
    const updateId = randomUUID();
    const update = handle.executeUpdate(raceInputUpdate, { args: ['hello'], updateId });
    // The update waits in the pending workflow task before any worker polls: the server has admitted it.
    await untilUpdateAdmitted(temporal, handle.workflowId, updateId, {
      identity: 'query-task-guard.test',
      everyMs: 200,
    });
    const worker = await workflowWorker();
    second = { worker, run: worker.run() };
    const updated = await update.then(
      () => undefined,
      (err: unknown) => err,
    );
    if (updated !== undefined) {
      if ((updated as { cause?: { type?: string } }).cause?.type !== 'UnprocessedUpdate') throw updated;
      await terminateIfRunning(handle, 'the race turned the update back');
      await query;
      return { unprocessedUpdate: true, guardFired: false, live, replayError: undefined, queryAnswer: 0 };
    }
    if (!guard) {
      // The update's answer is recorded: the history shows whether the task split. What the thread does after a
      // split (a replay of it fails) is not this test's business.
      await query;
      const history = await handle.fetchHistory();
      await terminateIfRunning(handle, 'the race is over');
      const replayError = await Worker.runReplayHistory({ workflowBundle }, history, handle.workflowId).then(
        () => undefined,
        (err: unknown) => err,
      );
      return { guardFired: false, live, replayError, queryAnswer: -1 };
    }
    const queried = await query;
    const guardFired = queried.error !== undefined && failedByQueryTaskGuard(queried.error);
    if (queried.error !== undefined && !guardFired) throw queried.error;
    // Asked again, as the client does, the read is answered.
    const queryAnswer = await retryGuardedQuery(() => handle.query(raceStateQuery));
    await handle.result();
    const history = await handle.fetchHistory();
    const replayError = await Worker.runReplayHistory({ workflowBundle }, history, handle.workflowId).then(
      () => undefined,
      (err: unknown) => err,
    );
    return { guardFired, live, replayError, queryAnswer };
  } finally {
    second?.worker.shutdown();
    activityWorker.shutdown();
    await Promise.allSettled([second?.run, activities]);
  }
}

describe('query-task guard', () => {
  it('a query task that carries an activity result does not split it from the update that follows', async () => {
    const outcomes: RaceOutcome[] = [];
    while (outcomes.length < MAX_RACES && !outcomes.some((o) => o.guardFired)) outcomes.push(await race(true));
    // Every run replays, whichever task the worker got first.
    for (const outcome of outcomes.filter((o) => !o.unprocessedUpdate)) {
      expect(outcome.replayError).toBeUndefined();
      expect(outcome.queryAnswer).toBe(1);
    }
    const fired = outcomes.find((o) => o.guardFired);
    expect(fired, `the query task never came first in ${MAX_RACES} runs`).toBeDefined();
    // The guard's failure evicted the run: the real task saw the update and the step's result together.
    expect(fired!.live).toEqual(['step resolved', 'after the update']);
  }, 900_000);

  it('without the guard the same race records a history that does not replay (sdk-core 1.24)', async () => {
    const outcomes: RaceOutcome[] = [];
    while (outcomes.length < MAX_RACES && !outcomes.some((o) => o.replayError)) outcomes.push(await race(false));
    const split = outcomes.find((o) => o.replayError);
    // If this starts to fail, sdk-core no longer splits: the guard and docs/operations.md's known issue can go.
    expect(split, `the query task never came first in ${MAX_RACES} runs`).toBeDefined();
    expect(split!.live).toEqual(['step resolved', 'before the update']);
    expect(String(split!.replayError)).toMatch(/TMPRL1100/);
  }, 900_000);
});
