/**
 * An HTTP client in a process of its own, for bench/http.ts: a user's client is never inside the gateway's process, and
 * one that is shares its event loop with the worker's step (a scripted model answers a whole reply in one burst, so
 * the loop is busy until the step is done) and reads the SSE stream only after it. Node's own `http`, no web streams.
 *
 * Reads JSON lines on stdin, one job each, and answers each with one JSON line on stdout (`{ id, error }` when it
 * failed):
 * - a turn, `{ id, gatewayUrl, agentId, resourceId, threadId, message }`: opens the thread's SSE stream, waits for its
 *   headers (the gateway has subscribed), then sends `POST send-message`, stamps just before the POST and the first
 *   `text-delta` frame's arrival, waits for the POST's answer, reads on until `finish`, closes, and answers
 *   `{ id, sentAt, firstDeltaAt }` (on the wall clock, epoch ms, to set beside the bench process's own stamps);
 * - an ingest, `{ id, kind: 'ingest', gatewayUrl, agentId, targets, signals, concurrency }`: sends `signals`
 *   persist-only signals round-robin over `targets` with `POST /api/agents/:agentId/signals`, `concurrency` in flight
 *   over as many kept-alive connections, and answers `{ id, latencies, failed, firstError, durationMs }`.
 */
import { Agent, request, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { ingestSignal, persistOnly, runIngest, type IngestRun } from './ingest-loop';

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

function post(url: string, body: unknown, agent?: Agent): Promise<void> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
        agent,
      },
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

async function turn(t: Turn): Promise<{ sentAt: number; firstDeltaAt: number }> {
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
    });
    const [, firstDeltaAt] = await Promise.all([answered, reading]);
    const epoch = (at: number) => performance.timeOrigin + at;
    return { sentAt: epoch(t0), firstDeltaAt: epoch(firstDeltaAt) };
  } finally {
    clearTimeout(timeout);
    stream.close();
  }
}

interface Ingest {
  id: number;
  kind: 'ingest';
  gatewayUrl: string;
  agentId: string;
  targets: { resourceId: string; threadId: string }[];
  signals: number;
  concurrency: number;
}

async function ingest(job: Ingest): Promise<IngestRun> {
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const url = `${job.gatewayUrl}/api/agents/${encodeURIComponent(job.agentId)}/signals`;
  const target = (i: number) => job.targets[i % job.targets.length];
  try {
    return await runIngest(job.signals, job.concurrency, (i) =>
      post(url, { signal: ingestSignal(i), ...target(i), ...persistOnly }, agent),
    );
  } finally {
    agent.destroy();
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const job = JSON.parse(line) as Turn | Ingest;
  const answer = await ('kind' in job && job.kind === 'ingest' ? ingest(job) : turn(job as Turn)).then(
    (result) => ({ id: job.id, ...result }),
    (err: unknown) => ({ id: job.id, error: (err as Error).message }),
  );
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
