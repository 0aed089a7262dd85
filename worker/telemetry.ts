/**
 * The Temporal SDK's Runtime for a process that runs a worker: its logs (the SDK's, the Rust core's, and the workflow
 * and activity context loggers) go to Threadline's JSON log, and its metrics join the process's `/metrics`.
 *
 * The Runtime is a process-wide singleton built when the first `NativeConnection` is made, so `installTemporalRuntime`
 * runs in the entry points before any connection (`worker/main.ts`, `worker/start.ts`). The SDK's Prometheus exporter
 * serves on a loopback port of its own, picked here; `renderMetrics()` fetches it and appends it to Threadline's
 * registry, so a scraper sees one endpoint. Its metrics keep the SDK's names (`temporal_…`, durations in ms) and
 * documentation: https://docs.temporal.io/references/sdk-metrics
 */
import { createServer } from 'node:net';
import {
  Runtime,
  type LogLevel as TemporalLogLevel,
  type LogMetadata,
  type Logger as TemporalLogger,
} from '@temporalio/worker';
import { addMetricsSource, logger, type LogLevel, type Logger } from '../observability';

export interface TemporalRuntimeOptions {
  logLevel: LogLevel;
  /**
   * The Rust core's own filter (`THREADLINE_TEMPORAL_CORE_LOG_FILTER`, a `tracing` filter string). Its lines are
   * written whatever `logLevel` says. Default: derived from `logLevel` (`coreLevel`).
   */
  coreLogFilter?: string;
  /** Export the SDK's metrics into `renderMetrics()` (default true). */
  metrics?: boolean;
}

/** How long a scrape waits for the SDK's exporter before leaving its metrics out. */
const SDK_SCRAPE_TIMEOUT_MS = 2_000;

/**
 * Installs the Temporal Runtime with Threadline's logger and, unless `metrics: false`, the SDK's metrics. Call it once,
 * before the first `NativeConnection`. Returns the address of the SDK's own exporter (loopback), if any.
 */
export async function installTemporalRuntime(options: TemporalRuntimeOptions): Promise<{ sdkMetricsUrl?: string }> {
  const port = options.metrics === false ? undefined : await freeLoopbackPort();
  Runtime.install({
    logger: new TemporalLogBridge(logger('temporal'), options.coreLogFilter ? coreLogger() : undefined),
    telemetryOptions: {
      // The Rust core's own lines, forwarded to the logger above instead of printed to stderr.
      logging: {
        // An operator's filter is taken whole: what it names is written, nothing else (add `,warn` for the rest).
        filter: options.coreLogFilter ?? { core: coreLevel(options.logLevel), other: 'ERROR' },
        forward: {},
      },
      ...(port !== undefined && { metrics: { prometheus: { bindAddress: `127.0.0.1:${port}` } } }),
    },
  });
  if (port === undefined) return {};
  const sdkMetricsUrl = `http://127.0.0.1:${port}/metrics`;
  addMetricsSource('temporal-sdk', async () => {
    const response = await fetch(sdkMetricsUrl, { signal: AbortSignal.timeout(SDK_SCRAPE_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`the SDK's exporter answered ${response.status}`);
    return response.text();
  });
  return { sdkMetricsUrl };
}

/**
 * The logger for the core's lines when an operator set its filter: every line that filter let through is written, at
 * its own level, even below the process's log level (the filter is the operator's choice of what to see).
 */
function coreLogger(): Logger {
  return logger('temporal').child({}, { level: 'trace' });
}

/** The Rust core is verbose: at `info` only its warnings are worth a line; at `debug` its info. */
function coreLevel(level: LogLevel): TemporalLogLevel {
  if (level === 'trace' || level === 'debug') return 'INFO';
  if (level === 'info' || level === 'warn') return 'WARN';
  return 'ERROR';
}

const pinoLevel = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/**
 * The SDK's `Logger` over a pino logger. Field names follow Threadline's: the activity logger's `workflowRunId`
 * becomes `runId` (as in workflow lines), and a thread's workflow id is also its `threadKey`. The activity task
 * token, which can complete the activity, is never written.
 */
export class TemporalLogBridge implements TemporalLogger {
  /** `core`: where the Rust core's lines go (`sdkComponent: 'core'`), when not `out`. */
  constructor(
    private readonly out: Logger,
    private readonly core?: Logger,
  ) {}

  log(level: TemporalLogLevel, message: string, meta?: LogMetadata): void {
    const method = pinoLevel[level] ?? 'info';
    const out = this.core && meta?.sdkComponent === 'core' ? this.core : this.out;
    if (!out.isLevelEnabled(method)) return;
    out[method](fieldsOf(meta), message);
  }

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }

  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }

  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }

  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }

  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

function fieldsOf(meta: LogMetadata | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  // String keys only: the SDK keeps its own bookkeeping (the core's timestamp) under symbols.
  for (const [key, value] of Object.entries(meta ?? {})) {
    if (key === 'taskToken') continue;
    if (key === 'workflowRunId') fields.runId = value;
    // pino serializes errors (message, stack, cause) under `err`.
    else if (key === 'error' && value instanceof Error) fields.err = value;
    else fields[key] = value;
  }
  if (typeof fields.workflowId === 'string' && fields.workflowId.startsWith('thread:')) {
    fields.threadKey = fields.workflowId;
  }
  return fields;
}

/**
 * A loopback port free now. The SDK's exporter cannot report the port it bound to, so it gets a fixed one: the
 * window between this check and its bind is the only race, and losing it fails the start-up loudly.
 */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('No loopback port.')),
      );
    });
  });
}
