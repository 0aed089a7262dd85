/**
 * Settings from the environment, parsed and validated by the table in `./definitions`. Only the `main` entry points
 * (worker/main.ts, gateway/main.ts, worker/start.ts, worker/cli.ts) call `readSettings(process.env, …)`; everything
 * else takes the parts it needs as arguments.
 *
 * @example
 * const settings = readSettings(process.env, 'worker'); // throws a SettingsError naming each bad variable
 */
import { readFileSync } from 'node:fs';
import { definitionList, definitions, type Reader, type SettingDefinition, type SettingValues } from './definitions';
import { loadTemporalSettings, type Env, type TemporalSettings } from './temporal';
import { parseApiKeys, type ApiKeys } from './api-keys';
import type { LogLevel } from '../observability/logger';
import type { TracingSettings } from '../observability/tracing';

export { parseApiKeys, type ApiKeys } from './api-keys';
export { temporalConnectionOptions, type Env, type TemporalSettings } from './temporal';
export type { Reader } from './definitions';

/** Model resolution (the shape of `ModelSettings` in agents/models.ts). */
export interface ModelSettings {
  /** `provider/model`; unset → `openai/gpt-4o-mini` when an OpenAI key or base URL is set, else `demo`. */
  model?: string;
  openaiApiKey?: string;
  openaiBaseUrl?: string;
}

/** Where the gateway listens and what it accepts. */
export interface ServerSettings {
  port: number;
  host: string;
  keepAliveMs: number;
  /** Largest input (message, signal) JSON a client accepts, in bytes; larger ones are refused with 413. */
  maxInputBytes: number;
  /** How long a send keeps resending while Temporal refuses it for a passing reason; then 503 with Retry-After. */
  deliveryTimeoutMs: number;
  /** Slow clients and connection floods: the bounds of every HTTP listener (the gateway's, the worker's). */
  http: HttpLimits;
}

/**
 * How long a client may take to send a request, how long an idle keep-alive connection stays, and how many
 * connections one listener keeps (gateway/http-limits.ts applies them). None of them limits a response: an SSE
 * stream stays open as long as its client reads.
 */
export interface HttpLimits {
  /** From opening the connection (or starting the next request on it) to the end of the request's headers: else 408. */
  headersTimeoutMs: number;
  /** The whole request, body included; at least `headersTimeoutMs`. Past it: 408. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** Open connections, SSE streams included; a new one past it is closed at once. */
  maxConnections: number;
}

export const defaultHttpLimits: HttpLimits = {
  headersTimeoutMs: definitions.httpHeadersTimeoutMs.default,
  requestTimeoutMs: definitions.httpRequestTimeoutMs.default,
  keepAliveTimeoutMs: definitions.httpKeepAliveTimeoutMs.default,
  maxConnections: definitions.httpMaxConnections.default,
};

/** Who may call the gateway and how much: read only by processes that serve it (`npm start`, `npm run gateway`). */
export interface GatewaySettings {
  /** Undefined: no keys configured, local development mode (every caller may act on every thread). */
  apiKeys?: ApiKeys;
  /** Where `apiKeys` came from, for the start-up announcement. */
  apiKeysSource?: string;
  /** Token bucket per API key (per client IP without keys). `perSecond: 0` turns it off. */
  rateLimit: { perSecond: number; burst: number };
  /**
   * With a Redis URL (`REDIS_URL`), the gateways keep the buckets in Redis and share them (`enabled`); a request waits
   * for Redis at most `timeoutMs`, then (and while Redis is unreachable) the gateway decides with its own bucket.
   */
  sharedRateLimit: { enabled: boolean; timeoutMs: number };
  /** Open SSE subscriptions one gateway serves for one thread. */
  maxSubscribersPerThread: number;
  /**
   * Bytes of events one SSE subscriber may have waiting in the gateway. A client that stops reading reaches it and is
   * dropped (its connection closed, a log line written); it resumes with Last-Event-ID.
   */
  maxSubscriberBufferBytes: number;
  /** An SSE subscriber that takes nothing for this long while events wait for it is dropped. */
  subscriberStallMs: number;
  /** Origins a browser may call from (`*` = any). Empty: no CORS headers at all. */
  corsOrigins: string[];
  /** The Temporal Web UI the console links to; undefined: the dev server's default (`npm start`: the one it started). */
  temporalUiUrl?: string;
}

