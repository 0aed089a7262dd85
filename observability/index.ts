/**
 * What every process shares to be observed: Prometheus metrics (`./metrics`) and structured logs (`./logger`).
 * Node-only; never imported by workflow code.
 */
export { addMetricsSource, metrics, observePublishLag, registry, renderMetrics, type MetricsSource } from './metrics';
export {
  configureLogging,
  createLogger,
  logLevels,
  logger,
  type LogLevel,
  type Logger,
  type LoggingOptions,
} from './logger';
