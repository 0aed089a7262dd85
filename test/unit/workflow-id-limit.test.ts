/**
 * A Temporal server on SQL storage accepts shorter workflow ids than the ingress check counts (PostgreSQL: 255 bytes,
 * `limit.maxIDLength`). Its refusal reaches the caller as a 400 naming the ids, not a 500 (issue 14, found from
 * outside #3, on the production server).
 */
import { describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { MemoryBus } from '../../bus/memory';
import { connect } from '../../client/connect';
import { ValidationError } from '../../protocol/errors';

/** A Temporal client whose server refuses every start as PostgreSQL's does a 300-byte workflow id. */
function refusingClient(): Client {
  const refusal = Object.assign(new Error('WorkflowId length exceeds limit.'), { code: 3 });
  const wrapped = Object.assign(new Error('Failed to execute update-with-start'), { cause: refusal });
  return {
    workflow: { executeUpdateWithStart: () => Promise.reject(wrapped) },
    options: { namespace: 'default' },
  } as unknown as Client;
}

describe('a workflow id the server finds too long', () => {
  it('is a ValidationError (400) that says which ids and which limit, not a server error', async () => {
    const bus = new MemoryBus();
    const client = await connect({ client: refusingClient(), bus, taskQueue: 'q' });
    try {
      const sent = client.agent('tester').sendMessage('hi', { resourceId: 'r'.repeat(150), threadId: 't'.repeat(150) });
      await expect(sent).rejects.toBeInstanceOf(ValidationError);
      await expect(sent).rejects.toMatchObject({ status: 400, message: expect.stringContaining('threadId') });
      await expect(sent).rejects.toMatchObject({ message: expect.stringContaining('limit.maxIDLength') });
    } finally {
      await client.close?.();
      await bus.close();
    }
  });
});
