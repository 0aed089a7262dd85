/**
 * API keys and tenancy (behaviour §6 Auth). Each key is bound to the `resourceId`s it may act on (`"*"` = all). Without
 * keys the gateway runs in local development mode: every caller may act on every thread.
 *
 * Requests are identified once, by middleware on `/api/*` (401 for a missing or unknown key); every route that names
 * a thread is authorized by `registerRoute` (`./route`) through `authorizeTarget` (403), never by the route itself.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { ForbiddenError, UnauthorizedError } from '../protocol/errors';
import type { ThreadTarget } from '../protocol/schemas';
import type { ApiKeys } from '../config/settings';
import type { RateLimiter } from './limits';

/** Who is calling: the key's identity (or the client's address in development mode) and what it may touch. */
export interface Caller {
  /** Names the caller in rate limits and logs; never the key itself. */
  id: string;
  /** Every resource (`"*"` keys and development mode), or exactly these `resourceId`s. */
  resources: '*' | ReadonlySet<string>;
}

export interface GatewayEnv {
  Variables: {
    caller: Caller;
    /** This request's id (`X-Request-Id`), for log lines (`./observe`). */
    requestId: string;
    /** The thread the request names, once authorized (`./route`), for its log line. */
    target?: ThreadTarget;
  };
}

interface StoredKey {
  hash: Buffer;
  caller: Caller;
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** The configured keys, kept only as SHA-256 hashes so that every comparison has the same length and cost. */
export class ApiKeyRing {
  private readonly keys: StoredKey[];

  constructor(keys: ApiKeys | undefined) {
    this.keys = Object.entries(keys ?? {}).map(([key, resources]) => {
      const hash = sha256(key);
      return {
        hash,
        caller: {
          id: `key:${hash.toString('hex').slice(0, 12)}`,
          resources: resources.includes('*') ? '*' : new Set(resources),
        },
      };
    });
  }

  /** No keys configured: local development mode. */
  get open(): boolean {
    return this.keys.length === 0;
  }

  get size(): number {
    return this.keys.length;
  }

  /**
   * The caller holding `key`, or undefined. Compares against every stored key in constant time, with no early exit,
   * so the response time says nothing about which key (or how much of one) matched.
   */
  find(key: string): Caller | undefined {
    const hash = sha256(key);
    let found: Caller | undefined;
    for (const stored of this.keys) {
      if (timingSafeEqual(stored.hash, hash)) found = stored.caller;
    }
    return found;
  }
}

/** Reads the key from `Authorization: Bearer <key>`; throws 401 naming what is wrong. */
export function bearerKey(header: string | undefined): string {
  if (!header) {
    throw new UnauthorizedError('Missing API key. Send it as "Authorization: Bearer <key>".');
  }
  const match = /^Bearer +(\S+) *$/i.exec(header);
  if (!match) throw new UnauthorizedError('The Authorization header must be "Bearer <key>".');
  return match[1];
}

/** The client's address as the socket sees it (a proxy's address behind a proxy); "unknown" outside Node's server. */
export function clientAddress(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Middleware: identifies the caller of every request it guards (`c.get('caller')`), or answers 401. Failed attempts
 * draw from the client address's bucket of `failures`, so guessing keys is throttled like any other traffic.
 * Preflight requests (`OPTIONS`) pass: browsers send them without credentials.
 */
export function identifyCaller(keys: ApiKeyRing, failures: RateLimiter): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    if (c.req.method === 'OPTIONS') return next();
    if (keys.open) {
      c.set('caller', { id: `ip:${clientAddress(c)}`, resources: '*' });
      return next();
    }
    let caller: Caller | undefined;
    try {
      caller = keys.find(bearerKey(c.req.header('Authorization')));
      if (!caller) throw new UnauthorizedError('Unknown API key. Check the key sent as "Authorization: Bearer <key>".');
    } catch (err) {
      await failures.take(`ip:${clientAddress(c)}`);
      throw err;
    }
    c.set('caller', caller);
    return next();
  };
}

/** Throws 403 unless the caller may act on the target's resource. */
export function authorizeTarget(caller: Caller, target: ThreadTarget): ThreadTarget {
  if (caller.resources === '*' || caller.resources.has(target.resourceId)) return target;
  throw new ForbiddenError(
    `This API key may not act on resourceId "${target.resourceId}". Use a key bound to it in THREADLINE_API_KEYS.`,
  );
}

/** The start-up line that says whether the gateway checks keys; development mode must never go unnoticed. */
export function describeAccess(keys: ApiKeys | undefined, source?: string): string {
  const count = Object.keys(keys ?? {}).length;
  if (count === 0) {
    return (
      'Auth: OFF, local development mode. No THREADLINE_API_KEYS or THREADLINE_API_KEYS_FILE is set, so every caller ' +
      'may act on every thread. Set one before exposing this gateway beyond this machine.'
    );
  }
  return `Auth: ${count} API key${count === 1 ? '' : 's'} from ${source ?? 'the gateway options'}; callers send "Authorization: Bearer <key>".`;
}
