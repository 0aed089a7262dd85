/**
 * Slow clients (slowloris) and connection floods, for every HTTP listener Threadline runs: the gateway's and the
 * worker's (worker/http.ts).
 *
 * Node's HTTP server bounds how long a client may take to send a request: its headers (`headersTimeout`, counted from
 * the moment the connection opens, so a client that connects and sends nothing is cut as well) and the whole request
 * with its body (`requestTimeout`). Either answers 408 and closes the connection. Both end where the request has been
 * received, so a response may stream as long as its client reads (SSE); a client that stops reading a stream is the
 * SSE outbox's business (./sse.ts). Node checks those two bounds every `connectionsCheckingInterval`, 30 s by
 * default, which would stretch a 15 s bound to 45 s: the interval follows the bounds here. An idle keep-alive
 * connection is closed after `keepAliveTimeout`.
 *
 * What Node leaves unbounded by default is the number of open connections: past `maxConnections` a new connection is
 * closed as soon as it is accepted, before a byte is read, and a warning says so (at most one a minute).
 */
import type { Server, ServerOptions } from 'node:http';
import { defaultHttpLimits, type HttpLimits } from '../config/settings';
import type { Logger } from '../observability';

/** Longest gap between two checks of the header and request timeouts. */
const MAX_CHECK_INTERVAL_MS = 1_000;
/** One warning about refused connections per this long, with the count since the last. */
const DROP_WARNING_EVERY_MS = 60_000;

/** `limits` over the defaults; throws when they contradict each other (headers longer than the whole request). */
export function httpLimits(limits: Partial<HttpLimits> = {}): HttpLimits {
  const merged = { ...defaultHttpLimits, ...limits };
  if (merged.headersTimeoutMs > merged.requestTimeoutMs) {
    throw new Error(
      `headersTimeoutMs (${merged.headersTimeoutMs}) must not be more than requestTimeoutMs ` +
        `(${merged.requestTimeoutMs}): the headers are part of the request.`,
    );
  }
  return merged;
}

/** The options `http.createServer` takes for `limits` (the timeouts Node enforces itself). */
export function httpServerOptions(limits: HttpLimits): ServerOptions {
  const shortest = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(10, Math.min(MAX_CHECK_INTERVAL_MS, Math.floor(shortest / 4))),
  };
}

/**
 * Applies `limits` to a server created with `httpServerOptions(limits)`: the timeouts again (Node reads them from the
 * server on every check, and older versions take `keepAliveTimeout` only this way) and the connection cap, with a
 * warning on `log` when it refuses connections.
 */
export function applyHttpLimits(server: Server, limits: HttpLimits, log: Logger): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  let refused = 0;
  let warnedAt = -Infinity;
  server.on('drop', () => {
    refused += 1;
    const now = Date.now();
    if (now - warnedAt < DROP_WARNING_EVERY_MS) return;
    log.warn(
      { refused, maxConnections: limits.maxConnections },
      `closed ${refused} new connection(s) at once: ${limits.maxConnections} were open, the limit ` +
        '(THREADLINE_HTTP_MAX_CONNECTIONS)',
    );
    refused = 0;
    warnedAt = now;
  });
}
