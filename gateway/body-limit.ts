/**
 * The request body bound, decided from the headers whenever they state the size. Hono's `bodyLimit` first asks the
 * request for its body stream, and on `@hono/node-server` that alone turns the server's lightweight request into a
 * full fetch `Request` (undici, a web stream over the socket), on every request, GETs and SSE streams included. Here,
 * a body framed by `Content-Length` is judged by that header (Node's HTTP parser holds the body to it), a request
 * with neither `Content-Length` nor `Transfer-Encoding` has no body (HTTP/1.1 framing; the gateway serves HTTP/1.1),
 * and only a chunked body is counted while it is read, by Hono's `bodyLimit`. The route then reads the body straight
 * from the socket (`c.req.json()`), without a web stream in between.
 */
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

type BodyLimitOptions = Parameters<typeof bodyLimit>[0];

export function limitBody(
  options: BodyLimitOptions & { onError: NonNullable<BodyLimitOptions['onError']> },
): MiddlewareHandler {
  const chunked = bodyLimit(options);
  return async (c, next) => {
    if (c.req.header('transfer-encoding') !== undefined) return chunked(c, next);
    const length = c.req.header('content-length');
    if (length !== undefined && Number.parseInt(length, 10) > options.maxSize) return options.onError(c);
    await next();
  };
}
