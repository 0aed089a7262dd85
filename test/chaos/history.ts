/**
 * Every thread's whole history (all executions of its continue-as-new chain): its workflow task failures by cause,
 * and a replay of each execution against the current workflow bundle, as a deploy would replay live threads.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import proto, { type temporal } from '@temporalio/proto';
import { Worker, type InjectedSinks } from '@temporalio/worker';
import type { ThreadlineSinks } from '../../workflows/sinks';

type History = temporal.api.history.v1.IHistory;
// CommonJS: the namespace is on the default export.
const { EventType, WorkflowTaskFailedCause } = proto.temporal.api.enums.v1;

export interface ThreadHistories {
  thread: string;
  workflowId: string;
  executions: { runId: string; history: History }[];
}

export interface TaskFailure {
  thread: string;
  runId: string;
  eventId: string;
  cause: string;
  message: string;
}

/** The thread's executions, oldest first, walking back along `continuedExecutionRunId`. */
export async function readThreadHistories(
  client: Client,
  thread: string,
  workflowId: string,
): Promise<ThreadHistories> {
  const executions: ThreadHistories['executions'] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    executions.unshift({ runId, history });
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return { thread, workflowId, executions };
}

/** Every WorkflowTaskFailed event, with its cause and message. */
export function taskFailures(histories: ThreadHistories): TaskFailure[] {
  const failures: TaskFailure[] = [];
  for (const { runId, history } of histories.executions) {
    for (const event of history.events ?? []) {
      if (event.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) continue;
      const attributes = event.workflowTaskFailedEventAttributes;
      failures.push({
        thread: histories.thread,
        runId,
        eventId: String(event.eventId),
        cause: WorkflowTaskFailedCause[attributes?.cause ?? 0] ?? String(attributes?.cause),
        message: (attributes?.failure?.message ?? '').slice(0, 300),
      });
    }
  }
  return failures;
}

export interface ReplayFailure {
  workflowId: string;
  runId: string;
  error: string;
}

export interface HistoryFindings {
  executions: number;
  /** Executions of each thread's continue-as-new chain, by thread. */
  executionsPerThread: Map<string, number>;
  events: number;
  taskFailures: TaskFailure[];
  /** WorkflowTaskTimedOut events: a worker killed holding the task, or too slow to complete it (no failure). */
  taskTimeouts: number;
  replayFailures: ReplayFailure[];
  /** Threads whose history could not be read. */
  unreadable: string[];
}

/**
 * Reads each thread's histories (one thread at a time, so memory stays bounded), collects its workflow task failures
 * and replays every execution against the bundle (nondeterminism or any other replay error is a failure).
 */
export async function checkHistories(
  client: Client,
  bundlePath: string,
  threads: readonly { thread: string; workflowId: string }[],
  /** A directory where the history of each execution that failed to replay is written (JSON). */
  keepFailedIn?: string,
): Promise<HistoryFindings> {
  const findings: HistoryFindings = {
    executions: 0,
    executionsPerThread: new Map(),
    events: 0,
    taskFailures: [],
    taskTimeouts: 0,
    replayFailures: [],
    unreadable: [],
  };
  async function* histories() {
    for (const { thread, workflowId } of threads) {
      let read: ThreadHistories;
      try {
        read = await readThreadHistories(client, thread, workflowId);
      } catch (err) {
        findings.unreadable.push(`${thread}: ${String(err).slice(0, 200)}`);
        continue;
      }
      findings.taskFailures.push(...taskFailures(read));
      findings.executionsPerThread.set(thread, read.executions.length);
      for (const { history } of read.executions) {
        findings.executions++;
        findings.events += history.events?.length ?? 0;
        findings.taskTimeouts += (history.events ?? []).filter(
          (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
        ).length;
        yield { workflowId, history };
      }
    }
  }
  // The workers' sinks, doing nothing: a sink is never called during replay, but it must be registered.
  const sinks: InjectedSinks<ThreadlineSinks> = { threadlineSteps: { cancelRequested: { fn: () => undefined } } };
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: bundlePath }, sinks },
    histories(),
  )) {
    if (result.error) {
      // Keep the history, to look at once the topology (and its database) is gone: `temporal workflow show` format.
      let kept = '';
      if (keepFailedIn) {
        const history = await client.workflow.getHandle(result.workflowId, result.runId).fetchHistory();
        kept = join(keepFailedIn, `${result.workflowId.replace(/[^\w.-]/g, '_')}-${result.runId}.json`);
        await mkdir(keepFailedIn, { recursive: true });
        await writeFile(kept, historyToJSON(history));
      }
      findings.replayFailures.push({
        workflowId: result.workflowId,
        runId: result.runId,
        error: `${String(result.error).slice(0, 500)}${kept ? ` (history kept in ${kept})` : ''}`,
      });
    }
  }
  return findings;
}
