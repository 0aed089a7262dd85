/**
 * The thread workflow's tracing, a workflow interceptor module: bundled only when the worker traces (worker/index.ts
 * `tracingWorkflowModules`), so a worker without a collector carries none of OpenTelemetry in its sandbox.
 *
 * Temporal's OpenTelemetry interceptors make the workflow's spans (`RunWorkflow`, `HandleUpdate`, `HandleSignal`,
 * `StartActivity`, …), continue the caller's trace from the headers, and pass the current span to activities in
 * theirs. Left alone they would parent every activity to `RunWorkflow`, the span of the whole execution: a thread that
 * lives for months would put the steps of every later message into the trace of the request that started it. Here an
 * activity is scheduled under the span of the latest signal or update the thread handled instead, so a request's
 * trace holds the steps and tool calls its input led to. A step woken by a timer (a digest, an approval timeout) stays
 * in the trace of the input before it.
 *
 * Deterministic: the span contexts come from the inputs' headers and the sandbox's seeded ids, the same on replay, and
 * only change headers, which replay does not compare.
 */
import { context, type Context } from '@opentelemetry/api';
import { interceptors as openTelemetryInterceptors } from '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors';
import type {
  ActivityInput,
  LocalActivityInput,
  Next,
  SignalInput,
  UpdateInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** Remembers the span context of the latest input the thread handled, and schedules activities under it. */
class LatestInputTrace implements WorkflowInboundCallsInterceptor, WorkflowOutboundCallsInterceptor {
  private latest: Context | undefined;

  // Inbound, inside Temporal's interceptor: the active context is the handler's span.
  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    this.latest = context.active();
    return next(input);
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    this.latest = context.active();
    return next(input);
  }

  // Outbound, around Temporal's interceptor: its `StartActivity` span starts under the latest input's span.
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return this.latest ? context.with(this.latest, () => next(input)) : next(input);
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ) {
    return this.latest ? context.with(this.latest, () => next(input)) : next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => {
  const temporal = openTelemetryInterceptors();
  const latest = new LatestInputTrace();
  // The first interceptor of a list is the outermost.
  return {
    inbound: [...(temporal.inbound ?? []), latest],
    outbound: [latest, ...(temporal.outbound ?? [])],
    internals: temporal.internals,
  };
};
