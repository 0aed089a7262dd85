/**
 * An HTTP client in a process of its own, for bench/http.ts: a user's client is never inside the gateway's process, and
 * one that is shares its event loop with the worker's step (a scripted model answers a whole reply in one burst, so
 * the loop is busy until the step is done) and reads the SSE stream only after it. Node's own `http`, no web streams.
 *
 * Reads JSON lines on stdin, one turn each: `{ id, gatewayUrl, agentId, resourceId, threadId, message }`. For each it
 * opens the thread's SSE stream, waits for its headers (the gateway has subscribed), then sends `POST send-message` and
 * times, from just before the POST, the answer and the first `text-delta` frame; it reads on until `finish`, closes,
 * and writes `{ id, answeredMs, firstDeltaMs }` (or `{ id, error }`) as one JSON line on stdout.
 */
import { request, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

interface Turn {
  id: number;
  gatewayUrl: string;
  agentId: string;
  resourceId: string;
  threadId: string;
  message: string;
}

const TURN_TIMEOUT_MS = 30_000;

function openStream(url: string): Promise<{ response: IncomingMessage; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream' } }, (response) => {
      if (response.statusCode !== 200) {
        req.destroy();
        reject(new Error(`GET ${url} answered ${response.statusCode}`));
        return;
      }
      resolve({ response, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

function post(url: string, body: unknown): Promise<void> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          response.statusCode === 200 ? resolve() : reject(new Error(`POST answered ${response.statusCode}: ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Resolves with the arrival time of the first `text-delta` frame once a `finish` frame arrived. */
function readTurn(response: IncomingMessage): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let firstDelta = NaN;
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      const at = performance.now();
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
          .join('\n');
        if (!data) continue;
        const type = (JSON.parse(data) as { type?: string }).type;
        if (type === 'text-delta' && Number.isNaN(firstDelta)) firstDelta = at;
        if (type === 'error') reject(new Error(`The run failed: ${data}`));
        if (type === 'finish') resolve(firstDelta);
      }
    });
    response.on('end', () => reject(new Error('The SSE stream ended before the run finished.')));
    response.on('error', reject);
  });
}

async function turn(t: Turn): Promise<{ answeredMs: number; firstDeltaMs: number }> {
  const thread = `${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}`;
  const stream = await openStream(`${t.gatewayUrl}/api/threads/${thread}/events`);
  const timeout = setTimeout(() => stream.close(), TURN_TIMEOUT_MS);
  try {
    const reading = readTurn(stream.response);
    const t0 = performance.now();
    const answered = post(`${t.gatewayUrl}/api/agents/${encodeURIComponent(t.agentId)}/send-message`, {
      message: t.message,
      resourceId: t.resourceId,
      threadId: t.threadId,
    }).then(() => performance.now());
    const [answeredAt, firstDeltaAt] = await Promise.all([answered, reading]);
    return { answeredMs: answeredAt - t0, firstDeltaMs: firstDeltaAt - t0 };
  } finally {
    clearTimeout(timeout);
    stream.close();
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const t = JSON.parse(line) as Turn;
  const answer = await turn(t).then(
    (times) => ({ id: t.id, ...times }),
    (err: unknown) => ({ id: t.id, error: (err as Error).message }),
  );
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
