/**
 * What `createWorker` asks Temporal for, from the settings: the sticky queue's timeout (THREADLINE_STICKY_QUEUE_TIMEOUT_MS,
 * docs/performance.md: 3 s made a busy worker's tasks time out and move; 10 s, Temporal's default, is the default);
 * and the durations it refuses when passed in code, by the same rules.
 */
import { randomUUID } from 'node:crypto';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MemoryBus } from '../../bus/memory';
import { readSettings } from '../../config/settings';
import { createWorker } from '../../worker/index';
import { adminAgent } from '../support/test-agents';

let connection: NativeConnection;
const bus = new MemoryBus();
beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  await bus.close();
  await connection?.close();
});

/** The sticky queue timeout the SDK compiled for a worker made with `settings`' value, after a run and shutdown. */
async function stickyTimeoutMs(env: Record<string, string>): Promise<number> {
  const settings = readSettings(env, 'worker');
  const w = await createWorker({
    agents: [adminAgent],
    bus,
    connection,
    taskQueue: `worker-options-${randomUUID()}`,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    stickyQueueTimeoutMs: settings.worker.stickyQueueTimeoutMs,
    shutdownGraceTimeMs: 100,
  });
  const running = w.run();
  await w.shutdown();
  await running;
  return w.worker.options.stickyQueueScheduleToStartTimeoutMs;
}

describe('createWorker from the settings', () => {
  it("gives the sticky queue Temporal's default, 10 s, unless THREADLINE_STICKY_QUEUE_TIMEOUT_MS says otherwise", async () => {
    expect(await stickyTimeoutMs({})).toBe(10_000);
    expect(await stickyTimeoutMs({ THREADLINE_STICKY_QUEUE_TIMEOUT_MS: '15000' })).toBe(15_000);
  }, 60_000);

  it('refuses a sticky queue timeout under a second, naming the variable; the gateway does not read it', () => {
    expect(() => readSettings({ THREADLINE_STICKY_QUEUE_TIMEOUT_MS: '500' }, 'worker')).toThrow(
      'THREADLINE_STICKY_QUEUE_TIMEOUT_MS must be at least 1000, got "500".',
    );
    expect(() => readSettings({ THREADLINE_STICKY_QUEUE_TIMEOUT_MS: '3s' }, 'start')).toThrow(
      /THREADLINE_STICKY_QUEUE_TIMEOUT_MS must be a whole number of at least 1000/,
    );
    expect(readSettings({ THREADLINE_STICKY_QUEUE_TIMEOUT_MS: 'x' }, 'gateway').worker.stickyQueueTimeoutMs).toBe(
      10_000,
    );
  });

  it('refuses a bad duration passed to createWorker before it connects to anything, naming the option', async () => {
    // Nothing listens on port 1: a check made after connecting would fail with a connection error instead.
    const make = (options: { stickyQueueTimeoutMs?: number; shutdownGraceTimeMs?: number }) =>
      createWorker({ agents: [adminAgent], bus, address: '127.0.0.1:1', ...options });
    await expect(make({ stickyQueueTimeoutMs: 500 })).rejects.toThrow(
      "createWorker's stickyQueueTimeoutMs must be at least 1000, got 500.",
    );
    await expect(make({ stickyQueueTimeoutMs: 1500.5 })).rejects.toThrow(
      "createWorker's stickyQueueTimeoutMs must be a whole number of at least 1000, got 1500.5.",
    );
    await expect(make({ stickyQueueTimeoutMs: Number.NaN })).rejects.toThrow(/stickyQueueTimeoutMs must be a whole/);
    await expect(make({ shutdownGraceTimeMs: -1 })).rejects.toThrow(
      "createWorker's shutdownGraceTimeMs must be at least 0, got -1.",
    );
  });
});