/** How the process reports on itself: log level, and the worker's HTTP listener for `/health` and `/metrics`. */
export interface ObservabilitySettings {
  logLevel: LogLevel;
  /** Port of the worker's listener (`0`: any free port), or `off`. Only `npm run worker` reads it. */
  workerHttpPort: number | 'off';
  /** The Temporal core's own log filter (a Rust `tracing` filter); undefined: derived from `logLevel`. */
  temporalCoreLogFilter?: string;
}

/** The embedded dev server of `npm start`. */
export interface DevServerSettings {
  /** `TEMPORAL_CLI`; undefined: the cached build. */
  cliPath?: string;
  port: number;
  uiPort: number;
  dataDir: string;
}

/** How a worker asks Temporal for its tasks. */
export interface WorkerSettings {
  /** `stickyQueueScheduleToStartTimeout`: how long a cached thread's next workflow task waits for this worker. */
  stickyQueueTimeoutMs: number;
}

export interface Settings {
  /** The process these settings were read for; variables other processes read keep their defaults. */
  reader: Reader;
  models: ModelSettings;
  worker: WorkerSettings;
  server: ServerSettings;
  gateway: GatewaySettings;
  /** Undefined: the in-process bus. */
  redisUrl?: string;
  temporal: TemporalSettings;
  devServer: DevServerSettings;
  observability: ObservabilitySettings;
  tracing: TracingSettings;
}

export const defaultGatewaySettings: GatewaySettings = {
  rateLimit: { perSecond: definitions.rateLimitPerSecond.default, burst: definitions.rateLimitPerSecond.default * 2 },
  sharedRateLimit: {
    enabled: definitions.rateLimitShared.default,
    timeoutMs: definitions.rateLimitRedisTimeoutMs.default,
  },
  maxSubscribersPerThread: definitions.maxSubscribersPerThread.default,
  maxSubscriberBufferBytes: definitions.maxSubscriberBufferBytes.default,
  subscriberStallMs: definitions.subscriberStallMs.default,
  corsOrigins: [],
};

export const DEFAULT_TASK_QUEUE = definitions.temporalTaskQueue.default;
export const DEFAULT_NAMESPACE = definitions.temporalNamespace.default;
export const DEFAULT_TEMPORAL_ADDRESS = `127.0.0.1:${definitions.temporalPort.default}`;

