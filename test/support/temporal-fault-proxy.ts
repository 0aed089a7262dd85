/**
 * A gRPC (HTTP/2 cleartext) proxy on loopback in front of a real Temporal frontend, which can answer chosen methods
 * with a gRPC error instead of forwarding them: what a client sees when the server's store fails
 * (`2 UNKNOWN: something went wrong, please retry`) or the server does not answer (`14 UNAVAILABLE`). Everything else
 * is forwarded as it is, so the client behind it is a real client of the real server.
 *
 * @example
 * const proxy = await startTemporalFaultProxy(h.address);
 * proxy.fail(/ListWorkflowExecutions$/, { code: 2, message: 'something went wrong, please retry' });
 * proxy.heal();
 */
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface GrpcFault {
  code: number;
  message: string;
}

export interface TemporalFaultProxy {
  /** `host:port` for `Connection.connect({ address })`. */
  address: string;
  /** Answers every method whose path (`/temporal.api.workflowservice.v1.WorkflowService/<Method>`) matches with `fault`. */
  fail(path: RegExp, fault: GrpcFault): void;
  /** Forwards everything again. */
  heal(): void;
  /** Calls answered with a fault so far, by path. */
  failed: Map<string, number>;
  close(): Promise<void>;
}

const HOP_HEADERS = new Set([':authority', ':scheme', ':status', 'connection', 'keep-alive', 'transfer-encoding']);

function forwardable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_HEADERS.has(name)));
}

export async function startTemporalFaultProxy(upstreamAddress: string): Promise<TemporalFaultProxy> {
  let faults: { path: RegExp; fault: GrpcFault }[] = [];
  const failed = new Map<string, number>();
  let upstream: ClientHttp2Session | undefined;
  const session = () => {
    if (!upstream || upstream.closed || upstream.destroyed) {
      upstream = http2.connect(`http://${upstreamAddress}`);
      upstream.on('error', () => undefined); // a stream's error reaches its caller
    }
    return upstream;
  };

  const server = http2.createServer();
  server.on('stream', (down, headers) => {
    const path = String(headers[':path']);
    const fault = faults.find((f) => f.path.test(path))?.fault;
    if (fault) {
      failed.set(path, (failed.get(path) ?? 0) + 1);
      down.resume(); // the request body is not read
      // A trailers-only answer, as a gRPC server sends an error without a message.
      down.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(fault.code),
          // Percent-encoded as gRPC says: '%' and what is not printable ASCII.
          'grpc-message': fault.message.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c)),
        },
        { endStream: true },
      );
      return;
    }
    const up = session().request(forwardable(headers));
    let trailers: OutgoingHttpHeaders = {};
    up.on('response', (responseHeaders, flags) => {
      // END_STREAM on the headers: a trailers-only answer (an error); pass it on as one.
      const ended = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      down.respond(forwardable(responseHeaders), ended ? { endStream: true } : { waitForTrailers: true });
    });
    up.on('trailers', (t) => (trailers = forwardable(t)));
    down.on('wantTrailers', () => down.sendTrailers(trailers));
    up.on('data', (chunk: Buffer) => {
      if (!down.headersSent || down.destroyed) return;
      down.write(chunk);
    });
    up.on('end', () => {
      if (down.headersSent && !down.destroyed && !down.writableEnded) down.end();
    });
    up.on('error', () => down.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    down.on('error', () => up.close(http2.constants.NGHTTP2_CANCEL));
    down.on('close', () => {
      if (!up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
    });
    down.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    address: `127.0.0.1:${port}`,
    fail: (path, fault) => faults.push({ path, fault }),
    heal: () => (faults = []),
    failed,
    close: async () => {
      upstream?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Open sessions keep the server from closing: the client behind it is closed first, or they are dropped.
        setTimeout(resolve, 2_000).unref();
      });
    },
  };
}
