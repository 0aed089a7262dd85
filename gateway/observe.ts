/**
 * What the gateway records of each request: a request id (the caller's `X-Request-Id` when it is a plain token, else
 * a new UUID; echoed in the response), one log line, and the HTTP metrics. Labels and the log line name the route
 * template (`/api/threads/:resourceId/:threadId`), never the raw URL, so the series stay bounded; the line carries
 * the thread's key once the route has authorized one. Headers and bodies are never logged.
 */
import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { threadKey } from '../protocol/ids';
import { metrics, type Logger } from '../observability';
import type { GatewayEnv } from './auth';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** An incoming id is kept only when it is a short plain token: it goes into log lines and a response header. */
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** Routes polled by machines (probes, scrapers): logged at debug, not info. */
const QUIET_ROUTES = new Set(['/health', '/ready', '/metrics']);

export const UNMATCHED_ROUTE = '(unmatched)';

export function observeRequests(log: Logger): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const started = performance.now();
    const incoming = c.req.header(REQUEST_ID_HEADER);
    const requestId = incoming && ACCEPTED_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId', requestId);
    try {
      await next();
    } finally {
      // Set here, after the handler and onError: every answer carries it, errors included.
      c.res.headers.set(REQUEST_ID_HEADER, requestId);
      const seconds = (performance.now() - started) / 1000;
      const route = routeTemplate(c);
      const { method } = c.req;
      const status = c.res.status;
      metrics.httpRequests.inc({ method, route, status: String(status) });
      metrics.httpRequestDuration.observe({ method, route }, seconds);
      const target = c.get('target');
      const key = target ? threadKey(target.resourceId, target.threadId) : undefined;
      const line = {
        requestId,
        method,
        route,
        ...(route === UNMATCHED_ROUTE && { path: c.req.path.slice(0, 200) }),
        status,
        durationMs: Math.round(seconds * 1000 * 10) / 10,
        ...(c.get('caller') && { caller: c.get('caller').id }),
        // A thread's key is its workflow id.
        ...(key && { threadKey: key, workflowId: key }),
      };
      if (QUIET_ROUTES.has(route)) log.debug(line, 'request');
      else if (status >= 500) log.error(line, 'request');
      else log.info(line, 'request');
    }
  };
}

/** The route template that answered (a registered route, not middleware), or `(unmatched)`. */
export function routeTemplate(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i].method !== 'ALL') return routes[i].path;
  }
  return UNMATCHED_ROUTE;
}
