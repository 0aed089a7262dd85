/**
 * Subscribers that stop reading (behaviour §5, §8), over real HTTP on loopback against the real dev server: raw TCP
 * subscribers of one thread read their response head and then never read again, while the thread streams a long
 * answer. Each may cost the gateway a bounded buffer and is then dropped (connection closed, place freed, a log
 * line); meanwhile `/health`, another thread's JSON and SSE reads and a subscriber that reads are all answered; a
 * dropped client resumes with Last-Event-ID; the gateway's heap returns near its baseline once they are gone.
 */
import { randomUUID } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { createLogger } from '../../observability';
import type { ThreadTarget } from '../../protocol/schemas';
import { startHarness, testAgent, type Harness } from '../support/harness';
import { openSse, sseEvents } from '../support/sse';

/** Stalled subscribers on the streaming thread. */
const STALLED = 20;
/** Small, so the stalled subscribers reach it well before the answer ends (the default is 1 MiB). */
const BUFFER_BYTES = 64 * 1024;
/**
 * Text chunks of the answer, one event each. The kernel takes megabytes into a loopback socket's buffers before a
 * client that does not read holds the gateway up at all, so the stream must be much longer than that: the thread's
 * ids are long (its key, in every event, is over 900 bytes), making about 9 MB per subscriber from a short text.
 */
const CHUNKS = 8_000;

/** A thread whose percent-encoded key is just under Temporal's limit ('~' takes 3 bytes encoded). */
const longThread = (): ThreadTarget => ({
  resourceId: `res-${randomUUID()}${'~'.repeat(80)}`,
  threadId: `hot-${randomUUID()}${'~'.repeat(198)}`,
});

const logLines: { msg: string; reason?: string; resumeFrom?: string | null }[] = [];
let h: Harness;
let g: ServedGateway;
beforeAll(async () => {
  h = await startHarness();
  g = await serveGateway({
    client: h.client,
    agents: summarizeAgents([testAgent]),
    port: 0,
    rateLimit: { perSecond: 0, burst: 0 },
    maxSubscriberBufferBytes: BUFFER_BYTES,
    // The stalled ones and one reader: a reconnect is only admitted if the dropped ones gave their places back.
    maxSubscribersPerThread: STALLED + 1,
    logger: createLogger({ level: 'warn', destination: { write: (line: string) => logLines.push(JSON.parse(line)) } }),
  });
});
afterAll(async () => {
  await g?.close();
  await h?.close();
});

const eventsPath = (t: ThreadTarget) =>
  `/api/threads/${encodeURIComponent(t.resourceId)}/${encodeURIComponent(t.threadId)}/events`;

