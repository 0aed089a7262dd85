/**
 * A client remembers the threads its sends reached running (`ConnectOptions.knownThreads`, least recently used
 * forgotten first) and sends to them with a plain update or signal, without the start request; a thread that ended
 * since is found missing and started as before. On a real dev server, counting the client's with-start calls.
 */
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect, type ThreadlineClient } from '../../client/connect';
import type { SendTarget } from '../../protocol/api';
import type { ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import { startHarness, within, type Harness } from '../support/harness';

let h: Harness;
const clients: ThreadlineClient[] = [];
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await h?.close();
});

/** A client of its own (its own Temporal `Client` on the harness's connection), its with-start calls counted. */
async function countedClient(knownThreads?: number) {
  const temporal = new Client({ connection: h.temporal.connection });
  const withStart = {
    updates: vi.spyOn(temporal.workflow, 'executeUpdateWithStart'),
    signals: vi.spyOn(temporal.workflow, 'signalWithStart'),
  };
  const client = await connect({ bus: h.bus, client: temporal, taskQueue: h.taskQueue, knownThreads });
  clients.push(client);
  return { client, withStart };
}

const persistBoth = (t: ThreadTarget): SendTarget => ({
  ...t,
  ifActive: { behavior: 'persist' },
  ifIdle: { behavior: 'persist' },
});
const signal = (contents: string) => ({ type: 'notification' as const, contents, attributes: { source: 'test' } });

async function waitForRuns(client: ThreadlineClient, t: ThreadTarget, runs: number): Promise<void> {
  await within(
    (async () => {
      while (((await client.getThread(t))?.runsCompleted ?? 0) < runs) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
    `${runs} completed run(s) on ${t.threadId}`,
  );
}

describe('threads a client knows as running', () => {
  it('get messages by plain update; one terminated since is started again by update-with-start', async () => {
    const { client, withStart } = await countedClient();
    const t = h.thread();
    const agent = client.agent('tester');
    await agent.sendMessage('first', t);
    await waitForRuns(client, t, 1);
    await agent.sendMessage('second', t);
    await waitForRuns(client, t, 2);
    expect(withStart.updates).toHaveBeenCalledTimes(1);

    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    const ended = (await handle.describe()).runId;
    await handle.terminate('the test ends this execution');
    const answer = await agent.sendMessage('third', t);
    expect(answer).toMatchObject({ accepted: true, action: 'wake' });
    expect(withStart.updates).toHaveBeenCalledTimes(2);
    const started = await handle.describe();
    expect(started.runId).not.toBe(ended);
    expect(started.status.name).toBe('RUNNING');
    await waitForRuns(client, t, 1);
  });

  it('get persist-only signals by plain signal; one terminated since is started again by signal-with-start', async () => {
    const { client, withStart } = await countedClient();
    const t = h.thread();
    const agent = client.agent('tester');
    for (const n of [1, 2, 3]) await agent.sendSignal(signal(`signal ${n}`), persistBoth(t));
    expect(withStart.signals).toHaveBeenCalledTimes(1);
    expect((await client.getThread(t))?.messageCount).toBe(3);

    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    await handle.terminate('the test ends this execution');
    await agent.sendSignal(signal('signal 4'), persistBoth(t));
    expect(withStart.signals).toHaveBeenCalledTimes(2);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect((await client.getThread(t))?.messageCount).toBe(1);
  });

  it('are forgotten past `knownThreads`, least recently used first, and not kept at all with 0', async () => {
    const one = await countedClient(1);
    const [a, b] = [h.thread(), h.thread()];
    for (const t of [a, a, b, b, a]) await one.client.agent('tester').sendSignal(signal('s'), persistBoth(t));
    // a (start), a (known), b (start: a forgotten), b (known), a (start again).
    expect(one.withStart.signals).toHaveBeenCalledTimes(3);

    const none = await countedClient(0);
    const c = h.thread();
    for (let n = 0; n < 3; n++) await none.client.agent('tester').sendSignal(signal('s'), persistBoth(c));
    expect(none.withStart.signals).toHaveBeenCalledTimes(3);
    expect((await none.client.getThread(c))?.messageCount).toBe(3);
  });
});
