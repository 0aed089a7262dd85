/**
 * The thread workflow's query-task guard (workflows/query-task-guard.ts, issue #14), as readers see it: a query that
 * reached a worker as a query task carrying history events the run had not seen is failed, once, so that the run is
 * evicted and replays from its history. Asked again, the query waits for the thread's pending workflow task and is
 * answered with it. The Temporal client reports the failure as a `QueryNotRegisteredError` with the guard's message.
 */

/** The start of the message of the failure the guard raises. */
export const QUERY_TASK_GUARD_MESSAGE = 'Threadline query-task guard:';

/** Times a read is asked in all while the guard fails it (each failure needs a new racing query task: rare). */
export const QUERY_TASK_GUARD_ATTEMPTS = 3;

/** Runs `query`, and again (up to `QUERY_TASK_GUARD_ATTEMPTS` in all) while the guard fails it. */
export async function retryGuardedQuery<T>(query: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await query();
    } catch (err) {
      if (attempt >= QUERY_TASK_GUARD_ATTEMPTS || !failedByQueryTaskGuard(err)) throw err;
    }
  }
}

export function failedByQueryTaskGuard(err: unknown): boolean {
  return err instanceof Error && err.message.includes(QUERY_TASK_GUARD_MESSAGE);
}
