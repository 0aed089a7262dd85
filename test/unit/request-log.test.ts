/**
 * The gateway's request log line (gateway/observe.ts) through the real app with a stub client: one JSON line per
 * request with its request id, route template, status and thread, and never the API key or the message.
 */
import { describe, expect, it } from 'vitest';
import type { ThreadlineClient } from '../../client/connect';
import { createGateway } from '../../gateway/app';
import { createLogger, type LogLevel } from '../../observability';
import type { AgentSummary } from '../../protocol/api';

const API_KEY = 'sk-live-0123456789-do-not-log';
const MESSAGE = 'the launch codes are 0000, keep them out of the logs';

const agents: AgentSummary[] = [
  { id: 'tester', name: 'tester', description: '', instructions: '', modelId: 'demo', tools: {} },
];

function gatewayWithLog(level: LogLevel, sendMessage: () => Promise<unknown>) {
  const lines: string[] = [];
  const client = {
    limits: { maxInputBytes: 64 * 1024 },
    agent: () => ({ sendMessage }),
  } as unknown as ThreadlineClient;
  const app = createGateway({
    client,
    agents,
    apiKeys: { [API_KEY]: ['*'] },
    logger: createLogger({ level, destination: { write: (line: string) => void lines.push(line) } }),
  });
  const send = (headers: Record<string, string> = {}) =>
    app.request('/api/agents/tester/send-message', {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ message: MESSAGE, resourceId: 'user-1', threadId: 'thread-1' }),
    });
  return { app, lines, send };
}

const accepted = async () => ({
  accepted: true,
  action: 'wake',
  runId: 'run-1',
  signalId: 'sig-1',
  persisted: Promise.resolve(),
});

describe('the gateway request log', () => {
  it('writes one info line per request with its id, route, status and thread, and no key or message', async () => {
    const { lines, send } = gatewayWithLog('info', accepted);

    const response = await send({ 'X-Request-Id': 'req-42' });

    expect(response.status).toBe(200);
    expect(response.headers.get('X-Request-Id')).toBe('req-42');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({
      level: 'info',
      msg: 'request',
      requestId: 'req-42',
      method: 'POST',
      route: '/api/agents/:agentId/send-message',
      status: 200,
      threadKey: 'thread:user-1:thread-1',
      workflowId: 'thread:user-1:thread-1',
    });
    const all = lines.join('');
    expect(all).not.toContain(API_KEY);
    expect(all).not.toContain(MESSAGE);
    expect(all).not.toContain('launch codes');
  });

  it('logs an unexpected failure with the request id, still without the key or the message', async () => {
    const { lines, send } = gatewayWithLog('info', async () => {
      throw new Error('Temporal is on fire');
    });

    const response = await send();

    expect(response.status).toBe(500);
    const requestId = response.headers.get('X-Request-Id');
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed).toEqual([
      expect.objectContaining({
        level: 'error',
        requestId,
        err: expect.objectContaining({ message: 'Temporal is on fire' }),
      }),
      expect.objectContaining({ level: 'error', msg: 'request', requestId, status: 500 }),
    ]);
    expect(lines.join('')).not.toContain(API_KEY);
    expect(lines.join('')).not.toContain(MESSAGE);
  });

  it('replaces an incoming request id that is not a plain token', async () => {
    const { lines, send } = gatewayWithLog('info', accepted);

    const response = await send({ 'X-Request-Id': 'forged"} {"level":"fatal' });

    const requestId = response.headers.get('X-Request-Id');
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(lines[0])).toMatchObject({ requestId });
    expect(lines.join('')).not.toContain('forged');
  });

  it('names no raw thread ids in the route label, and answers 401 without logging the wrong key', async () => {
    const { app, lines } = gatewayWithLog('info', accepted);

    const response = await app.request('/api/threads/user-1/thread-1', {
      headers: { Authorization: 'Bearer sk-wrong-key-do-not-log' },
    });

    expect(response.status).toBe(401);
    expect(JSON.parse(lines[0])).toMatchObject({ route: '/api/threads/:resourceId/:threadId', status: 401 });
    expect(lines.join('')).not.toContain('sk-wrong-key-do-not-log');
  });
});
