/**
 * The thread workflow's spans, a workflow interceptor module: bundled only when the worker traces (worker/index.ts
 * `tracingWorkflowModules`), so a worker without a collector carries none of OpenTelemetry in its sandbox.
 *
 * It speaks the protocol of Temporal's OpenTelemetry interceptors (the `_tracer-data` header, their sandbox context
 * manager and span sink), so the client's and the activities' interceptors from that package continue its spans. It
 * does not use their workflow interceptors, for two reasons:
 *
 * - **Replay.** Theirs await around every handler and activity, which delays an update's completion and an activity's
 *   result by a few microtasks; the thread's main loop then issues its commands in another order, and a history
 *   recorded without tracing no longer replays with it, or the other way round (measured on the committed histories:
 *   two of four fail). Here every interceptor returns the very promise it got and ends its span beside it, so turning
 *   tracing on or off changes no command.
 * - **Long-lived threads.** Theirs parent every activity to `RunWorkflow`, the span of the whole execution: a thread
 *   that lives for months would put the steps of every later message into the trace of the request that started it.
 *   Here an activity is scheduled under the span of the latest signal or update the thread handled, so a request's
 *   trace holds the steps and tool calls its input led to (a step woken by a timer, a digest or an approval timeout,
 *   stays in the trace of the input before it); continue-as-new carries that span into the next execution.
 *
 * Spans: `RunWorkflow:threadWorkflow` (ends with the execution, exported then), `HandleSignal:<name>`,
 * `HandleUpdate:<name>`, `StartActivity:<type>` (from scheduling to the result). Their ids come from the sandbox's
 * seeded randomness and their times from the workflow clock, the same on replay; only headers carry them, which replay
 * does not compare, and the sink does not export during replay.
 */
// Before OpenTelemetry loads: it needs `performance` and `window`, which the sandbox lacks.
import '@temporalio/interceptors-opentelemetry/lib/workflow/runtime';
import { context, propagation, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { extractContextFromHeaders, TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { ContextManager } from '@temporalio/interceptors-opentelemetry/lib/workflow/context-manager';
import { SpanExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow/span-exporter';
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import {
  ContinueAsNew,
  workflowInfo,
  type ActivityInput,
  type ContinueAsNewInput,
  type DisposeInput,
  type LocalActivityInput,
  type Next,
  type SignalInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowInternalsInterceptor,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

let tracer: Tracer | undefined;
let contextManager: ContextManager | undefined;

/** The sandbox's tracer: spans go to Temporal's span sink, which the worker exports with the process's. */
function sandboxTracer(): Tracer {
  if (!tracer) {
    contextManager = new ContextManager();
    const provider = new BasicTracerProvider();
    provider.addSpanProcessor(new SimpleSpanProcessor(new SpanExporter()));
    provider.register({ contextManager });
    tracer = provider.getTracer('threadline-workflow');
  }
  return tracer;
}

/**
 * Runs `fn` under a new span, child of `parent`, and ends the span when the promise `fn` returns settles, beside it:
 * the caller gets that same promise, not one chained after it.
 */
function inSpan<T>(name: string, parent: Context, fn: (ctx: Context) => Promise<T>, ok?: (err: unknown) => boolean) {
  const span = sandboxTracer().startSpan(name, {}, parent);
  const ctx = trace.setSpan(parent, span);
  let promise: Promise<T>;
  try {
    promise = context.with(ctx, () => fn(ctx));
  } catch (err) {
    end(span, err, ok);
    throw err;
  }
  promise.then(
    () => end(span),
    (err: unknown) => end(span, err, ok),
  );
  return promise;
}

function end(span: Span, err?: unknown, ok?: (err: unknown) => boolean): void {
  if (err === undefined || ok?.(err)) span.setStatus({ code: SpanStatusCode.OK });
  else {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    if (err instanceof Error) span.recordException(err);
  }
  span.end();
}

function withTrace(headers: Headers, ctx: Context): Headers {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload(carrier) };
}

/** The caller's context from the headers, else the one active here. */
function callerContext(headers: Headers): Context {
  return extractContextFromHeaders(headers) ?? context.active();
}

class ThreadTracing
  implements WorkflowInboundCallsInterceptor, WorkflowOutboundCallsInterceptor, WorkflowInternalsInterceptor
{
  /** The span context of the latest signal or update handled: activities are scheduled under it. */
  private latest: Context | undefined;

  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    return inSpan(
      `RunWorkflow:${workflowInfo().workflowType}`,
      callerContext(input.headers),
      () => next(input),
      (err) => err instanceof ContinueAsNew,
    );
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    return inSpan(`HandleSignal:${input.signalName}`, callerContext(input.headers), (ctx) => {
      this.latest = ctx;
      return next(input);
    });
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    return inSpan(`HandleUpdate:${input.name}`, callerContext(input.headers), (ctx) => {
      this.latest = ctx;
      return next(input);
    });
  }

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return inSpan(`StartActivity:${input.activityType}`, this.latest ?? context.active(), (ctx) =>
      next({ ...input, headers: withTrace(input.headers, ctx) }),
    );
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ) {
    return inSpan(`StartActivity:${input.activityType}`, this.latest ?? context.active(), (ctx) =>
      next({ ...input, headers: withTrace(input.headers, ctx) }),
    );
  }

  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) {
    return next({ ...input, headers: withTrace(input.headers, this.latest ?? context.active()) });
  }

  dispose(input: DisposeInput, next: Next<WorkflowInternalsInterceptor, 'dispose'>): void | Promise<void> {
    contextManager?.disable();
    return next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => {
  // Before any header is read: the provider's registration installs the W3C propagator that reads them.
  sandboxTracer();
  const tracing = new ThreadTracing();
  return { inbound: [tracing], outbound: [tracing], internals: [tracing] };
};
