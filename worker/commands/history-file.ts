/**
 * A thread's history as one file: every execution of its chain across continue-as-new, oldest first, each in
 * Temporal's JSON form (`historyToJSON`, what the Temporal UI and CLI download), with what identifies it.
 * `threadline history replay` reads it back; it also takes a single Temporal JSON history (`{ "events": [...] }`,
 * like test/replay/histories/*.json).
 */
import type { WorkflowClient } from '@temporalio/client';
import type { JsonEvent } from './divergence';

export const HISTORY_FORMAT = 'threadline-history';

export interface HistoryExport {
  format: typeof HISTORY_FORMAT;
  version: 1;
  exportedAt: string;
  namespace: string;
  workflowId: string;
  resourceId: string;
  threadId: string;
  /** Oldest first: each execution continued as new into the next. */
  executions: ExportedExecution[];
}

export interface ExportedExecution {
  runId: string;
  /** The execution it continued from (none for the first). */
  continuedFromRunId?: string;
  eventCount: number;
  /** Temporal's JSON form of the history: `{ events: [...] }`. */
  history: { events: JsonEvent[] };
}

/** Every execution of `workflowId`'s chain, oldest first: back from the latest along `continuedExecutionRunId`. */
export async function readHistoryChain(workflow: WorkflowClient, workflowId: string): Promise<ExportedExecution[]> {
  const { historyToJSON } = await import('@temporalio/common/lib/proto-utils');
  const chain: ExportedExecution[] = [];
  let runId: string | undefined = (await workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = JSON.parse(historyToJSON(await workflow.getHandle(workflowId, runId).fetchHistory())) as {
      events: JsonEvent[];
    };
    const started = history.events[0]?.workflowExecutionStartedEventAttributes as
      { continuedExecutionRunId?: string } | undefined;
    const continuedFromRunId = started?.continuedExecutionRunId || undefined;
    chain.unshift({
      runId,
      ...(continuedFromRunId ? { continuedFromRunId } : {}),
      eventCount: history.events.length,
      history,
    });
    runId = continuedFromRunId;
  }
  return chain;
}

/** The executions a file holds: a history export, or one Temporal JSON history. Throws naming what is wrong. */
export function executionsOf(document: unknown, file: string): { workflowId: string; executions: ExportedExecution[] } {
  const doc = document as Partial<HistoryExport> & { events?: unknown };
  if (doc?.format === HISTORY_FORMAT) {
    if (!Array.isArray(doc.executions) || doc.executions.some((e) => !Array.isArray(e?.history?.events))) {
      throw new Error(`${file} is a ${HISTORY_FORMAT} file without a valid "executions" list: export it again.`);
    }
    return { workflowId: doc.workflowId ?? file, executions: doc.executions };
  }
  if (Array.isArray(doc?.events)) {
    const events = doc.events as JsonEvent[];
    const started = events[0]?.workflowExecutionStartedEventAttributes as
      { originalExecutionRunId?: string } | undefined;
    const runId = started?.originalExecutionRunId ?? '(unknown run)';
    return { workflowId: file, executions: [{ runId, eventCount: events.length, history: { events } }] };
  }
  throw new Error(
    `${file} is neither a \`threadline history export\` file nor a Temporal JSON history ({ "events": [...] }).`,
  );
}
