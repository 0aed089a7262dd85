/**
 * Everything a thread test needs, on the real dev server: a fresh task queue, a scripted model server, a bus,
 * a worker hosting the test's agents, and a client. `close()` undoes it all.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, DefaultLogger } from '@temporalio/worker';
import { inject } from 'vitest';
import { defineAgent, type AgentDefinition } from '../../agents/agent';
import { MemoryBus } from '../../bus/memory';
import type { EventBus } from '../../bus/types';
import type { ThreadEvent } from '../../protocol/events';
import { connect, type ThreadlineClient } from '../../client/connect';
import type { ThreadTarget } from '../../protocol/schemas';
import type { ThreadConfigInput } from '../../protocol/thread-config';
import { createWorker, type ThreadlineWorker } from '../../worker/index';
import { configureLogging } from '../../observability';
import { startModelServer, type ModelServer } from './model-server';

let runtimeInstalled = false;
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  // Gateway request lines and the like would drown the test output; warnings and errors still show.
  configureLogging({ level: 'warn' });
  try {
    Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  } catch {
    // Already installed by an earlier file in this process.
  }
}

export interface HarnessOptions {
  agents?: AgentDefinition[];
  threadConfig?: ThreadConfigInput;
  bus?: EventBus;
  /** Start no in-process worker (tests that run workers as child processes). */
  noWorker?: boolean;
}

export interface Harness {
  address: string;
  taskQueue: string;
  model: ModelServer;
  bus: EventBus;
  client: ThreadlineClient;
  temporal: Client;
  worker: ThreadlineWorker | null;
  /** A thread no other test uses. */
  thread(): ThreadTarget;
  startWorker(): Promise<ThreadlineWorker>;
  close(): Promise<void>;
}

/** The agent most tests use: plain instructions, the scripted model. */
export const testAgent = defineAgent({
  id: 'tester',
  instructions: 'You are a test agent.',
  model: 'openai/test-model',
});

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  quietRuntime();
  const address = inject('temporalAddress');
  const taskQueue = `test-${randomUUID()}`;
  const model = await startModelServer();
  const bus = options.bus ?? new MemoryBus();
  const agents = options.agents ?? [testAgent];
  const connection = await Connection.connect({ address });
  const temporal = new Client({ connection });
  const client = await connect({ bus, client: temporal, taskQueue, threadConfig: options.threadConfig });
  const nativeConnections: NativeConnection[] = [];
  const workers: { w: ThreadlineWorker; running: Promise<void> }[] = [];

  const startWorker = async (): Promise<ThreadlineWorker> => {
    const nativeConnection = await NativeConnection.connect({ address });
    nativeConnections.push(nativeConnection);
    const w = await createWorker({
      agents,
      bus,
      connection: nativeConnection,
      taskQueue,
      models: { openaiBaseUrl: model.url, openaiApiKey: 'test' },
      workflowBundle: { codePath: inject('workflowBundlePath') },
      shutdownGraceTimeMs: 1_000,
    });
    workers.push({ w, running: w.run() });
    return w;
  };
  const worker = options.noWorker ? null : await startWorker();

  return {
    address,
    taskQueue,
    model,
    bus,
    client,
    temporal,
    worker,
    thread: () => ({ resourceId: `res-${randomUUID()}`, threadId: `thr-${randomUUID()}` }),
    startWorker,
    async close() {
      for (const { w, running } of workers) {
        await w.shutdown().catch(() => undefined);
        await running.catch(() => undefined);
      }
      for (const c of nativeConnections) await c.close().catch(() => undefined);
      await connection.close();
      await model.close();
      if (!options.bus) await bus.close();
    },
  };
}

/** Fails with `what` if `promise` does not settle within `ms` (a generous bound, never a wait). */
export async function within<T>(promise: Promise<T>, what: string, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Sends `message` to the `tester` agent and waits (bounded) until the thread has completed a run after it. */
export async function sendAndWaitForAnswer(h: Harness, t: ThreadTarget, message: string): Promise<void> {
  const before = (await h.client.getThread(t))?.runsCompleted ?? 0;
  await h.client.agent('tester').sendMessage(message, t);
  await within(
    (async () => {
      while (((await h.client.getThread(t))?.runsCompleted ?? 0) <= before) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })(),
    `an answer on ${t.threadId}`,
    120_000,
  );
}

/** Reads a stream until `done(event, all)` says so; fails after `timeoutMs` with what it saw. */
export async function collectUntil(
  stream: AsyncIterable<ThreadEvent>,
  done: (event: ThreadEvent, all: ThreadEvent[]) => boolean,
  timeoutMs = 30_000,
): Promise<ThreadEvent[]> {
  const seen: ThreadEvent[] = [];
  const iterator = stream[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Timed out after ${timeoutMs} ms; saw: ${seen.map((e) => e.type).join(', ')}`)),
      timeoutMs,
    );
  });
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), timeout]);
      if (next.done) return seen;
      seen.push(next.value);
      if (done(next.value, seen)) return seen;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Stops after the `n`-th `finish` event. */
export const afterFinishes =
  (n: number) =>
  (_event: ThreadEvent, all: ThreadEvent[]): boolean =>
    all.filter((e) => e.type === 'finish').length >= n;

/** The behaviour §5 event order of an idle wake answered in one step with `deltas` text deltas. */
export function wakeEventTypes(deltas: number): string[] {
  return [
    'start',
    'data-user-message',
    'step-start',
    'text-start',
    ...Array.from({ length: deltas }, () => 'text-delta'),
    'text-end',
    'step-finish',
    'finish',
  ];
}

/** Concatenated text deltas per run, in order. */
export function textByRun(events: ThreadEvent[]): Map<string, string> {
  const texts = new Map<string, string>();
  for (const e of events) {
    if (e.type === 'run-retry') texts.set(e.runId!, '');
    if (e.type === 'text-delta')
      texts.set(e.runId!, (texts.get(e.runId!) ?? '') + (e.payload as { text: string }).text);
  }
  return texts;
}

/** The text content of the user-role messages the model received in one request. */
export function userTurns(messages: { role: string; content: unknown }[]): string[] {
  return messages
    .filter((m) => m.role === 'user')
    .map((m) =>
      typeof m.content === 'string'
        ? m.content
        : (m.content as { type: string; text?: string }[]).map((p) => p.text ?? '').join(''),
    );
}
