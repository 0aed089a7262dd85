/**
 * Slow clients (slowloris) against a real gateway on loopback, with raw `node:net` sockets and tight bounds: a client
 * that sends its headers a byte at a time, one that sends its body a byte at a time, one that connects and sends
 * nothing, and an idle keep-alive connection are each cut off (408 where HTTP has an answer, else the connection
 * closed). Meanwhile other clients are answered, and SSE streams opened before them all, on both stream routes, still
 * deliver once every slow client is gone. Past the connection cap a new connection is closed at once. The worker's
 * listener has the same bounds. No timing is asserted beyond "cut off within a generous bound".
 */
import { randomUUID } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import type { HttpLimits } from '../../config/settings';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { createLogger } from '../../observability';
import type { ThreadTarget } from '../../protocol/schemas';
import { serveWorkerHttp } from '../../worker/http';
import { startHarness, testAgent, type Harness } from '../support/harness';
import { openSse } from '../support/sse';

/** Tight bounds, so each slow client is cut within seconds (the defaults are 15 s, 60 s and 5 s). */
const limits: Partial<HttpLimits> = { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 500 };
/** How long a slow client may stay connected before the test calls it not cut off: generous, the machine is shared. */
const CUT_WITHIN_MS = 60_000;
/** A byte this often: far more often than any bound, so no bound is reached for lack of activity alone. */
const TRICKLE_MS = 100;

const logLines: { msg: string; refused?: number }[] = [];
const log = createLogger({ level: 'warn', destination: { write: (line: string) => logLines.push(JSON.parse(line)) } });

let h: Harness;
let g: ServedGateway;
beforeAll(async () => {
  h = await startHarness();
  g = await serveGateway({
    client: h.client,
    agents: summarizeAgents([testAgent]),
    port: 0,
    rateLimit: { perSecond: 0, burst: 0 },
    http: limits,
    logger: log,
  });
});
afterAll(async () => {
  await g?.close();
  await h?.close();
});

interface RawClient {
  /** Everything the server sent, as text. */
  received(): string;
  isClosed(): boolean;
  /** Resolves once the server closed the connection; rejects if it is still open after `CUT_WITHIN_MS`. */
  closed: Promise<string>;
  destroy(): void;
}

/**
 * A raw TCP client of `port` that writes `head` once connected, then one character of `trickle` every `TRICKLE_MS`
 * (over and over) until the server closes the connection. With no `trickle` it goes silent after `head`.
 */
function rawClient(port: number, head: string, trickle = ''): RawClient {
  const socket = netConnect({ host: '127.0.0.1', port });
  let text = '';
  let isClosed = false;
  let timer: NodeJS.Timeout | undefined;
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  // A reset (the server closing with bytes unread) is a close like any other here.
  socket.on('error', () => undefined);
  socket.once('connect', () => {
    if (head) socket.write(head);
    if (!trickle) return;
    let i = 0;
    timer = setInterval(() => {
      if (socket.writable) socket.write(trickle[i++ % trickle.length]);
    }, TRICKLE_MS);
  });
  const closed = new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error(`The server kept a slow client for ${CUT_WITHIN_MS} ms. It sent: ${JSON.stringify(text)}`));
    }, CUT_WITHIN_MS);
    socket.once('close', () => {
      isClosed = true;
      clearTimeout(deadline);
      clearInterval(timer);
      resolve(text);
    });
  });
  // Tests that expect an answer rather than a close await the condition, not this promise.
  closed.catch(() => undefined);
  return { received: () => text, isClosed: () => isClosed, closed, destroy: () => socket.destroy() };
}

const thread = (): ThreadTarget => ({ resourceId: `res-${randomUUID()}`, threadId: `slow-${randomUUID()}` });
const eventsUrl = (base: string, t: ThreadTarget) => `${base}/api/threads/${t.resourceId}/${t.threadId}/events`;

async function send(base: string, t: ThreadTarget, message: string): Promise<number> {
  const res = await fetch(`${base}/api/agents/tester/send-message`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...t, message }),
  });
  await res.text();
  return res.status;
}

/** The status line of each HTTP response in `text`. */
const statusLines = (text: string) => text.match(/^HTTP\/1\.1 \d{3} [^\r]*/gm) ?? [];

