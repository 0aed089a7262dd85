/**
 * Every setting Threadline reads from the environment, in one table: parsing and validation (`./settings`), the
 * Temporal connection (`./temporal`), `threadline config` and `docs/configuration.md` (`./docs`) are generated from
 * it. To add a setting: add an entry here, then use its value where `./settings` builds the `Settings` object.
 */
import { defaultLimits } from '../protocol/schemas';
import {
  custom,
  decimal,
  flag,
  hostPort,
  modelName,
  origins,
  oneOf,
  path,
  portOrOff,
  text,
  tracingFilter,
  url,
  wholeNumber,
  type ValueType,
} from './types';
import { logLevels, type LogLevel } from '../observability/logger';
import { API_KEYS_EXAMPLE, parseApiKeys, type ApiKeys } from './api-keys';

/** The processes that read settings: `npm run worker`, `npm run gateway`, and `npm start` (all of it in one). */
export type Reader = 'worker' | 'gateway' | 'start';
export const readers: readonly Reader[] = ['worker', 'gateway', 'start'];

export type Group = 'Model' | 'Gateway' | 'Bus' | 'Temporal' | 'Embedded dev server' | 'Observability';

export interface SettingDefinition<T = unknown, V = T | undefined> {
  env: string;
  group: Group;
  type: ValueType<T>;
  /** The value when the variable is unset or empty. */
  default?: T;
  /** The default as the docs state it, when it is computed or not a plain value. */
  defaultText?: string;
  description: string;
  readBy: readonly Reader[];
  /** Masked by `threadline config`, never quoted in error messages. */
  secret?: boolean;
  /** Applied through `@temporalio/envconfig`, which also reads a `temporal.toml` profile; validated here. */
  temporal?: boolean;
  /** Type-level only: the parsed value, `T | undefined` unless there is a default. */
  readonly value?: V;
}

function optional<T>(definition: Omit<SettingDefinition<T>, 'default' | 'value'>): SettingDefinition<T, T | undefined> {
  return definition;
}

function withDefault<T>(
  definition: Omit<SettingDefinition<T>, 'value'> & { default: T },
): SettingDefinition<T, T> & { default: T } {
  return definition;
}

const ALL: readonly Reader[] = readers;
const SERVES_HTTP: readonly Reader[] = ['gateway', 'start'];
const RUNS_AGENTS: readonly Reader[] = ['worker', 'start'];
const START_ONLY: readonly Reader[] = ['start'];
const WORKER_ONLY: readonly Reader[] = ['worker'];

