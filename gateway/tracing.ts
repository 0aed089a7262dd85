/**
 * The gateway's part of a trace: a server span per request, named for its route template (`POST
 * /api/agents/:agentId/send-message`, never the raw URL), continuing the caller's trace when the request carries a W3C
 * `traceparent`. The span is active while the route runs, so the Temporal client's interceptor puts it into the
 * headers of the update-with-start, and the workflow, the step and the model call join the same trace. It carries the
 * request id of the log line (`threadline.request_id`); headers, query strings and bodies are not recorded. Without tracing (observability/tracing.ts) the middleware only passes on.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, propagation, trace, type TextMapGetter } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import { tracingEnabled } from '../observability/tracing';
import type { GatewayEnv } from './auth';
import { routeTemplate } from './observe';

const headerGetter: TextMapGetter<Headers> = {
  keys: (headers) => {
    const keys: string[] = [];
    headers.forEach((_value, key) => keys.push(key));
    return keys;
  },
  get: (headers, key) => headers.get(key) ?? undefined,
};

export function traceRequests(): MiddlewareHandler<GatewayEnv> {
  if (!tracingEnabled()) return (_c, next) => next();
  const tracer = trace.getTracer('threadline-gateway');
  return async (c, next) => {
    const route = routeTemplate(c);
    const { method } = c.req;
    const parent = propagation.extract(ROOT_CONTEXT, c.req.raw.headers, headerGetter);
    const attributes = { 'http.request.method': method, 'http.route': route, 'url.scheme': 'http' };
    await tracer.startActiveSpan(`${method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
      try {
        // Hono answers a thrown error through onError: `next` resolves with the error's response in `c.res`.
        await next();
        span.setAttributes({ 'http.response.status_code': c.res.status, 'threadline.request_id': c.get('requestId') });
        if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      } finally {
        span.end();
      }
    });
  };
}
