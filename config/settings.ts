/**
 * Every setting Threadline reads from the environment, in one place (the README's configuration table).
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';
import { z } from 'zod';
import { defaultLimits, describeZodError } from '../protocol/schemas';

export interface Settings {
  port: number;
  host: string;
  temporalAddress?: string;
  temporalNamespace: string;
  temporalTaskQueue: string;
  temporalApiKey?: string;
  temporalTls?: { certPath?: string; keyPath?: string; caPath?: string; enabled: boolean };
  temporalCli?: string;
  temporalPort: number;
  temporalUiPort: number;
  dataDir: string;
  redisUrl?: string;
  keepAliveMs: number;
  /** Largest input (message, signal) JSON a client accepts, in bytes; larger ones are refused with 413. */
  maxInputBytes: number;
}

function int(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got "${value}".`);
  return n;
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): Settings {
  const tlsCert = env.TEMPORAL_TLS_CLIENT_CERT_PATH;
  const tlsKey = env.TEMPORAL_TLS_CLIENT_KEY_PATH;
  const tlsCa = env.TEMPORAL_TLS_SERVER_CA_CERT_PATH;
  const tlsEnabled = env.TEMPORAL_TLS === 'true' || Boolean(tlsCert || tlsCa);
  return {
    port: int(env.PORT, 4111, 'PORT'),
    host: env.HOST || '127.0.0.1',
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    temporalTaskQueue: env.TEMPORAL_TASK_QUEUE || 'threadline',
    temporalApiKey: env.TEMPORAL_API_KEY || undefined,
    temporalTls: tlsEnabled ? { certPath: tlsCert, keyPath: tlsKey, caPath: tlsCa, enabled: true } : undefined,
    temporalCli: env.TEMPORAL_CLI || undefined,
    temporalPort: int(env.TEMPORAL_PORT, 7233, 'TEMPORAL_PORT'),
    temporalUiPort: int(env.TEMPORAL_UI_PORT, 8233, 'TEMPORAL_UI_PORT'),
    dataDir: env.THREADLINE_DATA_DIR || '.data',
    redisUrl: env.REDIS_URL || undefined,
    keepAliveMs: int(env.THREADLINE_SSE_KEEPALIVE_MS, 25_000, 'THREADLINE_SSE_KEEPALIVE_MS'),
    maxInputBytes: positiveInt(
      env.THREADLINE_MAX_INPUT_BYTES,
      defaultLimits.maxInputBytes,
      'THREADLINE_MAX_INPUT_BYTES',
    ),
  };
}

function positiveInt(value: string | undefined, fallback: number, name: string): number {
  const n = int(value, fallback, name);
  if (n === 0) throw new Error(`${name} must be at least 1, got "${value}".`);
  return n;
}

/** API key → the `resourceId`s it may act on; `"*"` in the list means every resource. */
export type ApiKeys = Record<string, string[]>;

/** Who may call the gateway and how much: read only by processes that serve it (`npm start`, `npm run gateway`). */
export interface GatewaySettings {
  /** Undefined: no keys configured, local development mode (every caller may act on every thread). */
  apiKeys?: ApiKeys;
  /** Where `apiKeys` came from, for the start-up announcement. */
  apiKeysSource?: string;
  /** Token bucket per API key (per client IP without keys). `perSecond: 0` turns it off. */
  rateLimit: { perSecond: number; burst: number };
  /** Open SSE subscriptions one gateway serves for one thread. */
  maxSubscribersPerThread: number;
  /** Origins a browser may call from (`*` = any). Empty: no CORS headers at all. */
  corsOrigins: string[];
}

export const defaultGatewaySettings: GatewaySettings = {
  rateLimit: { perSecond: 200, burst: 400 },
  maxSubscribersPerThread: 1_000,
  corsOrigins: [],
};

export function gatewaySettingsFromEnv(env: NodeJS.ProcessEnv = process.env): GatewaySettings {
  const perSecond = nonNegativeNumber(env.THREADLINE_RATE_LIMIT_PER_SECOND, 200, 'THREADLINE_RATE_LIMIT_PER_SECOND');
  const burst = int(
    env.THREADLINE_RATE_LIMIT_BURST,
    Math.max(1, Math.ceil(perSecond * 2)),
    'THREADLINE_RATE_LIMIT_BURST',
  );
  if (perSecond > 0 && burst === 0) {
    throw new Error(
      'THREADLINE_RATE_LIMIT_BURST must be at least 1 while the rate limit is on. To turn it off, set THREADLINE_RATE_LIMIT_PER_SECOND=0.',
    );
  }
  return {
    ...apiKeysFromEnv(env),
    rateLimit: { perSecond, burst },
    maxSubscribersPerThread: positiveInt(
      env.THREADLINE_MAX_SUBSCRIBERS_PER_THREAD,
      defaultGatewaySettings.maxSubscribersPerThread,
      'THREADLINE_MAX_SUBSCRIBERS_PER_THREAD',
    ),
    corsOrigins: corsOrigins(env.THREADLINE_CORS_ORIGINS),
  };
}

function nonNegativeNumber(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number of at least 0, got "${value}".`);
  return n;
}

const API_KEYS_EXAMPLE = '{"key-a":["tenant-a"],"ops-key":["*"]}';

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

function apiKeysFromEnv(env: NodeJS.ProcessEnv): Pick<GatewaySettings, 'apiKeys' | 'apiKeysSource'> {
  const inline = env.THREADLINE_API_KEYS;
  const file = env.THREADLINE_API_KEYS_FILE;
  if (inline && file) {
    throw new Error('Set THREADLINE_API_KEYS or THREADLINE_API_KEYS_FILE, not both.');
  }
  if (inline) return { apiKeys: parseApiKeys(inline, 'THREADLINE_API_KEYS'), apiKeysSource: 'THREADLINE_API_KEYS' };
  if (!file) return {};
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`THREADLINE_API_KEYS_FILE: cannot read "${file}": ${(err as Error).message}`, { cause: err });
  }
  const source = `THREADLINE_API_KEYS_FILE (${file})`;
  return { apiKeys: parseApiKeys(text, source), apiKeysSource: source };
}

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

function corsOrigins(value: string | undefined): string[] {
  const origins = (value ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const origin of origins) {
    if (origin !== '*' && !isOrigin(origin)) {
      throw new Error(
        `THREADLINE_CORS_ORIGINS: "${origin}" is not an origin. Write scheme://host[:port] without a path, e.g. https://app.example.com, or *.`,
      );
    }
  }
  return origins;
}

function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
}

/** Temporal connection options from the standard Temporal environment variables. */
export function temporalConnectionOptions(settings: Settings, address: string): ConnectionOptions {
  const options: ConnectionOptions = { address };
  if (settings.temporalApiKey) options.apiKey = settings.temporalApiKey;
  const tls = settings.temporalTls;
  if (tls || settings.temporalApiKey) {
    options.tls = {
      ...(tls?.caPath ? { serverRootCACertificate: readFileSync(tls.caPath) } : {}),
      ...(tls?.certPath && tls.keyPath
        ? { clientCertPair: { crt: readFileSync(tls.certPath), key: readFileSync(tls.keyPath) } }
        : {}),
    };
  }
  return options;
}
