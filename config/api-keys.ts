/**
 * The gateway's API key map (`THREADLINE_API_KEYS`): each key → the `resourceId`s it may act on.
 */
import { z } from 'zod';
import { describeZodError } from '../protocol/schemas';

/** API key → the `resourceId`s it may act on; `"*"` in the list means every resource. */
export type ApiKeys = Record<string, string[]>;

export const API_KEYS_EXAMPLE = '{"key-a":["tenant-a"],"ops-key":["*"]}';

// A key travels as `Authorization: Bearer <key>`: visible ASCII without spaces, or no client could send it.
const apiKeysSchema = z
  .record(z.string(), z.array(z.string().min(1, 'a resourceId must not be empty')))
  .superRefine((keys, ctx) => {
    const names = Object.keys(keys);
    if (names.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'no keys: unset it for local development mode, or add a key' });
    }
    for (const key of names) {
      if (!/^[\x21-\x7e]+$/.test(key)) {
        ctx.addIssue({ code: 'custom', message: 'a key must be visible ASCII characters without spaces', path: [key] });
      }
    }
  });

/** Parses the API key map (`{"key": ["resourceId", …]}`), failing with what is wrong and an example. */
export function parseApiKeys(json: string, source: string): ApiKeys {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new Error(`${source} is not JSON (${(err as Error).message}). Expected e.g. ${API_KEYS_EXAMPLE}`, {
      cause: err,
    });
  }
  const parsed = apiKeysSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(
      `${source} must map each API key to the resourceIds it may act on, e.g. ${API_KEYS_EXAMPLE}: ${describeZodError(parsed.error)}`,
    );
  }
  return parsed.data;
}
