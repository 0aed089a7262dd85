/**
 * Serves the gateway over HTTP on loopback or any interface, with the bounds on slow clients and open connections
 * of `./http-limits`.
 */
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { defaultGatewaySettings, type HttpLimits } from '../config/settings';
import { logger } from '../observability';
import { createGateway, type GatewayOptions } from './app';
import { applyHttpLimits, httpLimits, httpServerOptions } from './http-limits';
import { SharedTokenBuckets } from './shared-limits';

export interface ServedGateway {
  port: number;
  url: string;
  close(): Promise<void>;
}

export interface ServeGatewayOptions extends GatewayOptions {
  port: number;
  hostname?: string;
  /** Bounds on slow clients and open connections; each one left out has its default (`THREADLINE_HTTP_*`). */
  http?: Partial<HttpLimits>;
  /** Redis shared by the gateways (`REDIS_URL`): rate limits are counted there, unless `sharedRateLimit.enabled` is false. */
  redisUrl?: string;
}

/** How long start-up waits for Redis before serving with local rate limits (they switch to Redis once it answers). */
const REDIS_CONNECT_WAIT_MS = 5_000;

export async function serveGateway(options: ServeGatewayOptions): Promise<ServedGateway> {
  const limits = httpLimits(options.http);
  const rateLimit = options.rateLimit ?? defaultGatewaySettings.rateLimit;
  const shared = options.sharedRateLimit ?? defaultGatewaySettings.sharedRateLimit;
  const sharedBuckets =
    options.redisUrl && shared.enabled && rateLimit.perSecond > 0 && !options.rateLimiter
      ? new SharedTokenBuckets(rateLimit, {
          redisUrl: options.redisUrl,
          timeoutMs: shared.timeoutMs,
          log: options.logger ?? logger('gateway'),
        })
      : undefined;
  await sharedBuckets?.connected(REDIS_CONNECT_WAIT_MS);
  const app = createGateway({ ...options, ...(sharedBuckets && { rateLimiter: sharedBuckets }) });
  return new Promise((resolve, reject) => {
    // Without `createServer` in its options, `serve` makes a Node `http.Server`.
    const server = serve(
      {
        fetch: app.fetch,
        port: options.port,
        hostname: options.hostname ?? '127.0.0.1',
        serverOptions: httpServerOptions(limits),
      },
      (info: AddressInfo) => {
        resolve({
          port: info.port,
          url: `http://127.0.0.1:${info.port}`,
          close: () =>
            new Promise((done) => {
              // Open SSE streams would keep close() waiting forever.
              server.closeAllConnections();
              server.close(() => {
                void sharedBuckets?.close();
                done();
              });
            }),
        });
      },
    ) as Server;
    applyHttpLimits(server, limits, options.logger ?? logger('gateway'));
    server.once('error', (err) => {
      void sharedBuckets?.close();
      reject(err);
    });
  });
}
