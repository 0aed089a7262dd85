/**
 * The pieces of metrics and logs that need no server: the settings that drive them, the Temporal log bridge's
 * fields, and `/metrics` rendering with an extra source (the Temporal SDK's exporter) that answers or fails.
 */
import { describe, expect, it } from 'vitest';
import { readSettings } from '../../config/settings';
import { addMetricsSource, createLogger, metrics, renderMetrics } from '../../observability';
import { TemporalLogBridge } from '../../worker/telemetry';

function capture(level: 'debug' | 'info' = 'info') {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ level, destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
  return { log, lines };
}

describe('observability settings', () => {
  it('reads LOG_LEVEL (any case) and THREADLINE_WORKER_HTTP_PORT (a port, 0, or off)', () => {
    expect(readSettings({}, 'worker').observability).toEqual({ logLevel: 'info', workerHttpPort: 9464 });
    expect(readSettings({ LOG_LEVEL: 'DEBUG', THREADLINE_WORKER_HTTP_PORT: 'off' }, 'worker').observability).toEqual({
      logLevel: 'debug',
      workerHttpPort: 'off',
    });
    expect(readSettings({ THREADLINE_WORKER_HTTP_PORT: '0' }, 'worker').observability.workerHttpPort).toBe(0);
  });

  it('names the variable and the form it needs', () => {
    expect(() => readSettings({ LOG_LEVEL: 'loud' }, 'gateway')).toThrow(
      'LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "loud".',
    );
    expect(() => readSettings({ THREADLINE_WORKER_HTTP_PORT: '70000' }, 'worker')).toThrow(
      'THREADLINE_WORKER_HTTP_PORT must be a whole number from 0 to 65535, or off, got "70000".',
    );
  });
});

describe('the Temporal log bridge', () => {
  it("writes the SDK's lines with Threadline's field names and without the activity task token", () => {
    const { log, lines } = capture();
    const bridge = new TemporalLogBridge(log);

    bridge.warn('Activity failed', {
      sdkComponent: 'activity',
      workflowId: 'thread:user-1:thread-1',
      workflowRunId: 'run-1',
      activityType: 'runStep',
      taskToken: 'c2VjcmV0LXRhc2stdG9rZW4=',
      error: new Error('model down'),
      [Symbol('timestamp')]: 1n,
    });

    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'Activity failed',
        sdkComponent: 'activity',
        workflowId: 'thread:user-1:thread-1',
        threadKey: 'thread:user-1:thread-1',
        runId: 'run-1',
        activityType: 'runStep',
        err: expect.objectContaining({ type: 'Error', message: 'model down' }),
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('c2VjcmV0LXRhc2stdG9rZW4=');
  });

  it("keeps to the logger's level", () => {
    const { log, lines } = capture('info');
    const bridge = new TemporalLogBridge(log);

    bridge.debug('Activity started', { activityType: 'runStep' });
    bridge.log('ERROR', 'Worker failed');

    expect(lines.map((line) => [line.level, line.msg])).toEqual([['error', 'Worker failed']]);
  });
});

describe('renderMetrics', () => {
  it("appends each source's text, and leaves a failing one out with a comment naming it", async () => {
    metrics.sseSubscribers.inc();
    const removeGood = addMetricsSource('test-good', async () => '# TYPE test_sdk_metric counter\ntest_sdk_metric 3');
    const removeBad = addMetricsSource('test-bad', async () => {
      throw new Error('connection refused\nsomewhere');
    });
    try {
      const { contentType, body } = await renderMetrics();

      expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(body).toMatch(/^threadline_sse_subscribers \d+$/m);
      expect(body).toContain('# TYPE test_sdk_metric counter\ntest_sdk_metric 3\n');
      expect(body).toContain('# test-bad metrics unavailable: connection refused somewhere\n');
    } finally {
      removeGood();
      removeBad();
      metrics.sseSubscribers.dec();
    }
    expect((await renderMetrics()).body).not.toContain('test_sdk_metric');
  });
});
