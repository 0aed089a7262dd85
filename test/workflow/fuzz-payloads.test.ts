/**
 * issue #14 part 3: the thread workflow under generated payloads sent straight with the Temporal client, as every
 * signal and update of `protocol/definitions.ts` (a definition added there without a generator fails the first test).
 * Payloads come from `test/support/fuzz/payloads.ts`: valid, broken in one field, or arbitrary; one argument, none
 * or two. Whether a payload is valid is decided by the documented zod schema and the thread's `maxInputDepth`, on the
 * value as it reaches the worker.
 * Properties, on the real dev server:
 *
 * - an update with an invalid payload is refused by its validator with a typed `ApplicationFailure` (and every
 *   refused update is absent from the history);
 * - a signal with an invalid payload is dropped with one `Dropped invalid <name> payload` log line;
 * - no history has a WorkflowTaskFailed event;
 * - every thread answers a real message afterwards.
 *
 * `THREADLINE_FUZZ_PAYLOADS` sets the number of payloads (CI: the default below; `npm run fuzz`: 3,000) and
 * `THREADLINE_FUZZ_SEED` the seed; a failure prints both and the shrunk payload. Figures: docs/fuzzing.md.
 */
import { loadavg } from 'node:os';
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { defaultPayloadConverter, type SignalDefinition, type UpdateDefinition } from '@temporalio/common';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHistoryChain } from '../../client/history-chain';
import * as definitions from '../../protocol/definitions';
import { isFailureType } from '../../protocol/failures';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import { sendAndWaitForAnswer, startHarness, within, type Harness } from '../support/harness';
import { argsArbitrary, payloadSpecs } from '../support/fuzz/payloads';

const PAYLOADS = Number(process.env.THREADLINE_FUZZ_PAYLOADS ?? 300);
// Fixed by default, so CI is reproducible; set THREADLINE_FUZZ_SEED to explore others.
const SEED = Number(process.env.THREADLINE_FUZZ_SEED ?? 20261201);
/** Few enough payloads per thread that none continues as new meanwhile (4,000 events, 5,000 signals). */
const THREADS = Math.max(4, Math.ceil(PAYLOADS / 200));
/** Temporal's limit on one payload (the server's `limit.blobSize.error`), in bytes. */
const TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024;

type Definition = SignalDefinition<unknown[]> | UpdateDefinition<unknown, unknown[]>;
const fuzzed = Object.values(definitions as Record<string, unknown>).filter(
  (d): d is Definition =>
    typeof d === 'object' && d !== null && ['signal', 'update'].includes((d as { type?: string }).type ?? ''),
);

/** `Dropped invalid <name> payload` lines, by workflow id and signal name. */
const drops = new Map<string, number>();
const dropKey = (workflowId: string, name: string) => `${workflowId} ${name}`;

function captureLog(entry: LogEntry): void {
  const workflowId = entry.meta?.workflowId as string | undefined;
  const dropped = /^Dropped invalid (\w+) payload$/.exec(entry.message);
  if (workflowId && dropped) {
    const key = dropKey(workflowId, dropped[1]);
    drops.set(key, (drops.get(key) ?? 0) + 1);
  } else if (entry.level === 'ERROR') {
    console.error(`[worker] ${entry.message}`, entry.meta);
  }
}

let h: Harness;
let threads: ThreadTarget[];

beforeAll(async () => {
  // Before the harness, whose own install then finds this one: the workflows' log lines come here.
  Runtime.install({ logger: new DefaultLogger('WARN', captureLog), shutdownSignals: [] });
  h = await startHarness();
  threads = Array.from({ length: THREADS }, () => h.thread());
  for (const t of threads) await sendAndWaitForAnswer(h, t, 'Hello');
}, 300_000);

afterAll(async () => {
  await h?.close();
});