/** An SSE request on a raw socket that reads the response head and then stops reading (`pause()`). */
function stalledSubscriber(t: ThreadTarget, port = g.port): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: '127.0.0.1', port });
    socket.once('error', reject);
    socket.once('connect', () => socket.write(`GET ${eventsPath(t)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    socket.once('data', (head) => {
      socket.pause();
      if (!head.toString('latin1').startsWith('HTTP/1.1 200')) reject(new Error(`Not a stream: ${head}`));
      else resolve(socket);
    });
  });
}

/**
 * Reads what the server sent a stalled socket until the server closes it: the id of the last whole event in it.
 * Rejects after `timeoutMs` (the gateway kept the connection).
 */
function lastEventIdBeforeClose(socket: Socket, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let tail = '';
    let lastId = 0;
    const timer = setTimeout(() => reject(new Error('The gateway never closed a stalled subscriber.')), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => {
      tail += text;
      for (const match of tail.matchAll(/\nid: (\d+)\n\n/g)) lastId = Number(match[1]);
      tail = tail.slice(-2_048);
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(lastId);
    });
    socket.resume();
  });
}

/** The heap in use after a full collection. */
function heapAfterGc(): number {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

async function post(path: string, body: unknown): Promise<number> {
  const res = await fetch(`${g.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

describe('subscribers that stop reading', () => {
  it('cost a bounded buffer and are dropped; nobody else waits for them; a dropped client resumes', async () => {
    const baseline = heapAfterGc();
    const hot = longThread();
    const stalled = await Promise.all(Array.from({ length: STALLED }, () => stalledSubscriber(hot)));

    const answer = Array.from({ length: CHUNKS }, (_, i) => String(i % 10)).join('');
    // Paced like a model (a chunk a millisecond): a client that reads keeps up, only the stalled ones fall behind.
    h.model.enqueue({ text: answer.split(''), chunkDelayMs: 1 });
    const reader = await openSse(`${g.url}${eventsPath(hot)}`);
    expect(await post('/api/agents/tester/send-message', { ...hot, message: 'tell me everything' })).toBe(200);
    await reader.waitFor(() => reader.messages.length > 100, 60_000, 'the answer to stream');

    // Meanwhile the gateway answers everyone else: health, another tenant's send, stream and state.
    expect((await fetch(`${g.url}/health`)).status).toBe(200);
    const other: ThreadTarget = { resourceId: `res-${randomUUID()}`, threadId: `other-${randomUUID()}` };
    h.model.enqueue({ text: 'short answer' });
    const otherStream = await openSse(`${g.url}${eventsPath(other)}`);
    expect(await post('/api/agents/tester/send-message', { ...other, message: 'hi' })).toBe(200);
    await otherStream.untilEvent((e) => e.type === 'finish', 60_000);
    otherStream.close();
    expect((await fetch(`${g.url}/api/threads/${other.resourceId}/${other.threadId}`)).status).toBe(200);

    // The reader gets the whole answer.
    await reader.untilEvent((e) => e.type === 'finish', 120_000);
    const events = sseEvents(reader.messages);
    const finishId = Number(events.at(-1)!.id);
    const text = events.flatMap((e) => (e.type === 'text-delta' ? [(e.payload as { text: string }).text] : []));
    expect(text.join('')).toBe(answer);
    reader.close();
    reader.messages.splice(0);

    // Every stalled subscriber was dropped: the server closed its connection partway through the stream.
    const lastIds = await Promise.all(stalled.map((socket) => lastEventIdBeforeClose(socket, 120_000)));
    for (const lastId of lastIds) expect(lastId).toBeLessThan(finishId);
    const drops = logLines.filter((line) => line.msg.startsWith('dropped an SSE subscriber'));
    expect(drops).toHaveLength(STALLED);
    expect(drops.every((line) => line.reason === 'buffer-full')).toBe(true);
    expect(drops[0].msg).toContain(`limit ${BUFFER_BYTES}, maxSubscriberBufferBytes`);

    // A dropped client resumes where it was cut off, in a place the dropped ones gave back, and catches up (its
    // backlog is sent at its pace, however far behind it is).
    const resumeFrom = Math.min(...lastIds);
    const resumed = await openSse(`${g.url}${eventsPath(hot)}`, { headers: { 'Last-Event-ID': String(resumeFrom) } });
    expect(resumed.response.status).toBe(200);
    await resumed.untilEvent((e) => e.type === 'finish', 120_000);
    const rest = sseEvents(resumed.messages);
    expect(Number(rest[0].id)).toBe(resumeFrom + 1);
    expect(Number(rest.at(-1)!.id)).toBe(finishId);
    resumed.close();
    resumed.messages.splice(0);

    // What the stalled subscribers held is released: the heap is back near where it started (the bus still keeps
    // the thread's 8,000 events, a few megabytes).
    expect(heapAfterGc() - baseline).toBeLessThan(48 * 1024 * 1024);
  }, 300_000);

  it('an event larger than the bound still reaches a subscriber that reads: it is not a slow client', async () => {
    const tight = await serveGateway({
      client: h.client,
      agents: summarizeAgents([testAgent]),
      port: 0,
      maxSubscriberBufferBytes: 1024,
      logger: createLogger({
        level: 'warn',
        destination: { write: (line: string) => logLines.push(JSON.parse(line)) },
      }),
    });
    try {
      const t: ThreadTarget = { resourceId: `res-${randomUUID()}`, threadId: `big-${randomUUID()}` };
      const reader = await openSse(`${tight.url}${eventsPath(t)}`);
      const message = 'x'.repeat(8 * 1024);
      const sent = await fetch(`${tight.url}/api/agents/tester/send-message`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...t, message }),
      });
      expect(sent.status).toBe(200);
      const events = await reader.untilEvent((e) => e.type === 'finish', 60_000);
      expect(events.find((e) => e.type === 'data-user-message')).toBeDefined();
      reader.close();
    } finally {
      await tight.close();
    }
  });

  it('are dropped when they take nothing for subscriberStallMs, however much room their buffer has left', async () => {
    const patient = await serveGateway({
      client: h.client,
      agents: summarizeAgents([testAgent]),
      port: 0,
      maxSubscriberBufferBytes: 256 * 1024 * 1024,
      subscriberStallMs: 1_000,
      logger: createLogger({
        level: 'warn',
        destination: { write: (line: string) => logLines.push(JSON.parse(line)) },
      }),
    });
    try {
      const hot = longThread();
      const stalled = await Promise.all(Array.from({ length: 3 }, () => stalledSubscriber(hot, patient.port)));
      h.model.enqueue({ text: Array.from({ length: CHUNKS }, () => 'x'), chunkDelayMs: 1 });
      const reader = await openSse(`${patient.url}${eventsPath(hot)}`);
      const sent = await fetch(`${patient.url}/api/agents/tester/send-message`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...hot, message: 'go' }),
      });
      expect(sent.status).toBe(200);
      await reader.untilEvent((e) => e.type === 'finish', 120_000);
      reader.close();
      await Promise.all(stalled.map((socket) => lastEventIdBeforeClose(socket, 120_000)));
      const stalls = logLines.filter((line) => line.reason === 'stalled');
      expect(stalls).toHaveLength(3);
      expect(stalls[0].msg).toContain('it took nothing for 1000 ms (subscriberStallMs)');
    } finally {
      await patient.close();
    }
  }, 300_000);
});
