/**
 * What the system holds once the load is over, read the way a client (or an operator) reads it: every thread's
 * stored inputs and inbox through the gateways, its bus stream from Redis, the tool calls from the workers' log.
 */
import { readFile } from 'node:fs/promises';
import type { Redis } from 'ioredis';
import { send, type Gateways } from './http';
import type { StoredInput } from './invariants';

const PAGE = 200;
const READ_DEADLINE_MS = 120_000;
const NOTIFICATION_STATUSES = 'pending,delivered,seen,dismissed,archived,discarded,failed';

/** The thread's stored user-role messages (inputs), oldest first, paging back from the newest. */
export async function readStoredInputs(gateways: Gateways, threadPath: string): Promise<StoredInput[]> {
  const inputs: StoredInput[] = [];
  let before: string | undefined;
  // A page's first message bounds the next page; the page count only stops a runaway loop.
  for (let pages = 0; pages < 1_000; pages++) {
    const query = `limit=${PAGE}${before ? `&before=${encodeURIComponent(before)}` : ''}`;
    const page = await read<{ messages: { id: string; role: string; runId?: string }[]; hasMore: boolean }>(
      gateways,
      `${threadPath}/messages?${query}`,
    );
    const users = page.messages.filter((m) => m.role === 'user');
    inputs.unshift(...users.map((m) => ({ id: m.id, ...(m.runId !== undefined && { runId: m.runId }) })));
    if (!page.hasMore || page.messages.length === 0) return inputs;
    before = page.messages[0].id;
  }
  throw new Error(`${threadPath}/messages: still more pages after 1,000`);
}

/** Every inbox record id (all statuses), then every archived one. */
export async function readNotificationIds(gateways: Gateways, threadPath: string): Promise<string[]> {
  const ids: string[] = [];
  for (const [path, extra] of [
    [`${threadPath}/notifications`, `&status=${NOTIFICATION_STATUSES}`],
    [`${threadPath}/notifications/archive`, ''],
  ] as const) {
    let cursor: string | null = null;
    do {
      const query: string = `limit=${PAGE}${extra}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page: { notifications: { id: string }[]; nextCursor: string | null } = await read(
        gateways,
        `${path}?${query}`,
      );
      ids.push(...page.notifications.map((n) => n.id));
      cursor = page.nextCursor;
    } while (cursor);
  }
  return ids;
}

export interface StreamContents {
  /** Every event id, oldest first. */
  ids: string[];
  /** Runs that ended with `abort` or `error` (their waiting inputs went to a new run). */
  brokenRuns: string[];
}

/** The thread's bus stream (the Redis bus's key layout, prefix `threadline`). */
export async function readStream(redis: Redis, threadKey: string): Promise<StreamContents> {
  const contents: StreamContents = { ids: [], brokenRuns: [] };
  let start = '-';
  for (;;) {
    const entries = await redis.xrange(`threadline:events:${threadKey}`, start, '+', 'COUNT', 1_000);
    for (const [id, fields] of entries) {
      contents.ids.push(id);
      const json = fields[fields.indexOf('e') + 1] ?? '';
      if (json.includes('"type":"abort"') || json.includes('"type":"error"')) {
        const event = JSON.parse(json) as { type: string; runId?: string };
        if ((event.type === 'abort' || event.type === 'error') && event.runId) contents.brokenRuns.push(event.runId);
      }
    }
    if (entries.length < 1_000) return contents;
    start = `(${entries[entries.length - 1][0]}`;
  }
}

/** The newest id of the thread's bus stream, if any. */
export async function readStreamTail(redis: Redis, threadKey: string): Promise<string | undefined> {
  const [newest] = await redis.xrevrange(`threadline:events:${threadKey}`, '+', '-', 'COUNT', 1);
  return newest?.[0];
}

/** How many times each tool call ran, from the JSON lines worker processes append (test/support/test-agents.ts). */
export async function readToolRuns(path: string): Promise<Map<string, number>> {
  const runs = new Map<string, number>();
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    const { toolCallId } = JSON.parse(line) as { toolCallId: string };
    runs.set(toolCallId, (runs.get(toolCallId) ?? 0) + 1);
  }
  return runs;
}

async function read<T>(gateways: Gateways, path: string): Promise<T> {
  const outcome = await send<T>(gateways, path, { method: 'GET', deadline: Date.now() + READ_DEADLINE_MS });
  if (outcome.kind === 'ok') return outcome.body;
  throw new Error(
    `GET ${path}: ${outcome.kind === 'refused' ? `${outcome.status} ${outcome.message}` : outcome.error}`,
  );
}
