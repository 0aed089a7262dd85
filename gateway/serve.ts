/**
 * Serves the gateway over HTTP on loopback or any interface.
 */
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { createGateway, type GatewayOptions } from './app';

export interface ServedGateway {
  port: number;
  url: string;
  close(): Promise<void>;
}

export function serveGateway(options: GatewayOptions & { port: number; hostname?: string }): Promise<ServedGateway> {
  const app = createGateway(options);
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch: app.fetch, port: options.port, hostname: options.hostname ?? '127.0.0.1' },
      (info: AddressInfo) => {
        resolve({
          port: info.port,
          url: `http://127.0.0.1:${info.port}`,
          close: () =>
            new Promise((done) => {
              // Open SSE streams would keep close() waiting forever.
              (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
              server.close(() => done());
            }),
        });
      },
    );
    server.once('error', reject);
  });
}
