/**
 * A Threadline worker as a process of its own, for tests that kill workers for real (SIGKILL) and start new ones.
 * Started by `startWorkerProcess()` (test/support/processes.ts); prints `READY` on stdout once it polls, then runs
 * until killed. SIGINT/SIGTERM shut it down gracefully.
 *
 * Settings (environment):
 *   TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE   the dev server and the test's task queue
 *   REDIS_URL                               the event bus shared with the test process
 *   OPENAI_BASE_URL                         the scripted model server
 *   THREADLINE_WORKFLOW_BUNDLE              path of the prebundled workflow code (global setup writes it)
 *   THREADLINE_TEST_AGENTS                  comma-separated ids of the test agents to host (default `tester`;
 *                                           the table is test/support/test-agents.ts)
 *   THREADLINE_TEST_TOOL_LOG                optional file where every tool call appends a JSON line
 *   THREADLINE_TEST_ACTIVITIES_ONLY         `1`: run activities only, no workflow tasks (another process runs those)
 *   THREADLINE_WORKER_HTTP_PORT             optional: the Runtime as `worker/main.ts` installs it (JSON logs at warn,
 *                                           the SDK's metrics) and its `/health` + `/metrics` listener on this
 *                                           loopback port (`0`: any), announced as `HTTP <url>` before `READY`
 *   LOG_LEVEL                               with THREADLINE_WORKER_HTTP_PORT: the log level (default warn)
 *   THREADLINE_TEMPORAL_CORE_LOG_FILTER     optional: the Runtime as `worker/main.ts` installs it, with this filter
 *                                           for the Rust core's lines (config/definitions.ts); they go to stdout, or
 *                                           with THREADLINE_TEST_WORKER_LOG_DIR to `worker-<pid>.jsonl` in that
 *                                           directory (a SIGKILLed worker's lines stay there for a look afterwards)
 */
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { RedisBus } from '../../bus/redis';
import { createWorker } from '../../worker/index';
import { serveWorkerHttp } from '../../worker/http';
import { installTemporalRuntime } from '../../worker/telemetry';
import { configureLogging, type LogLevel } from '../../observability';
import { testAgentsFromEnv } from './test-agents';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set. startWorkerProcess() passes it; set it when running this by hand.`);
  return value;
}

const httpPort = process.env.THREADLINE_WORKER_HTTP_PORT;
const coreLogFilter = process.env.THREADLINE_TEMPORAL_CORE_LOG_FILTER || undefined;
const logDir = process.env.THREADLINE_TEST_WORKER_LOG_DIR;
if (httpPort || coreLogFilter) {
  const level = (process.env.LOG_LEVEL as LogLevel | undefined) ?? 'warn';
  const destination = logDir
    ? pino.destination({ dest: join(logDir, `worker-${process.pid}.jsonl`), sync: true })
    : undefined;
  configureLogging({ level, destination });
  await installTemporalRuntime({ logLevel: level, coreLogFilter, metrics: Boolean(httpPort) });
} else {
  Runtime.install({ logger: new DefaultLogger('WARN') });
}
const bus = new RedisBus(required('REDIS_URL'));
const worker = await createWorker({
  agents: testAgentsFromEnv(),
  bus,
  address: required('TEMPORAL_ADDRESS'),
  taskQueue: required('TEMPORAL_TASK_QUEUE'),
  models: { openaiBaseUrl: required('OPENAI_BASE_URL'), openaiApiKey: 'test' },
  workflowBundle: { codePath: required('THREADLINE_WORKFLOW_BUNDLE') },
  shutdownGraceTimeMs: 1_000,
  ...(process.env.THREADLINE_TEST_ACTIVITIES_ONLY === '1' && {
    worker: { workflowBundle: undefined, workflowsPath: undefined },
  }),
});
const running = worker.run();
const http = httpPort ? await serveWorkerHttp({ worker: worker.worker, port: Number(httpPort) }) : null;
if (http) console.log(`HTTP ${http.url}`);
console.log('READY');
await running;
await http?.close();
await bus.close();