/** The thread's execution status and its last events, for a failure message. */
async function howItStands(t: ThreadTarget): Promise<string> {
  try {
    const chain = await readHistoryChain(h.temporal.workflow, threadKey(t.resourceId, t.threadId));
    const events = chain.at(-1)?.history.events ?? [];
    return JSON.stringify(events.slice(-3)).slice(0, 3_000);
  } catch (err) {
    return `(unreadable: ${(err as Error).message})`;
  }
}

/** The value as the worker decodes it (a lone surrogate, for one, arrives as U+FFFD). */
function onTheWire(value: unknown): unknown {
  return defaultPayloadConverter.fromPayload(defaultPayloadConverter.toPayload(value));
}

/** Temporal's own refusal of an oversized request: nothing reaches the thread. */
function isSizeRefusal(err: unknown): boolean {
  const messages: string[] = [];
  for (let e = err as { message?: string; cause?: unknown } | undefined, i = 0; e && i < 5; i++) {
    messages.push(e.message ?? '');
    e = e.cause as typeof e;
  }
  return /size|exceeds|too large|RESOURCE_EXHAUSTED/i.test(messages.join(' | '));
}

describe('raw Temporal payloads', () => {
  it('has a payload generator for every signal and update of the thread workflow', () => {
    expect(fuzzed.length).toBeGreaterThanOrEqual(10);
    expect(fuzzed.map((d) => d.name).sort()).toEqual(Object.keys(payloadSpecs).sort());
  });

  it(
    `${PAYLOADS} generated payloads: invalid updates refused, invalid signals dropped and logged, 0 task failures`,
    async () => {
      console.log(
        `[fuzz-payloads] seed ${SEED}, ${PAYLOADS} payloads on ${THREADS} threads; load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      );
      const expectedDrops = new Map<string, number>();
      const refusedUpdates = new Set<string>();
      const figures = {
        signals: 0,
        signalsInvalid: 0,
        updates: 0,
        updatesInvalid: 0,
        updatesAccepted: 0,
        refusals: {} as Record<string, number>,
        refusedBySize: 0,
        perDefinition: {} as Record<string, number>,
      };
      let updateCount = 0;
      const arbitrary = fc.record({
        thread: fc.nat(THREADS - 1),
        call: fc
          .constantFrom(...fuzzed)
          .chain((definition) => argsArbitrary(payloadSpecs[definition.name]).map((args) => ({ definition, args }))),
      });
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(arbitrary, async (generated) => {
          try {
            await send(generated);
          } catch (err) {
            const t = threads[generated.thread];
            throw new Error(`${(err as Error).message}; the thread: ${await howItStands(t)}`, { cause: err });
          }
        }),
        { seed: SEED, numRuns: PAYLOADS },
      );
      async function send({
        thread,
        call: { definition, args },
      }: {
        thread: number;
        call: { definition: Definition; args: unknown[] };
      }): Promise<void> {
        const t = threads[thread];
        const workflowId = threadKey(t.resourceId, t.threadId);
        const handle = h.temporal.workflow.getHandle(workflowId);
        const spec = payloadSpecs[definition.name];
        const wire = args.length > 0 ? onTheWire(args[0]) : undefined;
        const parsed = spec.schema.safeParse(wire);
        // The thread bounds the depth of what it stores: a signal's payload as parsed (unknown keys of nested objects
        // dropped), an update's as sent.
        const stored = definition.type === 'signal' ? parsed.data : wire;
        const valid = args.length > 0 && parsed.success && !spec.tooDeep?.(stored);
        // Past Temporal's 2 MB payload limit the server (or the SDK echoing a rejected update) refuses the call in
        // its own way; the history checks below still hold the thread to 0 task failures.
        const overLimit = JSON.stringify(args).length > TEMPORAL_PAYLOAD_LIMIT;
        figures.perDefinition[definition.name] = (figures.perDefinition[definition.name] ?? 0) + 1;
        if (definition.type === 'signal') {
          try {
            await handle.signal(definition, ...args);
          } catch (err) {
            if (!overLimit && !isSizeRefusal(err)) throw err;
            figures.refusedBySize += 1;
            return;
          }
          figures.signals += 1;
          if (!valid) {
            figures.signalsInvalid += 1;
            const key = dropKey(workflowId, definition.name);
            expectedDrops.set(key, (expectedDrops.get(key) ?? 0) + 1);
          }
          return;
        }
        const updateId = `fuzz-${SEED}-${updateCount++}`;
        figures.updates += 1;
        if (!valid) figures.updatesInvalid += 1;
        try {
          const result = await within(
            // By name: the arguments are whatever was generated, none or two included.
            handle.executeUpdate(definition.name, { args: args as [unknown], updateId }),
            `update ${definition.name} (a workflow task failing?)`,
            60_000,
          );
          if (!valid)
            throw new Error(`accepted an invalid ${definition.name} payload, answering ${JSON.stringify(result)}`);
          figures.updatesAccepted += 1;
        } catch (err) {
          if (err instanceof WorkflowUpdateFailedError) {
            const cause = err.cause;
            if (!(cause instanceof ApplicationFailure) || !isFailureType(cause.type)) {
              throw new Error(`${definition.name} refused without a typed failure: ${String(cause)}`);
            }
            refusedUpdates.add(updateId);
            figures.refusals[cause.type] = (figures.refusals[cause.type] ?? 0) + 1;
            return;
          }
          if (overLimit || isSizeRefusal(err)) {
            figures.refusedBySize += 1;
            return;
          }
          throw err;
        }
      }
      const seconds = (performance.now() - started) / 1000;

      // Every invalid signal was dropped with its log line (sinks deliver log lines after each activation).
      const expected = Object.fromEntries(expectedDrops);
      await within(
        (async () => {
          while ([...expectedDrops].some(([key, n]) => (drops.get(key) ?? 0) < n)) {
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        })(),
        'a log line for every dropped signal',
        60_000,
      ).catch(() => undefined);
      const logged = Object.fromEntries([...expectedDrops.keys()].map((key) => [key, drops.get(key) ?? 0]));
      expect(logged).toEqual(expected);

      // No workflow task failed; no refused update is in a history.
      let events = 0;
      let executions = 0;
      for (const t of threads) {
        const chain = await readHistoryChain(h.temporal.workflow, threadKey(t.resourceId, t.threadId));
        executions += chain.length;
        for (const { history } of chain) {
          events += history.events.length;
          const failed = history.events.filter((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_FAILED');
          expect(
            failed.map((e) => e.workflowTaskFailedEventAttributes),
            `${t.threadId}`,
          ).toEqual([]);
          const accepted = history.events
            .map(
              (e) =>
                (
                  e.workflowExecutionUpdateAcceptedEventAttributes as {
                    acceptedRequest?: { meta?: { updateId?: string } };
                  }
                )?.acceptedRequest?.meta?.updateId,
            )
            .filter((u): u is string => u !== undefined && refusedUpdates.has(u));
          expect(accepted, `${t.threadId}`).toEqual([]);
        }
      }

      // Every thread still answers.
      for (const t of threads) await sendAndWaitForAnswer(h, t, 'Still there?');
      // No valid signal was dropped as invalid: every thread's later activations have reported their log lines by now.
      expect(Object.fromEntries([...drops].sort())).toEqual(Object.fromEntries([...expectedDrops].sort()));

      console.log(
        `[fuzz-payloads] ${PAYLOADS} payloads in ${seconds.toFixed(0)} s (seed ${SEED}); ${executions} executions, ` +
          `${events} history events; load after ${loadavg()
            .map((l) => l.toFixed(2))
            .join(' ')}\n` +
          JSON.stringify({ ...figures, dropsLogged: [...drops.values()].reduce((a, b) => a + b, 0) }, null, 1),
      );
    },
    300_000 + PAYLOADS * 300,
  );
});
