import http from 'node:http';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { serve } from '@hono/node-server';
import { limitBody } from '../gateway/body-limit';

const onError = () => new Response('too large', { status: 413 });
function app(kind: 'hono' | 'ours') {
  const a = new Hono();
  a.use('*', kind === 'hono' ? bodyLimit({ maxSize: 600_000, onError }) : limitBody({ maxSize: 600_000, onError }));
  a.post('/p', async (c) => c.json({ ok: (await c.req.json()).message.length }));
  a.get('/g', (c) => c.json({ ok: 1 }));
  return a;
}
const servers = await Promise.all(
  (['hono', 'ours'] as const).map(
    (kind) =>
      new Promise<{ kind: string; port: number }>((resolve) => {
        const s = serve({ fetch: app(kind).fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
          resolve({ kind, port: info.port }),
        );
        void s;
      }),
  ),
);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const body = JSON.stringify({ message: 'x'.repeat(200), resourceId: 'r', threadId: 't' });
function request(port: number, method: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: method === 'POST' ? '/p' : '/g',
        agent,
        headers:
          method === 'POST' ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(String(res.statusCode)))));
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? body : undefined);
  });
}
const n = Number(process.argv[2] ?? 2000);
const cpu: Record<string, number[]> = { hono: [], ours: [] };
for (let round = 0; round < 8; round++) {
  const order = round % 2 === 0 ? servers : [...servers].reverse();
  for (const { kind, port } of order) {
    const start = process.cpuUsage();
    for (let i = 0; i < n; i++) await request(port, i % 2 === 0 ? 'POST' : 'GET');
    const used = process.cpuUsage(start);
    if (round > 0) cpu[kind].push((used.user + used.system) / n);
  }
}
for (const [kind, xs] of Object.entries(cpu)) {
  xs.sort((a, b) => a - b);
  process.stdout.write(
    `${kind}: CPU µs per request (half POST 250 B JSON, half GET), median of 7 batches of ${n}: ${xs[3].toFixed(1)} (min ${xs[0].toFixed(1)} max ${xs[6].toFixed(1)})\n`,
  );
}
process.exit(0);