describe('slow clients', () => {
  it('are cut off, with 408 where HTTP has an answer; others are answered and SSE streams stay open', async () => {
    // Streams opened first: by the time every slow client is cut, they have outlived every bound.
    const streamed = thread();
    const sse = await openSse(eventsUrl(g.url, streamed));
    const mastra = await openSse(`${g.url}/api/agents/tester/threads/subscribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(streamed),
    });
    expect([sse.response.status, mastra.response.status]).toEqual([200, 200]);

    const headers = rawClient(g.port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 'abcdefgh');
    const body = rawClient(
      g.port,
      'POST /api/agents/tester/send-message HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100000\r\n\r\n{"message":"',
      'x',
    );
    const silent = rawClient(g.port, '');
    const keptAlive = rawClient(g.port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');

    // Meanwhile everyone else is served: health, another thread's send and its state.
    const other = thread();
    h.model.enqueue({ text: 'short answer' });
    const otherStream = await openSse(eventsUrl(g.url, other));
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
    expect(await send(g.url, other, 'hello')).toBe(200);
    await otherStream.untilEvent((e) => e.type === 'finish', 60_000);
    otherStream.close();
    expect((await fetch(`${g.url}/api/threads/${other.resourceId}/${other.threadId}`)).status).toBe(200);

    // Headers a byte at a time, and a body a byte at a time: 408, then the connection closes.
    expect(statusLines(await headers.closed)).toEqual(['HTTP/1.1 408 Request Timeout']);
    expect(statusLines(await body.closed)).toEqual(['HTTP/1.1 408 Request Timeout']);
    // Nothing sent at all: the headers' bound counts from the connection's opening.
    expect(statusLines(await silent.closed)).toEqual(['HTTP/1.1 408 Request Timeout']);
    // A keep-alive connection left idle after its answer: closed, with nothing more said.
    expect(statusLines(await keptAlive.closed)).toEqual(['HTTP/1.1 200 OK']);

    // The streams opened before all of them still deliver.
    h.model.enqueue({ text: ['still', ' here'] });
    expect(await send(g.url, streamed, 'are you there?')).toBe(200);
    await Promise.all([
      sse.untilEvent((e) => e.type === 'finish', 60_000),
      mastra.untilEvent((e) => e.type === 'finish', 60_000),
    ]);
    expect([sse.ended, mastra.ended]).toEqual([false, false]);
    sse.close();
    mastra.close();
    // Cutting them off is not the gateway's fault: nothing was logged as an error.
    expect(logLines.filter((line) => line.msg.startsWith('unexpected error'))).toEqual([]);
  }, 180_000);

  it('past the connection cap, a new connection is closed at once, and is served once others close', async () => {
    const capped = await serveGateway({
      client: h.client,
      agents: summarizeAgents([testAgent]),
      port: 0,
      http: { maxConnections: 3, keepAliveTimeoutMs: 120_000 },
      logger: log,
    });
    try {
      const health = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
      // Three keep-alive connections, each answered once and then left open.
      const open = [rawClient(capped.port, health), rawClient(capped.port, health), rawClient(capped.port, health)];
      await waitUntil(() => open.every((c) => statusLines(c.received()).length === 1), 'three answers');

      const refused = rawClient(capped.port, health);
      expect(statusLines(await refused.closed)).toEqual([]);
      expect(logLines.some((line) => line.msg.includes('(THREADLINE_HTTP_MAX_CONNECTIONS)'))).toBe(true);

      // One closes; a new connection gets in (once the server has seen the close: until then, it is refused too).
      open[0].destroy();
      let next = rawClient(capped.port, health);
      await waitUntil(() => {
        if (statusLines(next.received()).length > 0) return true;
        if (next.isClosed()) next = rawClient(capped.port, health);
        return false;
      }, 'a connection served after one closed');
      expect(statusLines(next.received())).toEqual(['HTTP/1.1 200 OK']);
      for (const client of [...open, next]) client.destroy();
    } finally {
      await capped.close();
    }
  }, 180_000);

  it("the worker's listener has the same bounds", async () => {
    const http = await serveWorkerHttp({ worker: h.worker!.worker, port: 0, limits, log });
    try {
      const headers = rawClient(http.port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 'abcdefgh');
      const silent = rawClient(http.port, '');
      expect((await fetch(`${http.url}/health`)).status).toBe(200);
      expect(statusLines(await headers.closed)).toEqual(['HTTP/1.1 408 Request Timeout']);
      expect(statusLines(await silent.closed)).toEqual(['HTTP/1.1 408 Request Timeout']);
    } finally {
      await http.close();
    }
  }, 180_000);
});

/** Resolves once `condition` holds, checked every 100 ms; fails after `CUT_WITHIN_MS`. */
async function waitUntil(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + CUT_WITHIN_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
