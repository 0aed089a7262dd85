/**
 * A thread's history as one file: every execution of its chain across continue-as-new, oldest first, each in
 * Temporal's JSON form (`historyToJSON`, what the Temporal UI and CLI download), with what identifies it.
 * `threadline history replay` reads it back; it also takes a single Temporal JSON history (`{ "events": [...] }`,
 * like test/replay/histories/*.json).
 */
import { readHistoryChain, type ChainExecution } from '../../client/history-chain';
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

/** One execution of the chain (client/history-chain.ts reads them). */
export type ExportedExecution = ChainExecution;

export { readHistoryChain };

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
