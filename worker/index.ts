/**
 * The worker side of Threadline: host agents, run thread workflows and their activities.
 */
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import { NativeConnection, Worker, type InjectedSinks, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import { defaultStepWindowCacheLimits, StepWindowCache, type StepWindowCacheLimits } from '../activities/step-window';
import { StepCancelNotices } from '../activities/cancel-notices';
import { AgentRegistry, type AgentDefinition } from '../agents/agent';
import { ModelResolver, type ModelSettings } from '../agents/models';
import type { EventBus } from '../bus/types';
import type { ThreadlineSinks } from '../workflows/sinks';
import { summarizeAgents } from '../agents/summary';
import type { AgentSummary } from '../protocol/api';
import { definitions } from '../config/definitions';
import { DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, DEFAULT_TEMPORAL_ADDRESS } from '../config/settings';
import { wholeNumber, type ValueType } from '../config/types';
import { logger } from '../observability';
import { currentTracing, type Tracing } from '../observability/tracing';
import { checkSearchAttributes } from '../client/search-attributes';
import { inspectionActivities } from './inspect';
import { preloadModules, threadBundleOptions, tracingWorkflowModules, workflowsPath } from './bundle';

export { preloadModules, threadBundleOptions, tracingWorkflowModules, workflowsPath };

export interface CreateWorkerOptions {
  agents: AgentDefinition[];
  bus: EventBus;
  /**
   * An existing connection (with TLS, API key: see `temporalConnectionOptions` in config/), or a plain address to
   * connect to (default 127.0.0.1:7233). Nothing is read from the environment: the entry points do that.
   */
  connection?: NativeConnection;
  address?: string;
  /** Default `default`. */
  namespace?: string;
  /** Default `threadline`. */
  taskQueue?: string;
  /** Default: no model settings, so agents without a model of their own use the offline demo model. */
  models?: ModelSettings;
  /**
   * A prebuilt bundle (`bundleWorkflowCode({ ...threadBundleOptions })`), to skip bundling at start-up (tests, fast
   * restarts). A tracing worker's bundle needs `workflowInterceptorModules: tracingWorkflowModules` for its workflow
   * spans.
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** How long shutdown waits for in-flight activities before handing them back (default 10 s; a whole number ≥ 0). */
  shutdownGraceTimeMs?: number;
  /**
   * How long a cached thread's next workflow task waits on this worker's sticky queue before any worker may take it
   * (`THREADLINE_STICKY_QUEUE_TIMEOUT_MS`, default 10 s; a whole number ≥ 1,000, else `createWorker` throws before
   * connecting).
   */
  stickyQueueTimeoutMs?: number;
  /**
   * Bounds of the cache of each thread's latest step window (`activities/step-window.ts`; default 1,000 threads and
   * 64 MiB). A miss costs the step a query to its workflow, never a wrong window.
   */
  stepWindowCache?: Partial<StepWindowCacheLimits>;
  worker?: Partial<WorkerOptions>;
}

export interface ThreadlineWorker {
  worker: Worker;
  agents: AgentRegistry;
  /** Runs until `shutdown()` (or SIGINT/SIGTERM, which the Temporal worker handles by default). */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

export async function createWorker(options: CreateWorkerOptions): Promise<ThreadlineWorker> {
  checkDurations(options);
  const agents = new AgentRegistry(options.agents);
  const modelSettings = options.models ?? {};
  const models = new ModelResolver(modelSettings);
  const ownConnection = options.connection
    ? null
    : await NativeConnection.connect({ address: options.address ?? DEFAULT_TEMPORAL_ADDRESS });
  const connection = options.connection ?? ownConnection!;
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  // Threads keep Threadline's search attributes current; in a namespace without them each of their workflow tasks
  // would fail, again and again. Refuse to start instead, saying to run `threadline setup` (docs/operations.md).
  try {
    await checkSearchAttributes(connection, namespace, (message) => logger('worker').warn(message));
  } catch (err) {
    await ownConnection?.close();
    throw err;
  }
  const cancelNotices = new StepCancelNotices(options.bus);
  const tracing = currentTracing();
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : { workflowsPath, bundlerOptions: { preloadModules } }),
    activities: {
      ...createActivities({
        agents,
        bus: options.bus,
        models,
        cancelNotices,
        windows: new StepWindowCache({ ...defaultStepWindowCacheLimits, ...options.stepWindowCache }),
      }),
      // Time travel (`threadline inspect`, `fork`): replays a thread's history with this worker's code and agents.
      ...inspectionActivities({ agents, models: modelSettings, workflowsPath }),
    },
    // In-flight steps get this long to finish on shutdown; after it they are cancelled and retried elsewhere.
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 10_000,
    // After a worker dies, its threads' next workflow tasks wait this long on its sticky queue before any worker takes
    // them (a worker that shuts down gracefully hands its sticky queue back at once). Shorter is not better: a busy
    // worker's tasks time out too, move to the normal queue and cost a replay; at 3 s the notification bench's worker
    // spiralled (367 timed-out tasks, inputs refused), at 10 s (Temporal's default) it had none. docs/performance.md.
    stickyQueueScheduleToStartTimeout: options.stickyQueueTimeoutMs ?? definitions.stickyQueueTimeoutMs.default,
    // Tool activities have no heartbeat timeout, so their heartbeats are throttled to this interval (SDK default 30 s):
    // it bounds how long an aborted run's tool keeps running before its abortSignal fires.
    defaultHeartbeatThrottleInterval: '1 second',
    // A step's heartbeats are otherwise throttled to 80% of its heartbeat timeout (8 s): an interrupt or abort whose
    // cancel notice is lost (stepSinks below) would reach the provider request that late. One a second bounds it.
    maxHeartbeatThrottleInterval: '1 second',
    ...(tracing && { interceptors: tracingInterceptors }),
    ...options.worker,
    sinks: { ...options.worker?.sinks, ...stepSinks(options.bus), ...tracingSinks(tracing) },
  }).catch(async (err: unknown) => {
    await cancelNotices.close();
    throw err;
  });
  const announcer = announceAgents(options.bus, summarizeAgents(options.agents, modelSettings));
  let running: Promise<void> | null = null;
  return {
    worker,
    agents,
    run() {
      running ??= worker.run().finally(async () => {
        announcer.stop();
        await cancelNotices.close();
        await ownConnection?.close();
      });
      return running;
    },
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}

