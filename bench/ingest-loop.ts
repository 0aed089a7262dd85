/**
 * The ingest loop the HTTP bench runs on both sides of a process boundary (bench/http.ts in the bench's process,
 * bench/http-client-process.ts outside it): `signals` sends, at most `concurrency` in flight, each timed from its call
 * to its answer. A failed send is counted, not retried.
 */
import { performance } from 'node:perf_hooks';

export interface IngestRun {
  latencies: number[];
  failed: number;
  /** The first failure's message ('' when none failed). */
  firstError: string;
  durationMs: number;
}

/** The `i`-th signal an ingest sends: a notification-typed signal, stored only (the senders pass `persist`). */
export function ingestSignal(i: number): {
  type: 'notification';
  contents: string;
  attributes: Record<string, string>;
} {
  return { type: 'notification', contents: `http ingest ${i}`, attributes: { source: 'bench' } };
}

export const persistOnly = { ifIdle: { behavior: 'persist' }, ifActive: { behavior: 'persist' } } as const;

export async function runIngest(
  signals: number,
  concurrency: number,
  send: (i: number) => Promise<void>,
): Promise<IngestRun> {
  const latencies: number[] = [];
  let failed = 0;
  let firstError = '';
  let next = 0;
  const t0 = performance.now();
  const sender = async () => {
    for (let i = next++; i < signals; i = next++) {
      const start = performance.now();
      try {
        await send(i);
        latencies.push(performance.now() - start);
      } catch (err) {
        failed += 1;
        firstError ||= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, sender));
  return { latencies, failed, firstError, durationMs: performance.now() - t0 };
}