/** One or more settings cannot be used; `problems` has one line per variable, each naming it and the form it needs. */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';

  constructor(readonly problems: string[]) {
    super(
      problems.length === 1
        ? problems[0]
        : `${problems.length} settings are invalid:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
}

/** Reads every setting `reader` uses from `env`; throws a `SettingsError` listing every invalid one. */
export function readSettings(env: Env, reader: Reader): Settings {
  const problems: string[] = [];
  const values = readVariables(env, (definition) => definition.readBy.includes(reader), problems);
  const gateway = gatewayFrom(values, problems);
  const http = httpLimitsFrom(values, problems);
  let temporal: TemporalSettings | undefined;
  if (problems.length === 0) {
    try {
      temporal = loadTemporalSettings(env, {
        namespace: values.temporalNamespace,
        taskQueue: values.temporalTaskQueue,
      });
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (problems.length > 0 || !temporal) throw new SettingsError(problems);
  return {
    reader,
    models: { model: values.model, openaiApiKey: values.openaiApiKey, openaiBaseUrl: values.openaiBaseUrl },
    worker: { stickyQueueTimeoutMs: values.stickyQueueTimeoutMs },
    server: {
      port: values.port,
      host: values.host,
      keepAliveMs: values.sseKeepAliveMs,
      maxInputBytes: values.maxInputBytes,
      deliveryTimeoutMs: values.deliveryTimeoutMs,
      http,
    },
    gateway,
    redisUrl: values.redisUrl,
    temporal,
    devServer: {
      cliPath: values.temporalCli,
      port: values.temporalPort,
      uiPort: values.temporalUiPort,
      dataDir: values.dataDir,
    },
    observability: {
      logLevel: values.logLevel,
      workerHttpPort: values.workerHttpPort,
      temporalCoreLogFilter: values.temporalCoreLogFilter,
    },
    tracing: { otlpEndpoint: values.otlpEndpoint, recordModelContents: values.traceModelContents },
  };
}

/** The gateway's access and limit settings alone (`THREADLINE_*` of the Gateway group). */
export function gatewaySettingsFromEnv(env: Env): GatewaySettings {
  const problems: string[] = [];
  const values = readVariables(env, (definition) => definition.group === 'Gateway', problems);
  const gateway = gatewayFrom(values, problems);
  if (problems.length > 0) throw new SettingsError(problems);
  return gateway;
}

/**
 * The Temporal connection alone, for `connect()` without a client: the settings, and the address to use (the
 * configured one, else the dev server's port on loopback).
 */
export function temporalConnectionFromEnv(env: Env): { temporal: TemporalSettings; address: string } {
  const problems: string[] = [];
  const values = readVariables(
    env,
    (definition) => definition.group === 'Temporal' || definition.env === definitions.temporalPort.env,
    problems,
  );
  if (problems.length > 0) throw new SettingsError(problems);
  let temporal: TemporalSettings;
  try {
    temporal = loadTemporalSettings(env, { namespace: values.temporalNamespace, taskQueue: values.temporalTaskQueue });
  } catch (err) {
    throw new SettingsError([(err as Error).message]);
  }
  return { temporal, address: temporal.address ?? `127.0.0.1:${values.temporalPort}` };
}

/** The server to connect to: the configured one, else the dev server's port on loopback. */
export function temporalAddress(settings: Pick<Settings, 'temporal' | 'devServer'>): string {
  return settings.temporal.address ?? `127.0.0.1:${settings.devServer.port}`;
}

/** The raw value of a definition in `env`: unset and empty are the same. */
export function rawValue(env: Env, definition: SettingDefinition): string | undefined {
  const raw = env[definition.env];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** Parses the definitions `include` selects (the rest keep their defaults), adding one problem per invalid value. */
function readVariables(env: Env, include: (definition: SettingDefinition) => boolean, problems: string[]) {
  const values: Record<string, unknown> = {};
  for (const [name, definition] of definitionList) {
    const raw = include(definition) ? rawValue(env, definition) : undefined;
    values[name] = definition.default;
    if (raw === undefined) continue;
    try {
      values[name] = definition.type.parse(raw, {
        name: definition.env,
        shown: definition.secret ? 'a value not shown here (it is a secret)' : JSON.stringify(raw),
      });
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return values as SettingValues;
}

function gatewayFrom(values: SettingValues, problems: string[]): GatewaySettings {
  const perSecond = values.rateLimitPerSecond;
  const burst = values.rateLimitBurst ?? Math.max(1, Math.ceil(perSecond * 2));
  if (perSecond > 0 && burst === 0) {
    problems.push(
      `${definitions.rateLimitBurst.env} must be at least 1 while the rate limit is on. To turn it off, set ${definitions.rateLimitPerSecond.env}=0.`,
    );
  }
  return {
    ...apiKeysFrom(values, problems),
    rateLimit: { perSecond, burst },
    sharedRateLimit: { enabled: values.rateLimitShared, timeoutMs: values.rateLimitRedisTimeoutMs },
    maxSubscribersPerThread: values.maxSubscribersPerThread,
    maxSubscriberBufferBytes: values.maxSubscriberBufferBytes,
    subscriberStallMs: values.subscriberStallMs,
    corsOrigins: values.corsOrigins,
    ...(values.temporalUiUrl ? { temporalUiUrl: values.temporalUiUrl } : {}),
  };
}

function httpLimitsFrom(values: SettingValues, problems: string[]): HttpLimits {
  const limits: HttpLimits = {
    headersTimeoutMs: values.httpHeadersTimeoutMs,
    requestTimeoutMs: values.httpRequestTimeoutMs,
    keepAliveTimeoutMs: values.httpKeepAliveTimeoutMs,
    maxConnections: values.httpMaxConnections,
  };
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    problems.push(
      `${definitions.httpHeadersTimeoutMs.env} (${limits.headersTimeoutMs}) must not be more than ` +
        `${definitions.httpRequestTimeoutMs.env} (${limits.requestTimeoutMs}): the headers are part of the request.`,
    );
  }
  return limits;
}

function apiKeysFrom(values: SettingValues, problems: string[]): Pick<GatewaySettings, 'apiKeys' | 'apiKeysSource'> {
  const inline = definitions.apiKeys.env;
  const fileVariable = definitions.apiKeysFile.env;
  const file = values.apiKeysFile;
  if (values.apiKeys && file) {
    problems.push(`Set ${inline} or ${fileVariable}, not both.`);
    return {};
  }
  if (values.apiKeys) return { apiKeys: values.apiKeys, apiKeysSource: inline };
  if (!file) return {};
  const source = `${fileVariable} (${file})`;
  try {
    return { apiKeys: parseApiKeys(readFileSync(file, 'utf8'), source), apiKeysSource: source };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.push(code ? `${fileVariable}: cannot read "${file}": ${(err as Error).message}` : (err as Error).message);
    return {};
  }
}
