/**
 * The HTTP gateway: JSON routes and SSE streams over the Threadline client. Any gateway serves any thread.
 *
 * Every request passes, in order: CORS (preflights answered here, without a key), caller identification on `/api/*`
 * (401), the caller's rate limit (429), the body size limit (413), then its route from `./routes`, which validates
 * the input (400) and authorizes the thread it names (403) before the handler runs (`./route`). Around all of it,
 * `./observe` gives the request its id and writes its log line and metrics. `/` and `/console` serve the web console
 * (`./console`), which needs no key itself and calls `/api` with the user's.
 */
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { HTTPException } from 'hono/http-exception';
import { agentCatalog, type AgentSource } from './agents';
import type { ThreadlineClient } from '../client/connect';
import { temporalUnavailable } from '../client/unavailable';
import { PayloadTooLargeError, isRetryLaterError, isThreadlineError, isUnauthorizedError } from '../protocol/errors';
import { defaultGatewaySettings, type GatewaySettings } from '../config/settings';
import { ApiKeyRing, identifyCaller, type GatewayEnv } from './auth';
import { limitBody } from './body-limit';
import { SubscriberLimit, TokenBuckets, type RateLimiter } from './limits';
import { API_PREFIX, registerRoute } from './route';
import { gatewayRoutes } from './routes';
import { observeRequests, REQUEST_ID_HEADER } from './observe';
import { DEFAULT_TEMPORAL_UI_URL, mountConsole } from './console';
import { traceRequests } from './tracing';
import { logger, type Logger } from '../observability';

export interface GatewayOptions extends Partial<Omit<GatewaySettings, 'apiKeysSource'>> {
  client: ThreadlineClient;
  /** Where request lines and errors go (default: the process's logger, component `gateway`). */
  logger?: Logger;
  /** The agents served: summaries (`summarizeAgents`), or the catalog of those workers announce on the bus. */
  agents: AgentSource;
  /** SSE comment sent after this much silence, so proxies keep the stream open (default 25 s). */
  keepAliveMs?: number;
  /**
   * Where callers' requests are counted (`rateLimit`): default this process's own buckets. `serveGateway` passes the
   * buckets shared in Redis (`./shared-limits`) when it has a Redis URL.
   */
  rateLimiter?: RateLimiter;
}

/** Request headers a browser may send cross-origin: the key, JSON bodies, stream resume, idempotency, request id. */
const CORS_ALLOW_HEADERS = ['Authorization', 'Content-Type', 'Last-Event-ID', 'Idempotency-Key', REQUEST_ID_HEADER];

export function createGateway(options: GatewayOptions): Hono<GatewayEnv> {
  const { client } = options;
  const corsOrigins = options.corsOrigins ?? defaultGatewaySettings.corsOrigins;
  const keys = new ApiKeyRing(options.apiKeys);
  const buckets = options.rateLimiter ?? new TokenBuckets(options.rateLimit ?? defaultGatewaySettings.rateLimit);
  const app = new Hono<GatewayEnv>();
  const log = options.logger ?? logger('gateway');

  app.onError((err, c) => errorResponse(err, c, log));
  app.notFound((c) =>
    c.json({ error: { type: 'NotFoundError', message: `No route ${c.req.method} ${c.req.path}` } }, 404),
  );

  app.use('*', traceRequests());
  app.use('*', observeRequests(log));

  if (corsOrigins.length > 0) {
    app.use(
      '*',
      cors({
        origin: corsOrigins.includes('*') ? '*' : corsOrigins,
        allowMethods: ['GET', 'POST'],
        allowHeaders: CORS_ALLOW_HEADERS,
        // Safelisted response headers need no listing; a browser client needs Retry-After to back off.
        exposeHeaders: ['Retry-After', REQUEST_ID_HEADER],
        maxAge: 600,
      }),
    );
  }

  const guarded = `${API_PREFIX}*`;
  app.use(guarded, identifyCaller(keys, buckets));
  app.use(guarded, async (c, next) => {
    if (c.req.method !== 'OPTIONS') await buckets.take(c.get('caller').id);
    await next();
  });

  // Refuse oversized bodies while reading them, before they are buffered and parsed. The input limit itself
  // (checked on the parsed input) is lower; this bound leaves room for the target fields around it.
  const maxBodyBytes = client.limits.maxInputBytes * 2 + 64 * 1024;
  app.use(
    guarded,
    limitBody({
      maxSize: maxBodyBytes,
      onError: (c) => {
        // The rest of the body is never read, and the server gives up on the connection soon after: say so, or a
        // client would send its next request on a connection that is about to close.
        c.header('Connection', 'close');
        throw new PayloadTooLargeError(`The request body is over ${maxBodyBytes} bytes. Send less.`);
      },
    }),
  );

  const agents = agentCatalog(options.agents);
  const routes = gatewayRoutes({
    client,
    agents,
    log,
    keepAliveMs: options.keepAliveMs ?? 25_000,
    maxSubscriberBufferBytes: options.maxSubscriberBufferBytes ?? defaultGatewaySettings.maxSubscriberBufferBytes,
    subscriberStallMs: options.subscriberStallMs ?? defaultGatewaySettings.subscriberStallMs,
    subscribers: new SubscriberLimit(options.maxSubscribersPerThread ?? defaultGatewaySettings.maxSubscribersPerThread),
  });
  for (const route of routes) registerRoute(app, route, agents);
  mountConsole(app, () => ({
    authRequired: !keys.open,
    temporalUiUrl: options.temporalUiUrl ?? DEFAULT_TEMPORAL_UI_URL,
    namespace: client.temporal.options.namespace,
  }));
  return app;
}

/**
 * Maps errors to HTTP in one place: Threadline errors by their status, with the headers their status calls for; a
 * transient Temporal failure is a 503 with Retry-After (`../client/unavailable`), logged with Temporal's details.
 */
function errorResponse(cause: Error, c: Context<GatewayEnv>, log: Logger): Response {
  const unavailable = temporalUnavailable(cause);
  if (unavailable) log.warn({ err: cause, requestId: c.get('requestId') }, 'Temporal failed a request: answered 503');
  const err = unavailable ?? cause;
  if (isThreadlineError(err)) {
    if (isUnauthorizedError(err)) c.header('WWW-Authenticate', 'Bearer realm="threadline"');
    if (isRetryLaterError(err) && err.retryAfterSeconds !== undefined) {
      c.header('Retry-After', String(err.retryAfterSeconds));
    }
    return c.json({ error: { type: err.name, message: err.message } }, err.status as 400);
  }
  if (err instanceof HTTPException) return err.getResponse();
  log.error({ err, requestId: c.get('requestId') }, 'unexpected error answering a request');
  return c.json({ error: { type: 'InternalError', message: 'Internal error. See the gateway log.' } }, 500);
}
