/**
 * The worker's own small HTTP listener: `GET /health` (200 while the Temporal worker is RUNNING, else 503: for a
 * container health check or an orchestrator's liveness probe) and `GET /metrics` (Prometheus text: Threadline's
 * metrics, Node's and the Temporal SDK's). Nothing else, and no API key: bind it where only the scraper reaches it.
 * It has the gateway's bounds on slow clients and open connections (gateway/http-limits.ts).
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { State } from '@temporalio/worker';
import type { HttpLimits } from '../config/settings';
import { applyHttpLimits, httpLimits, httpServerOptions } from '../gateway/http-limits';
import { logger, renderMetrics, type Logger } from '../observability';

export interface WorkerHttpOptions {
  /** The worker whose state `/health` reports. */
  worker: { getState(): State };
  /** `0`: any free port. */
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Bounds on slow clients and open connections; each one left out has its default (`THREADLINE_HTTP_*`). */
  limits?: Partial<HttpLimits>;
  /** Where a refused connection is reported (default: the process's logger, component `worker`). */
  log?: Logger;
}

export interface WorkerHttp {
  port: number;
  /** `http://<host>:<port>`, without a trailing slash. */
  url: string;
  close(): Promise<void>;
}

export function serveWorkerHttp({
  worker,
  port,
  host = '127.0.0.1',
  limits: partialLimits,
  log = logger('worker'),
}: WorkerHttpOptions): Promise<WorkerHttp> {
  const limits = httpLimits(partialLimits);
  const server = createServer(httpServerOptions(limits), (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, json({ error: 'Use GET.' }));
    if (path === '/health') {
      const state = worker.getState();
      return send(res, state === 'RUNNING' ? 200 : 503, json({ ok: state === 'RUNNING', worker: state }));
    }
    if (path === '/metrics') {
      renderMetrics().then(
        ({ contentType, body }) => send(res, 200, { contentType, body }),
        (err: Error) => send(res, 500, json({ error: `Metrics failed: ${err.message}` })),
      );
      return;
    }
    send(res, 404, json({ error: `No route ${req.method} ${path}. This listener serves /health and /metrics.` }));
  });
  applyHttpLimits(server, limits, log);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const bound = (server.address() as AddressInfo).port;
      const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      resolve({
        port: bound,
        url: `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${bound}`,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

function json(value: unknown): { contentType: string; body: string } {
  return { contentType: 'application/json', body: JSON.stringify(value) };
}

function send(res: ServerResponse, status: number, { contentType, body }: { contentType: string; body: string }): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
  res.end(body);
}
