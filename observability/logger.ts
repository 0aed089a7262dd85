/**
 * Structured logs: one JSON object per line on stdout (pino), with `level`, `time`, `msg`, the `component` that wrote
 * it and the ids that tie it to a thread where they are known (`threadKey`, `workflowId`, `runId`, `requestId`).
 *
 * The entry points call `configureLogging({ level })` once, with `LOG_LEVEL`; library code asks `logger(component)`
 * for a child at the time it logs, so it always writes through the configured root.
 *
 * What never reaches a log line at `info`: API keys and message contents. Request lines carry the method, the route
 * and the status, not headers or bodies; the paths below are redacted as a second fence, for a field someone adds.
 *
 * @example
 * logger('gateway').info({ requestId, threadKey }, 'request');
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

/** `LOG_LEVEL` values, most verbose first. */
export const logLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

export interface LoggingOptions {
  level: LogLevel;
  /** Where lines go; default stdout, written synchronously so that a line before `process.exit` is not lost. */
  destination?: DestinationStream;
}

/** Field paths whose values are replaced by `[redacted]` wherever they appear in a line. */
const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'apiKey',
  '*.apiKey',
  'apiKeys',
  '*.apiKeys',
  'openaiApiKey',
  '*.openaiApiKey',
  'taskToken',
];

/** A root logger writing JSON lines at `level` to `destination` (stdout by default). */
export function createLogger({ level, destination }: LoggingOptions): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

let root: Logger = createLogger({ level: 'info' });
const children = new Map<string, Logger>();

/** Replaces the root logger (the entry points, with `LOG_LEVEL`); loggers handed out before keep the old one. */
export function configureLogging(options: LoggingOptions): Logger {
  root = createLogger(options);
  children.clear();
  return root;
}

/** The logger of one part of Threadline (`gateway`, `worker`, `temporal`, …): every line carries `component`. */
export function logger(component: string): Logger {
  let child = children.get(component);
  if (!child) {
    child = root.child({ component });
    children.set(component, child);
  }
  return child;
}
