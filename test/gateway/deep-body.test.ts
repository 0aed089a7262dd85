/**
 * A request body nested deeper than the bound is a 400 before anything reads it (docs/fuzzing.md, finding 9): the HTTP
 * fuzzer's `queue-message` with a message part nested ~11,000 levels was a 500, the answer (which echoes the message
 * as sent) overflowing the stack in `JSON.stringify`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import { startHarness, testAgent, type Harness } from '../support/harness';

let h: Harness;
let g: ServedGateway;

beforeAll(async () => {
  h = await startHarness({ noWorker: true });
  g = await serveGateway({ client: h.client, agents: summarizeAgents([testAgent]), port: 0 });
}, 180_000);

afterAll(async () => {
  await g?.close();
  await h?.close();
});

/** `{"k":[{"k":[…]}]}`, `levels` arrays and objects deep, as JSON text (too deep for this stack's JSON.stringify). */
const deepJson = (levels: number) => '{"k":['.repeat(levels / 2) + '"leaf"' + ']}'.repeat(levels / 2);

describe('a deeply nested body', () => {
  it("is a 400 on queue-message and send-message (the fuzzer's request), and creates no thread", async () => {
    for (const route of ['queue-message', 'send-message']) {
      const thread = h.thread();
      const res = await fetch(`${g.url}/api/agents/${testAgent.id}/${route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `${JSON.stringify(thread).slice(0, -1)},"message":{"contents":[{"0":${deepJson(11_000)}}]}}`,
      });
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body.error.message).toMatch(/deeper than 72 levels/);
      expect(await h.client.getThread(thread)).toBeNull();
    }
  }, 120_000);
});
