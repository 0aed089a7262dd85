/**
 * Threadline's Prometheus metrics: one registry per process, which the gateway's and the worker's `GET /metrics`
 * render (with Node's process metrics and, where the process runs a Temporal worker, the Temporal SDK's own: see
 * `addMetricsSource`). Labels take bounded values only: agent and tool ids (as deployed), route templates (never raw
 * URLs), statuses and outcomes; never thread or resource ids.
 *
 * @example
 * metrics.steps.inc({ agent: 'assistant', outcome: 'completed' });
 * const { contentType, body } = await renderMetrics();
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Seconds, from a fast local call to a slow model's first token. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export const metrics = {
  httpRequests: new Counter({
    name: 'threadline_http_requests_total',
    help: 'HTTP requests the gateway answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  }),
  httpRequestDuration: new Histogram({
    name: 'threadline_http_request_duration_seconds',
    help: 'Time from a request to its response headers, by method and route template (an SSE stream: until it opens).',
    labelNames: ['method', 'route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  sseSubscribers: new Gauge({
    name: 'threadline_sse_subscribers',
    help: 'SSE streams this gateway has open.',
    registers: [registry],
  }),
  rateLimitFallbacks: new Counter({
    name: 'threadline_rate_limit_fallbacks_total',
    help: "Rate-limit decisions this gateway took with its own bucket because Redis (the gateways' shared buckets) did not answer.",
    registers: [registry],
  }),
  inputs: new Counter({
    name: 'threadline_inputs_total',
    help: 'Inputs answered through the gateway, by kind and the thread\'s action (action="interrupt": interrupts).',
    labelNames: ['kind', 'action'] as const,
    registers: [registry],
  }),
  aborts: new Counter({
    name: 'threadline_aborts_total',
    help: 'Abort requests answered through the gateway, by whether a run was aborted.',
    labelNames: ['aborted'] as const,
    registers: [registry],
  }),
  notifications: new Counter({
    name: 'threadline_notifications_total',
    help: 'Notifications sent through the gateway, by the delivery decision the thread took.',
    labelNames: ['action'] as const,
    registers: [registry],
  }),
  approvalsRequested: new Counter({
    name: 'threadline_tool_approvals_requested_total',
    help: 'Tool calls a step parked for approval, by agent and tool.',
    labelNames: ['agent', 'tool'] as const,
    registers: [registry],
  }),
  approvalsDecided: new Counter({
    name: 'threadline_tool_approvals_decided_total',
    help: 'Approval decisions sent through the gateway, by status (approved, declined).',
    labelNames: ['status'] as const,
    registers: [registry],
  }),
  steps: new Counter({
    name: 'threadline_steps_total',
    help: 'Model steps this worker ran, by agent and outcome (completed, failed, cancelled).',
    labelNames: ['agent', 'outcome'] as const,
    registers: [registry],
  }),
  stepDuration: new Histogram({
    name: 'threadline_step_duration_seconds',
    help: 'Duration of a model step, from its start to its last chunk, by agent.',
    labelNames: ['agent'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  firstToken: new Histogram({
    name: 'threadline_step_first_token_seconds',
    help: "Time from a step's start to the model's first text delta, by agent.",
    labelNames: ['agent'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  toolCalls: new Counter({
    name: 'threadline_tool_calls_total',
    help: 'Tool calls this worker ran, by agent, tool and outcome (ok, error, cancelled).',
    labelNames: ['agent', 'tool', 'outcome'] as const,
    registers: [registry],
  }),
  publishLag: new Histogram({
    name: 'threadline_bus_publish_lag_seconds',
    help: "Time from an event's creation (its `at`) to its publication on the bus, by source (step, tool, workflow).",
    labelNames: ['source'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
};

/** Observes, for each event of a published batch, the time since its `at`. */
export function observePublishLag(source: 'step' | 'tool' | 'workflow', events: readonly { at: number }[]): void {
  const now = Date.now();
  for (const event of events) metrics.publishLag.observe({ source }, Math.max(0, now - event.at) / 1000);
}

/** Metrics text from elsewhere in the process (the Temporal SDK's exporter), appended to the registry's. */
export type MetricsSource = () => Promise<string>;

const sources = new Map<string, MetricsSource>();

/** Adds `source` to what `renderMetrics` returns; returns its removal. */
export function addMetricsSource(name: string, source: MetricsSource): () => void {
  sources.set(name, source);
  return () => {
    if (sources.get(name) === source) sources.delete(name);
  };
}

/**
 * The process's metrics in the Prometheus text format: the registry, then each source. A source that fails is left
 * out with a comment naming it, so one scrape still gets Threadline's own.
 */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  const parts = [await registry.metrics()];
  for (const [name, source] of sources) {
    try {
      parts.push(await source());
    } catch (err) {
      parts.push(`# ${name} metrics unavailable: ${(err as Error).message.replace(/\s+/g, ' ')}\n`);
    }
  }
  return { contentType: registry.contentType, body: parts.map((p) => (p.endsWith('\n') ? p : `${p}\n`)).join('') };
}
