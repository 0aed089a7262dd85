/**
 * Tracing's switch: without OTEL_EXPORTER_OTLP_ENDPOINT no tracer provider is installed and nothing records a span;
 * with it, one provider, the Temporal client interceptor and the AI SDK's telemetry (without message contents unless
 * THREADLINE_TRACE_MODEL_CONTENTS). The spans themselves are checked across processes in test/worker/traces.test.ts.
 */
import { type ProxyTracerProvider, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { readSettings } from '../../config/settings';
import {
  currentTracing,
  installTracing,
  modelCallTelemetry,
  temporalClientInterceptors,
  tracingEnabled,
} from '../../observability/tracing';

function globalProviderInstalled(): boolean {
  const provider = trace.getTracerProvider() as ProxyTracerProvider;
  return provider.getDelegateTracer('probe') !== undefined;
}

describe('tracing settings', () => {
  it('reads the collector endpoint and the contents switch, off by default', () => {
    expect(readSettings({}, 'worker').tracing).toEqual({ otlpEndpoint: undefined, recordModelContents: false });
    expect(
      readSettings(
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', THREADLINE_TRACE_MODEL_CONTENTS: 'true' },
        'worker',
      ).tracing,
    ).toEqual({ otlpEndpoint: 'http://127.0.0.1:4318', recordModelContents: true });
    expect(() => readSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '127.0.0.1:4318' }, 'gateway')).toThrow(
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL',
    );
  });
});

describe('installTracing', () => {
  it('installs nothing without an endpoint: no provider, no interceptors, no model spans', () => {
    expect(installTracing({ serviceName: 'test', recordModelContents: false })).toBeNull();
    expect(currentTracing()).toBeNull();
    expect(tracingEnabled()).toBe(false);
    expect(globalProviderInstalled()).toBe(false);
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);
    expect(temporalClientInterceptors()).toEqual({});
    expect(modelCallTelemetry('assistant').isEnabled).toBe(false);
  });

  it('installs one provider with an endpoint, records no message contents by default, and uninstalls', async () => {
    // Nothing listens there: no span is ended, so nothing is sent.
    const tracing = installTracing({
      serviceName: 'test',
      otlpEndpoint: 'http://127.0.0.1:9',
      recordModelContents: false,
    });
    expect(tracing).not.toBeNull();
    expect(
      installTracing({ serviceName: 'again', otlpEndpoint: 'http://127.0.0.1:9', recordModelContents: true }),
    ).toBe(tracing);
    expect(tracing!.resource.attributes['service.name']).toBe('test');
    expect(globalProviderInstalled()).toBe(true);
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(true);
    expect(temporalClientInterceptors().workflow).toHaveLength(1);
    expect(modelCallTelemetry('assistant')).toEqual({
      isEnabled: true,
      recordInputs: false,
      recordOutputs: false,
      functionId: 'assistant',
    });

    await tracing!.shutdown();
    expect(tracingEnabled()).toBe(false);
    expect(globalProviderInstalled()).toBe(false);
  });
});
