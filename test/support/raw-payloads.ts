/** Helpers for tests that send payloads straight with the Temporal client, past the clients' and gateway's checks. */
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { expect } from 'vitest';

/** A value `levels` deep (the value itself is level 1): objects `{ k: … }` around a string. */
export function nested(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = { k: value };
  return value;
}

/** The typed failure a thread's update validator refused `promise`'s update with (fails the test if it was taken). */
export async function updateRefusal(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => expect.fail('the update was accepted'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (err as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}
