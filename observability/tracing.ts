/**
 * OpenTelemetry traces: one trace from a gateway request through the Temporal client call, the thread workflow and the
 * step activity to the model call. Off unless a collector is configured (`OTEL_EXPORTER_OTLP_ENDPOINT`): then each
 * process installs one tracer provider that exports over OTLP/HTTP (protobuf) in batches.
 *
 * Who makes which span: the gateway's middleware the request's server span (`gateway/tracing.ts`); Temporal's
 * OpenTelemetry interceptors the client, workflow and activity spans (client/connect.ts, worker/index.ts,
 * workflows/tracing.ts); the AI SDK the model call's (`modelCallTelemetry`, in the step activity). Without a provider
 * none of them is installed and nothing is recorded.
 *
 * @example
 * const tracing = installTracing({ serviceName: 'threadline-worker', ...settings.tracing });
 * process.once('beforeExit', () => void tracing?.shutdown());
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource, detectResourcesSync, envDetectorSync } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import type { ClientInterceptors } from '@temporalio/client';
import { logger } from './logger';

/** The settings (config/settings.ts reads them: OTEL_EXPORTER_OTLP_ENDPOINT, THREADLINE_TRACE_MODEL_CONTENTS). */
export interface TracingSettings {
  /** Base URL of the OTLP/HTTP collector; undefined: no tracing. */
  otlpEndpoint?: string;
  /** Prompts and answers in the model call's spans. */
  recordModelContents: boolean;
}

export interface TracingOptions extends TracingSettings {
  /** `service.name` unless `OTEL_SERVICE_NAME` (or `OTEL_RESOURCE_ATTRIBUTES`) names one. */
  serviceName: string;
}

export interface Tracing {
  /** Where spans go: the workflow spans, which Temporal hands over through a sink, are fed to it too. */
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}

let installed: (Tracing & { recordModelContents: boolean }) | null = null;

/**
 * Installs the process's tracer provider (global: context in AsyncLocalStorage, W3C trace context and baggage
 * propagation) when `otlpEndpoint` is set; otherwise installs nothing and returns null. Call it once, in the entry
 * point, before the Temporal client and worker are made: they add their interceptors only when tracing is on.
 */
export function installTracing(options: TracingOptions): Tracing | null {
  if (!options.otlpEndpoint) return null;
  if (installed) return installed;
  const resource = new Resource({ 'service.name': options.serviceName }).merge(
    detectResourcesSync({ detectors: [envDetectorSync] }),
  );
  const exporter = new OTLPTraceExporter({ url: new URL('v1/traces', withSlash(options.otlpEndpoint)).href });
  const spanProcessor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  const serviceName = provider.resource.attributes['service.name'];
  logger('tracing').info({ otlpEndpoint: options.otlpEndpoint, serviceName }, 'exporting traces');
  installed = {
    spanProcessor,
    resource: provider.resource as Resource,
    recordModelContents: options.recordModelContents,
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
      installed = null;
    },
  };
  return installed;
}

/** The installed tracing, or null when the process does not trace. */
export function currentTracing(): Tracing | null {
  return installed;
}

/** Whether this process records spans (`installTracing` installed a provider). */
export function tracingEnabled(): boolean {
  return installed !== null;
}

/**
 * Interceptors for a Temporal `Client` that carry the caller's active span into the workflow: a client span per
 * start, update-with-start, signal and query, its context in the call's headers. None when tracing is off, so calls
 * carry no empty trace header.
 */
export function temporalClientInterceptors(): ClientInterceptors {
  return installed ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : {};
}

/**
 * The AI SDK's `experimental_telemetry` for a model call: its spans (`ai.streamText`, `ai.streamText.doStream`) as
 * children of the step activity's, with the model, token usage and finish reason. Prompts and answers stay out unless
 * `THREADLINE_TRACE_MODEL_CONTENTS` is on.
 */
export function modelCallTelemetry(agentId: string): {
  isEnabled: boolean;
  recordInputs: boolean;
  recordOutputs: boolean;
  functionId: string;
} {
  const contents = installed?.recordModelContents ?? false;
  return { isEnabled: tracingEnabled(), recordInputs: contents, recordOutputs: contents, functionId: agentId };
}

function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}
