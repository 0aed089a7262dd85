/**
 * Serves the gateway over HTTP on loopback or any interface, with the bounds on slow clients and open connections
 * of `./http-limits`.
 */
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { HttpLimits } from '../config/settings';
import { logger } from '../observability';
import { createGateway, type GatewayOptions } from './app';
import { applyHttpLimits, httpLimits, httpServerOptions } from './http-limits';

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
}

export function serveGateway(options: ServeGatewayOptions): Promise<ServedGateway> {
  const limits = httpLimits(options.http);
  const app = createGateway(options);
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
              server.close(() => done());
            }),
        });
      },
    ) as Server;
    applyHttpLimits(server, limits, options.logger ?? logger('gateway'));
    server.once('error', reject);
  });
}
