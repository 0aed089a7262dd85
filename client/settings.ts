/**
 * Every setting Threadline reads from the environment, in one place (the README's configuration table).
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';

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
  };
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
