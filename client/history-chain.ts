/**
 * A thread's history as Temporal keeps it: one execution per continue-as-new, chained by `continuedExecutionRunId`.
 * Read whole, oldest first, in Temporal's JSON form (`historyToJSON`, what the Temporal UI and CLI download). The
 * history export, the replay check and time travel all read it here.
 */
import type { WorkflowClient } from '@temporalio/client';

/** One history event in Temporal's JSON form. */
export interface HistoryEventJson {
  eventId: string;
  eventType: string;
  [attributes: string]: unknown;
}

export interface ChainExecution {
  runId: string;
  /** The execution it continued from (none for the first). */
  continuedFromRunId?: string;
  eventCount: number;
  /** Temporal's JSON form of the history: `{ events: [...] }`. */
  history: { events: HistoryEventJson[] };
}

/** One execution's whole history, in Temporal's JSON form. */
export async function readExecutionHistory(
  workflow: WorkflowClient,
  workflowId: string,
  runId: string,
): Promise<{ events: HistoryEventJson[] }> {
  const { historyToJSON } = await import('@temporalio/common/lib/proto-utils');
  return JSON.parse(historyToJSON(await workflow.getHandle(workflowId, runId).fetchHistory())) as {
    events: HistoryEventJson[];
  };
}

/** Every execution of `workflowId`'s chain, oldest first: back from the latest along `continuedExecutionRunId`. */
export async function readHistoryChain(workflow: WorkflowClient, workflowId: string): Promise<ChainExecution[]> {
  const chain: ChainExecution[] = [];
  let runId: string | undefined = (await workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await readExecutionHistory(workflow, workflowId, runId);
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

/**
 * The value of a payload in Temporal's JSON form (`{ metadata: { encoding }, data }`, base64), when it is plain JSON;
 * `undefined` for anything else (binary, encrypted by a codec, absent).
 */
export function jsonPayloadValue(payload: unknown): unknown {
  const p = payload as { metadata?: { encoding?: string }; data?: string } | undefined;
  if (!p?.metadata?.encoding || atob(p.metadata.encoding) !== 'json/plain') return undefined;
  if (p.data === undefined) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(p.data), (c) => c.charCodeAt(0))));
  } catch {
    return undefined;
  }
}
