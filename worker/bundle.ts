/**
 * What a thread's worker bundles: the workflow code, the modules its workflows share, and the tracing interceptors.
 * Used by the worker (worker/index.ts re-exports it), `threadline inspect` and every prebuilt bundle.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The workflow code, resolved for the worker's bundler. */
export const workflowsPath = require.resolve('../workflows/index.ts');

/**
 * The thread workflow's dependencies that hold no state of a workflow's own, loaded once per workflow thread and shared
 * by every workflow in it (the bundler's `preloadModules`; the SDK runs every workflow in one reused V8 context, where
 * any other module is evaluated again for each workflow it creates or replays). With each goes what it imports: the
 * protocol's validators and constants, the thread's state classes, the delivery policy, the search attributes and the
 * query-task guard, and the SDK's workflow API. A cached thread's heap fell from 164 KB to 62 KB (docs/limits.md,
 * worker memory). Never listed: modules with module-level state of a workflow's (workflows/thread.ts, tracing.ts,
 * inspection.ts, sinks.ts, inspect-step.ts); test/unit/workflow-bundle.test.ts checks that none is reached.
 */
export const preloadModules = [
  '@temporalio/workflow',
  ...[
    '../protocol/definitions.ts',
    '../protocol/failures.ts',
    '../protocol/ids.ts',
    '../protocol/summaries.ts',
    '../protocol/thread-config.ts',
    '../protocol/validate.ts',
    '../workflows/query-task-guard.ts',
    '../workflows/search-attributes.ts',
    '../workflows/state/index.ts',
    '../workflows/state/step-window.ts',
  ].map((file) => require.resolve(file)),
];

/** What the worker bundles: `bundleWorkflowCode({ ...threadBundleOptions, logger })` for a prebuilt bundle. */
export const threadBundleOptions = { workflowsPath, preloadModules };

/**
 * The workflow interceptor modules a tracing worker bundles (`bundleWorkflowCode({ workflowInterceptorModules })` for
 * a prebuilt bundle): the workflow's spans, continued by Temporal's OpenTelemetry client and activity interceptors.
 */
export const tracingWorkflowModules = [require.resolve('../workflows/tracing.ts')];
