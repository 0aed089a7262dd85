/**
 * `connect()` refuses bad options before it opens anything (a Temporal connection, a bus): a `ValidationError` that
 * names the option and what it takes.
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { connect } from '../../client/connect';
import { MAX_INPUT_DEPTH_CEILING } from '../../client/inputs';
import { ValidationError } from '../../protocol/errors';

/** Never used: the options are refused first. */
const untouched = new Proxy({} as Client, {
  get() {
    throw new Error('connect() used the Temporal client before checking its options');
  },
});

describe('connect() options', () => {
  it.each([
    [
      { limits: { maxInputDepth: 0 } },
      /Invalid limits\.maxInputDepth: 0\. Use a whole number of levels from 1 to 1000/,
    ],
    [{ limits: { maxInputDepth: MAX_INPUT_DEPTH_CEILING + 1 } }, /Invalid limits\.maxInputDepth: 1001/],
    [{ limits: { maxInputDepth: 2.5 } }, /Invalid limits\.maxInputDepth: 2\.5/],
    [{ threadConfig: { maxInputDepth: 1e9 } }, /Invalid threadConfig\.maxInputDepth: 1000000000/],
    [{ deliveryTimeoutMs: 0 }, /Invalid deliveryTimeoutMs: 0\. Use a whole number of milliseconds, at least 1/],
    [{ knownThreads: -1 }, /Invalid knownThreads: -1\. Use a whole number, at least 0/],
    [{ knownThreads: 2.5 }, /Invalid knownThreads: 2\.5/],
  ])('refuses %j', async (options, message) => {
    const refused = connect({ client: untouched, ...options }).catch((err: unknown) => err);
    await expect(refused).resolves.toBeInstanceOf(ValidationError);
    await expect(refused).resolves.toMatchObject({ message: expect.stringMatching(message) });
  });

  it('refuses them before connecting to Temporal (no client given)', async () => {
    // An address nothing listens on: a check after connecting would fail differently, and slowly.
    const refused = connect({ address: '127.0.0.1:1', limits: { maxInputDepth: -1 } }).catch((err: unknown) => err);
    await expect(refused).resolves.toBeInstanceOf(ValidationError);
  });
});
