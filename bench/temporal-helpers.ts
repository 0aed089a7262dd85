/**
 * What several benchmarks read from Temporal the same way: a thread's whole execution chain, the errors the client
 * throws to Threadline's retry loop, and a bounded-concurrency map.
 */
import * as grpc from '@grpc/grpc-js';
import { isGrpcServiceError, type WorkflowClient, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';

export type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/** Every execution of a workflow id's chain, oldest first (following `continuedExecutionRunId` back from the latest). */
export async function historyChain(
  workflow: WorkflowClient,
  workflowId: string,
): Promise<{ runId: string; events: HistoryEvent[] }[]> {
  const chain: { runId: string; events: HistoryEvent[] }[] = [];
  let runId: string | undefined = (await workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const events: HistoryEvent[] = (await workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    chain.unshift({ runId, events });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return chain;
}

/** `WorkflowExecutionUpdateAccepted`, as the Temporal UI names event types. */
export function eventTypeName(event: HistoryEvent): string {
  return (event.attributes ?? 'unknown').replace(/EventAttributes$/, '').replace(/^./, (c: string) => c.toUpperCase());
}

/** Counts what `executeUpdateWithStart` throws (to Threadline's retry loop, which retries some of it again). */
export function countClientErrors(workflow: WorkflowClient): { counts: Record<string, number>; restore(): void } {
  const counts: Record<string, number> = {};
  const original = workflow.executeUpdateWithStart;
  const wrapped = async function (this: WorkflowClient, ...args: Parameters<WorkflowClient['executeUpdateWithStart']>) {
    try {
      return await original.apply(this, args);
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause;
      const rpc = isGrpcServiceError(cause) ? cause : isGrpcServiceError(err) ? err : undefined;
      const key = rpc
        ? `${grpc.status[rpc.code] ?? rpc.code}: ${rpc.message.replace(/^\d+ [A-Z_]+: /, '')}`.slice(0, 140)
        : `${(err as Error).name}: ${((cause as Error | undefined)?.message ?? (err as Error).message).slice(0, 140)}`;
      counts[key] = (counts[key] ?? 0) + 1;
      throw err;
    }
  };
  workflow.executeUpdateWithStart = wrapped as WorkflowClient['executeUpdateWithStart'];
  return {
    counts,
    restore: () =>
      void delete (workflow as Partial<Pick<WorkflowClient, 'executeUpdateWithStart'>>).executeUpdateWithStart,
  };
}

/** `fn` over `items` with at most `limit` calls in flight; results in item order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i], i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}

/** Epoch milliseconds of a history event (server clock). */
export const eventTime = (event: HistoryEvent): number =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;

/** An input as one execution's history has it: an accepted update or a signal, and when a workflow task handled it. */
export interface InputEvent {
  kind: 'update' | 'signal';
  /** The `id` (or the floor's `marker`) of the input's first argument; undefined when it has none. */
  id: string | undefined;
  at: number;
  /**
   * When the workflow code had run with it: an update is recorded as accepted when the workflow task that ran its
   * handler completes, so at its own time; a signal at the first `WorkflowTaskCompleted` after it (NaN: none yet).
   */
  handledAt: number;
}

/** Every accepted update and every signal of one execution's history, in order. */
export function inputEvents(events: HistoryEvent[]): InputEvent[] {
  const inputs: InputEvent[] = [];
  let unhandled: InputEvent[] = [];
  for (const event of events) {
    const update = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads;
    const signal = event.workflowExecutionSignaledEventAttributes?.input?.payloads;
    if (update || signal) {
      const at = eventTime(event);
      const input: InputEvent = {
        kind: update ? 'update' : 'signal',
        id: idOf((update ?? signal)?.[0]),
        at,
        handledAt: NaN,
      };
      if (update) input.handledAt = at;
      else unhandled.push(input);
      inputs.push(input);
    } else if (event.workflowTaskCompletedEventAttributes) {
      for (const input of unhandled) input.handledAt = eventTime(event);
      unhandled = [];
    }
  }
  return inputs;
}

function idOf(payload: Parameters<typeof defaultPayloadConverter.fromPayload>[0] | undefined): string | undefined {
  if (!payload) return undefined;
  try {
    const value = defaultPayloadConverter.fromPayload<Record<string, unknown> | null>(payload);
    const nested = value?.input as Record<string, unknown> | undefined;
    const id = value?.id ?? value?.marker ?? nested?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}