/**
 * The workflow's cancellation of a step reaches the activity in a heartbeat response, throttled (above) to one a
 * second; the notice goes over the bus to whichever worker runs the step, which stops the model call at once
 * (activities/cancel-notices.ts). Not awaited: sink calls run before the worker completes the workflow task.
 */
function stepSinks(bus: EventBus): InjectedSinks<ThreadlineSinks> {
  return {
    threadlineSteps: {
      cancelRequested: {
        fn: (info, notice) => {
          bus.sendNotice({ type: 'step-cancel', namespace: info.namespace, ...notice }).catch((err: Error) => {
            logger('worker').warn({ err }, 'Sending a cancel notice failed: the step hears of it by heartbeat.');
          });
        },
      },
    },
  };
}

/**
 * With tracing on (observability/tracing.ts): a span per activity under the span that scheduled it, and the workflow's
 * spans from the sandbox, which hands them out through a sink to be exported with the process's.
 */
const tracingInterceptors: WorkerOptions['interceptors'] = {
  workflowModules: tracingWorkflowModules,
  activity: [
    (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
  ],
};

function tracingSinks(tracing: Tracing | null): InjectedSinks<OpenTelemetrySinks> | undefined {
  return tracing ? { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) } : undefined;
}

/**
 * Tells gateways which agents this worker hosts (they list and check agents from the bus, without agent code): at
 * start and then every 30 s, so a restarted Redis learns them again. A failed announcement is retried on the next.
 */
function announceAgents(bus: EventBus, summaries: AgentSummary[]): { stop(): void } {
  const announce = () =>
    bus.announceAgents(summaries).catch((err: Error) => {
      logger('worker').warn({ err }, 'Announcing agents on the bus failed (retrying in 30 s).');
    });
  void announce();
  const timer = setInterval(() => void announce(), 30_000).unref();
  return { stop: () => clearInterval(timer) };
}

export { defineAgent, type AgentDefinition, type AgentTool, type ToolContext } from '../agents/agent';

/**
 * The durations a caller passes in milliseconds, checked before anything is connected, by the same rules as their
 * environment variables (the sticky timeout at least 1,000, as THREADLINE_STICKY_QUEUE_TIMEOUT_MS): the SDK would take a
 * fraction, a negative or a sticky timeout under a second and fail later, or behave oddly.
 */
function checkDurations({ stickyQueueTimeoutMs, shutdownGraceTimeMs }: CreateWorkerOptions): void {
  const check = (name: string, value: number | undefined, type: ValueType<number>) => {
    if (value !== undefined) type.parse(String(value), { name: `createWorker's ${name}`, shown: String(value) });
  };
  check('stickyQueueTimeoutMs', stickyQueueTimeoutMs, definitions.stickyQueueTimeoutMs.type);
  check('shutdownGraceTimeMs', shutdownGraceTimeMs, wholeNumber(0));
}
