import { describe, expect, it } from 'vitest';
import {
  QUERY_TASK_GUARD_ATTEMPTS,
  QUERY_TASK_GUARD_MESSAGE,
  failedByQueryTaskGuard,
  retryGuardedQuery,
} from '../../protocol/query-task-guard';

const guardFailure = () => new Error(`${QUERY_TASK_GUARD_MESSAGE} an activation with history to event 8 …`);

describe('retryGuardedQuery', () => {
  it('asks again while the query-task guard failed the query, and answers', async () => {
    let calls = 0;
    const answer = await retryGuardedQuery(async () => {
      if (++calls < QUERY_TASK_GUARD_ATTEMPTS) throw guardFailure();
      return 'view';
    });
    expect(answer).toBe('view');
    expect(calls).toBe(QUERY_TASK_GUARD_ATTEMPTS);
  });

  it(`gives up after ${QUERY_TASK_GUARD_ATTEMPTS} guard failures with the last one`, async () => {
    let calls = 0;
    const failing = retryGuardedQuery(async () => {
      calls++;
      throw guardFailure();
    });
    await expect(failing).rejects.toSatisfy(failedByQueryTaskGuard);
    expect(calls).toBe(QUERY_TASK_GUARD_ATTEMPTS);
  });

  it('does not ask again after any other failure', async () => {
    let calls = 0;
    const failing = retryGuardedQuery(async () => {
      calls++;
      throw new Error('Workflow not found');
    });
    await expect(failing).rejects.toThrow('Workflow not found');
    expect(calls).toBe(1);
  });
});