export const definitions = {
  model: optional({
    env: 'MODEL',
    group: 'Model',
    type: modelName,
    defaultText: '`openai/gpt-4o-mini` when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, else `demo`',
    description: 'default model of agents that name none: `provider/model` (`openai/…`) or `demo`',
    readBy: RUNS_AGENTS,
  }),
  openaiApiKey: optional({
    env: 'OPENAI_API_KEY',
    group: 'Model',
    type: text,
    description: 'key for the `openai` provider',
    readBy: RUNS_AGENTS,
    secret: true,
  }),
  openaiBaseUrl: optional({
    env: 'OPENAI_BASE_URL',
    group: 'Model',
    type: url(['http:', 'https:'], 'http://127.0.0.1:11434/v1'),
    defaultText: "OpenAI's",
    description:
      'any OpenAI-compatible server (Ollama, vLLM, llama.cpp); Threadline uses its chat-completions endpoint',
    readBy: RUNS_AGENTS,
  }),

  port: withDefault({
    env: 'PORT',
    group: 'Gateway',
    type: wholeNumber(0, 65535),
    default: 4111,
    description: 'gateway port (`0`: any free port)',
    readBy: SERVES_HTTP,
  }),
  host: withDefault({
    env: 'HOST',
    group: 'Gateway',
    type: text,
    default: '127.0.0.1',
    description:
      "interface the gateway listens on, and the worker's health and metrics listener (`0.0.0.0` in containers)",
    readBy: ALL,
  }),
  sseKeepAliveMs: withDefault({
    env: 'THREADLINE_SSE_KEEPALIVE_MS',
    group: 'Gateway',
    type: wholeNumber(0),
    default: 25_000,
    description: 'SSE `: keep-alive` comment after this much silence, in milliseconds',
    readBy: SERVES_HTTP,
  }),
  apiKeys: optional({
    env: 'THREADLINE_API_KEYS',
    group: 'Gateway',
    type: custom<ApiKeys>(`a JSON map of API key to resourceIds, e.g. ${API_KEYS_EXAMPLE}`, parseApiKeys),
    defaultText: '— (local development mode)',
    description:
      'JSON map of API key → `resourceId`s it may act on (`"*"` = all); unset, every caller may act on every thread',
    readBy: SERVES_HTTP,
    secret: true,
  }),
  apiKeysFile: optional({
    env: 'THREADLINE_API_KEYS_FILE',
    group: 'Gateway',
    type: path,
    description: 'path of a file with the same JSON as `THREADLINE_API_KEYS` (set one of them, not both)',
    readBy: SERVES_HTTP,
  }),
  rateLimitPerSecond: withDefault({
    env: 'THREADLINE_RATE_LIMIT_PER_SECOND',
    group: 'Gateway',
    type: decimal(0),
    default: 200,
    description: 'requests per second per API key (per client address without keys); `0` = off',
    readBy: SERVES_HTTP,
  }),
  rateLimitBurst: optional({
    env: 'THREADLINE_RATE_LIMIT_BURST',
    group: 'Gateway',
    type: wholeNumber(0),
    defaultText: 'twice the rate',
    description: 'requests a caller may send at once after a quiet period (at least 1 while the rate limit is on)',
    readBy: SERVES_HTTP,
  }),
  rateLimitShared: withDefault({
    env: 'THREADLINE_RATE_LIMIT_SHARED',
    group: 'Gateway',
    type: flag,
    default: true,
    description:
      "with `REDIS_URL` set, the gateways keep each caller's bucket in Redis, so together they allow the rate once; `false`: each gateway counts alone (N gateways allow N times the rate)",
    readBy: SERVES_HTTP,
  }),
  rateLimitRedisTimeoutMs: withDefault({
    env: 'THREADLINE_RATE_LIMIT_REDIS_TIMEOUT_MS',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 250,
    description:
      "longest wait for Redis on one request's shared rate limit, in milliseconds; past it, and while Redis is unreachable, the gateway decides with its own bucket (a warning, `threadline_rate_limit_fallbacks_total`)",
    readBy: SERVES_HTTP,
  }),
  maxSubscribersPerThread: withDefault({
    env: 'THREADLINE_MAX_SUBSCRIBERS_PER_THREAD',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 1_000,
    description: 'open SSE subscriptions one gateway serves for one thread',
    readBy: SERVES_HTTP,
  }),
  maxSubscriberBufferBytes: withDefault({
    env: 'THREADLINE_MAX_SUBSCRIBER_BUFFER_BYTES',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 1024 * 1024,
    defaultText: '`1048576` (1 MiB)',
    description:
      'bytes of events one SSE subscriber may have waiting in the gateway; a client that stops reading reaches it and is dropped (it resumes with Last-Event-ID)',
    readBy: SERVES_HTTP,
  }),
  subscriberStallMs: withDefault({
    env: 'THREADLINE_SUBSCRIBER_STALL_MS',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 60_000,
    description: 'an SSE subscriber that takes nothing for this long while events wait for it is dropped',
    readBy: SERVES_HTTP,
  }),
  maxInputBytes: withDefault({
    env: 'THREADLINE_MAX_INPUT_BYTES',
    group: 'Gateway',
    // A step's activity input can carry the newest input twice (window and new messages); Temporal caps one at 2 MB.
    type: wholeNumber(1, 512 * 1024),
    default: defaultLimits.maxInputBytes,
    defaultText: `\`${defaultLimits.maxInputBytes}\` (${defaultLimits.maxInputBytes / 1024} KiB)`,
    description:
      'largest input (message, signal, one notification) JSON the gateway accepts, in bytes, at most 512 KiB; larger ones get 413. Threads the gateway starts take the same bound from any sender',
    readBy: SERVES_HTTP,
  }),
  deliveryTimeoutMs: withDefault({
    env: 'THREADLINE_DELIVERY_TIMEOUT_MS',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 30_000,
    description:
      "how long the gateway keeps resending an input Temporal refuses for a passing reason (busy, unreachable, an update handed back unprocessed, or the thread's workflow task on a retry attempt after a worker died), in milliseconds; still refused then: 503 with Retry-After (send again with the same id)",
    readBy: SERVES_HTTP,
  }),
  httpHeadersTimeoutMs: withDefault({
    env: 'THREADLINE_HTTP_HEADERS_TIMEOUT_MS',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 15_000,
    description:
      "time a client has to send a request's headers, from opening the connection (or starting the next request on it); past it: 408 and the connection is closed. Also the worker's listener",
    readBy: ALL,
  }),
  httpRequestTimeoutMs: withDefault({
    env: 'THREADLINE_HTTP_REQUEST_TIMEOUT_MS',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 60_000,
    description:
      "time a client has to send a whole request, body included (at least the headers timeout); past it: 408 and the connection is closed. Responses are not limited: SSE streams stay open. Also the worker's listener",
    readBy: ALL,
  }),
  httpKeepAliveTimeoutMs: withDefault({
    env: 'THREADLINE_HTTP_KEEPALIVE_TIMEOUT_MS',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 5_000,
    description:
      "an idle keep-alive connection (between requests) is closed after this long; behind a load balancer, set it above the balancer's idle timeout. Also the worker's listener",
    readBy: ALL,
  }),
  httpMaxConnections: withDefault({
    env: 'THREADLINE_HTTP_MAX_CONNECTIONS',
    group: 'Gateway',
    type: wholeNumber(1),
    default: 10_000,
    description:
      "open connections one HTTP listener keeps, SSE streams included; a new one past it is closed at once (a warning, at most one a minute). Keep it under the open-file limit. Also the worker's listener",
    readBy: ALL,
  }),
  corsOrigins: withDefault({
    env: 'THREADLINE_CORS_ORIGINS',
    group: 'Gateway',
    type: origins,
    default: [] as string[],
    defaultText: '— (no CORS headers)',
    description: 'comma-separated origins browsers may call from (`https://app.example.com`), or `*`',
    readBy: SERVES_HTTP,
  }),
  temporalUiUrl: optional({
    env: 'THREADLINE_TEMPORAL_UI_URL',
    group: 'Gateway',
    type: url(['http:', 'https:'], 'https://temporal-ui.example.com'),
    defaultText: "`http://127.0.0.1:8233` (`npm start`: its dev server's)",
    description: "Temporal Web UI the console links each thread's workflow to",
    readBy: SERVES_HTTP,
  }),

  redisUrl: optional({
    env: 'REDIS_URL',
    group: 'Bus',
    type: url(['redis:', 'rediss:'], 'redis://127.0.0.1:6379'),
    defaultText: '— (in-process bus)',
    description: 'Redis Streams bus, for workers and gateways in several processes or machines',
    readBy: ALL,
    secret: true,
  }),

  temporalAddress: optional({
    env: 'TEMPORAL_ADDRESS',
    group: 'Temporal',
    type: hostPort,
    defaultText:
      "the profile's; else `npm start` starts the embedded dev server, and `worker`/`gateway` use `127.0.0.1:$TEMPORAL_PORT`",
    description: 'the Temporal server (frontend gRPC address)',
    readBy: ALL,
    temporal: true,
  }),
  temporalNamespace: withDefault({
    env: 'TEMPORAL_NAMESPACE',
    group: 'Temporal',
    type: text,
    default: 'default',
    defaultText: "the profile's, else `default`",
    description: 'Temporal namespace',
    readBy: ALL,
    temporal: true,
  }),
  temporalTaskQueue: withDefault({
    env: 'TEMPORAL_TASK_QUEUE',
    group: 'Temporal',
    type: text,
    default: 'threadline',
    description: "task queue of thread workflows and activities (Threadline's own setting, not in profiles)",
    readBy: ALL,
  }),
  stickyQueueTimeoutMs: withDefault({
    env: 'THREADLINE_STICKY_QUEUE_TIMEOUT_MS',
    group: 'Temporal',
    type: wholeNumber(1_000),
    default: 10_000,
    description:
      "how long a thread's next workflow task waits on the sticky queue of the worker that has the thread cached " +
      'before any worker may take it (`stickyQueueScheduleToStartTimeout`), in milliseconds. Shorter moves the ' +
      'threads of a crashed worker sooner (a worker that shuts down gracefully hands them over at once), but a busy ' +
      "worker's tasks then time out, move and replay: at 3,000 the notification bench had 367 timed-out workflow " +
      'tasks and refused inputs, at 10,000 none (docs/performance.md)',
    readBy: RUNS_AGENTS,
  }),
  temporalApiKey: optional({
    env: 'TEMPORAL_API_KEY',
    group: 'Temporal',
    type: text,
    defaultText: "the profile's",
    description: 'API key (Temporal Cloud); turns TLS on',
    readBy: ALL,
    secret: true,
    temporal: true,
  }),
  temporalTls: optional({
    env: 'TEMPORAL_TLS',
    group: 'Temporal',
    type: flag,
    defaultText: 'on with an API key or any TLS setting',
    description: 'TLS to the Temporal server on or off',
    readBy: ALL,
    temporal: true,
  }),
  temporalTlsClientCertPath: optional({
    env: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
    group: 'Temporal',
    type: path,
    description: 'client certificate (PEM) for mTLS',
    readBy: ALL,
    temporal: true,
  }),
  temporalTlsClientKeyPath: optional({
    env: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
    group: 'Temporal',
    type: path,
    description: 'client private key (PEM) for mTLS',
    readBy: ALL,
    temporal: true,
  }),
  temporalTlsServerCaCertPath: optional({
    env: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    group: 'Temporal',
    type: path,
    defaultText: 'the system roots',
    description: "CA certificate (PEM) to verify the server's certificate",
    readBy: ALL,
    temporal: true,
  }),
  temporalTlsClientCertData: optional({
    env: 'TEMPORAL_TLS_CLIENT_CERT_DATA',
    group: 'Temporal',
    type: text,
    description: 'the client certificate itself (PEM), instead of its path',
    readBy: ALL,
    temporal: true,
  }),
  temporalTlsClientKeyData: optional({
    env: 'TEMPORAL_TLS_CLIENT_KEY_DATA',
    group: 'Temporal',
    type: text,
    description: 'the client private key itself (PEM), instead of its path',
    readBy: ALL,
    secret: true,
    temporal: true,
  }),
  temporalTlsServerCaCertData: optional({
    env: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
    group: 'Temporal',
    type: text,
    description: 'the CA certificate itself (PEM), instead of its path',
    readBy: ALL,
    temporal: true,
  }),
  temporalTlsServerName: optional({
    env: 'TEMPORAL_TLS_SERVER_NAME',
    group: 'Temporal',
    type: text,
    defaultText: 'the host of the address',
    description: "server name to verify the server's certificate against (SNI)",
    readBy: ALL,
    temporal: true,
  }),
  temporalProfile: optional({
    env: 'TEMPORAL_PROFILE',
    group: 'Temporal',
    type: text,
    defaultText: '`default`',
    description: 'profile of the Temporal config file to use; environment variables override its fields',
    readBy: ALL,
    temporal: true,
  }),
  temporalConfigFile: optional({
    env: 'TEMPORAL_CONFIG_FILE',
    group: 'Temporal',
    type: path,
    defaultText: '`$XDG_CONFIG_HOME/temporalio/temporal.toml` (`~/.config/…` on Linux), if it exists',
    description: 'the Temporal config file (TOML, as `temporal config` writes it)',
    readBy: ALL,
    temporal: true,
  }),

  temporalCli: optional({
    env: 'TEMPORAL_CLI',
    group: 'Embedded dev server',
    type: path,
    defaultText: 'the cached build',
    description: 'path of the `temporal` binary for the embedded dev server',
    readBy: START_ONLY,
  }),
  temporalPort: withDefault({
    env: 'TEMPORAL_PORT',
    group: 'Embedded dev server',
    type: wholeNumber(0, 65535),
    default: 7233,
    description: 'embedded dev server gRPC port (`worker` and `gateway` connect to it without an address)',
    readBy: ALL,
  }),
  temporalUiPort: withDefault({
    env: 'TEMPORAL_UI_PORT',
    group: 'Embedded dev server',
    type: wholeNumber(0, 65535),
    default: 8233,
    description: 'embedded dev server Web UI port',
    readBy: START_ONLY,
  }),
  dataDir: withDefault({
    env: 'THREADLINE_DATA_DIR',
    group: 'Embedded dev server',
    type: path,
    default: '.data',
    description: 'where the embedded dev server keeps its database',
    readBy: START_ONLY,
  }),
  cacheHome: optional({
    env: 'XDG_CACHE_HOME',
    group: 'Embedded dev server',
    type: path,
    defaultText: '`~/.cache`',
    description: 'where the Temporal CLI build is cached (`threadline/temporal-<version>` inside it)',
    readBy: START_ONLY,
  }),

  logLevel: withDefault<LogLevel>({
    env: 'LOG_LEVEL',
    group: 'Observability',
    type: oneOf(logLevels),
    default: 'info',
    description: 'the least severe log lines written (JSON, one per line on stdout); `silent` writes none',
    readBy: ALL,
  }),
  temporalCoreLogFilter: optional({
    env: 'THREADLINE_TEMPORAL_CORE_LOG_FILTER',
    group: 'Observability',
    type: tracingFilter,
    defaultText: 'none: the core writes warnings (errors at `error`, its info at `debug`/`trace`)',
    description:
      "which lines of the Temporal SDK's Rust core are written, as a `tracing` filter; they are written whatever " +
      'LOG_LEVEL says (as `temporal` lines at their own level). For diagnosis, e.g. ' +
      '`temporalio_sdk_core::worker::workflow=debug,warn`: every workflow task the worker receives (events, update ' +
      'messages, queries, attempt) and every activation and completion. Verbose: one worker writes several lines ' +
      'per workflow task',
    readBy: RUNS_AGENTS,
  }),
  workerHttpPort: withDefault<number | 'off'>({
    env: 'THREADLINE_WORKER_HTTP_PORT',
    group: 'Observability',
    type: portOrOff,
    default: 9464,
    description:
      "port of the worker's HTTP listener, `GET /health` and `GET /metrics` (`0`: any free port; `off`: none). " +
      "`npm start` has none: its gateway's `/health` and `/metrics` cover the whole process",
    readBy: WORKER_ONLY,
  }),
  otlpEndpoint: optional({
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    group: 'Observability',
    type: url(['http:', 'https:'], 'http://127.0.0.1:4318'),
    defaultText: 'none: no tracing',
    description:
      'OpenTelemetry collector (OTLP over HTTP, protobuf) that traces are sent to, at `/v1/traces` under this URL. ' +
      'The SDK reads the other standard variables itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, ' +
      '`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, …)',
    readBy: ALL,
  }),
  traceModelContents: withDefault<boolean>({
    env: 'THREADLINE_TRACE_MODEL_CONTENTS',
    group: 'Observability',
    type: flag,
    default: false,
    description:
      "record prompts and answers in the model call's spans (`ai.prompt…`, `ai.response…`); off, spans carry no " +
      'message contents',
    readBy: RUNS_AGENTS,
  }),
} satisfies Record<string, SettingDefinition<unknown, unknown>>;

export type SettingName = keyof typeof definitions;

/** The parsed value of every setting. */
export type SettingValues = {
  [K in SettingName]: (typeof definitions)[K] extends SettingDefinition<infer _T, infer V> ? V : never;
};

/** The table as a list, in its order (the docs' order). */
export const definitionList: readonly [SettingName, SettingDefinition][] = Object.entries(definitions) as [
  SettingName,
  SettingDefinition,
][];
