/**
 * The bare-Temporal floor: a worker of its own on the bench's dev server, in the bench process, running the floor's
 * trivial workflow and activity (bench/floor/workflows.ts) with exactly the worker options Threadline's `createWorker`
 * passed to `Worker.create` in the same run, less what is Threadline's own (task queue, workflow code, activities,
 * interceptors, sinks). Whatever tuning Threadline's worker gets (pollers, cache, eager activities, throttles), the
 * floor gets too, so a difference between the two is Threadline's and not the settings'.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createFloorActivities, FloorProbe } from './activities';
import { floorInputSignal, floorInputUpdate, floorWorkflow, type FloorInput } from './workflows';

export interface FloorWorld {
  /** The bench's Temporal client (same connection as Threadline's client). */
  client: Client;
  taskQueue: string;
  probe: FloorProbe;
  /** The options the floor worker shares with Threadline's, as JSON-able values (functions and objects named only). */
  sharedSettings: Record<string, string>;
  /** Update-with-start: the first input creates the workflow (`USE_EXISTING`), as Threadline's client does. */
  updateWithStart(workflowId: string, input: FloorInput, continueAsNewAfter?: number): Promise<number>;
  signalWithStart(workflowId: string, input: FloorInput, continueAsNewAfter?: number): Promise<void>;
  update(workflowId: string, input: FloorInput): Promise<number>;
  signal(workflowId: string, input: FloorInput): Promise<void>;
  close(): Promise<void>;
}

/** Options that are Threadline's own, not settings: the floor brings its own. */
const notSettings = [
  'connection',
  'taskQueue',
  'workflowBundle',
  'workflowsPath',
  'activities',
  'interceptors',
  'sinks',
] as const;

/**
 * Records the options the next `Worker.create` call gets (Threadline's `createWorker` makes exactly one), for
 * {@link startFloor}. Call `restore()` once that worker exists.
 */
export function captureWorkerOptions(): { options(): WorkerOptions; restore(): void } {
  const original = Worker.create;
  let captured: WorkerOptions | undefined;
  Worker.create = function (this: typeof Worker, options: WorkerOptions) {
    captured ??= options;
    return original.call(this, options);
  } as typeof Worker.create;
  return {
    options() {
      if (!captured) throw new Error('No Worker.create call was seen: Threadline created no worker.');
      return captured;
    },
    restore: () => void (Worker.create = original),
  };
}

export async function startFloor({
  address,
  client,
  threadlineOptions,
}: {
  address: string;
  client: Client;
  threadlineOptions: WorkerOptions;
}): Promise<FloorWorld> {
  const settings: Partial<WorkerOptions> = { ...threadlineOptions };
  for (const key of notSettings) delete settings[key];
  const taskQueue = `bench-floor-${randomUUID()}`;
  const probe = new FloorProbe();
  const [{ code }, connection] = await Promise.all([
    bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)), logger: quiet }),
    NativeConnection.connect({ address }),
  ]);
  const worker = await Worker.create({
    ...settings,
    connection,
    taskQueue,
    workflowBundle: { code },
    activities: createFloorActivities(probe),
  });
  const running = worker.run();
  const start = (workflowId: string, continueAsNewAfter: number) =>
    new WithStartWorkflowOperation(floorWorkflow, {
      workflowId,
      taskQueue,
      args: [{ continueAsNewAfter }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  return {
    client,
    taskQueue,
    probe,
    sharedSettings: describeSettings(settings),
    updateWithStart: (workflowId, input, continueAsNewAfter = 0) =>
      client.workflow.executeUpdateWithStart(floorInputUpdate, {
        args: [input],
        startWorkflowOperation: start(workflowId, continueAsNewAfter),
      }),
    signalWithStart: async (workflowId, input, continueAsNewAfter = 0) => {
      await client.workflow.signalWithStart(floorWorkflow, {
        workflowId,
        taskQueue,
        args: [{ continueAsNewAfter }],
        signal: floorInputSignal,
        signalArgs: [input],
      });
    },
    update: (workflowId, input) =>
      client.workflow.getHandle(workflowId).executeUpdate(floorInputUpdate, { args: [input] }),
    signal: (workflowId, input) => client.workflow.getHandle(workflowId).signal(floorInputSignal, input),
    async close() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
  };
}

function describeSettings(settings: Partial<WorkerOptions>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(settings)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => [key, typeof value === 'function' ? '(function)' : JSON.stringify(value)]),
  );
}

const noop = () => undefined;
const quiet = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };
