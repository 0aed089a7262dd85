/**
 * Replays histories in Temporal's JSON form against the workflow code of this installation (bundled once) or a
 * prebuilt bundle: what `threadline history replay` and `history repair` check a thread with.
 */
import { existsSync } from 'node:fs';
import { replaySinks } from '../replay-sinks';
import { UsageError, type CommandContext } from './command';
import type { ReplayEvents } from './divergence';

/** The `--bundle FILE` option of a command that replays: the file must exist (a usage error, exit 2, else). */
export function bundleOption(context: Pick<CommandContext, 'values'>): string | undefined {
  const bundle = context.values.bundle as string | undefined;
  if (bundle !== undefined && !existsSync(bundle)) throw new UsageError(`--bundle: there is no file "${bundle}".`);
  return bundle;
}

/**
 * A replay function for `workflowId`'s histories. The bundle is made (or read) once, on the first call of this
 * function; each replay then runs a replay worker on it.
 */
export async function makeReplayer(workflowId: string, bundlePath: string | undefined): Promise<ReplayEvents> {
  const { Worker, bundleWorkflowCode } = await import('@temporalio/worker');
  const { historyFromJSON } = await import('@temporalio/common/lib/proto-utils');
  await quietRuntime();
  const workflowBundle = bundlePath
    ? { codePath: bundlePath }
    : { code: (await bundleWorkflowCode({ ...(await bundleOptions()), logger: silent })).code };
  return async (events) => {
    const histories = [{ workflowId, history: historyFromJSON({ events }) }];
    for await (const result of Worker.runReplayHistories({ workflowBundle, sinks: replaySinks }, histories))
      return result.error;
    return undefined;
  };
}

async function bundleOptions() {
  return (await import('../index')).threadBundleOptions;
}

/** Replay workers log every failed task; the outcome is reported instead. The host may have a runtime already. */
async function quietRuntime(): Promise<void> {
  const { Runtime, DefaultLogger } = await import('@temporalio/worker');
  try {
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: 'ERROR', forward: {} } },
      shutdownSignals: [],
    });
  } catch {
    // Installed already (a test process, or a host that set up its own).
  }
}

const noop = () => undefined;
const silent = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
