/**
 * The sinks a replay worker registers: the thread workflow calls its sinks during replay too (the worker just does not
 * run them), and a sink no worker registered is logged as an error on every replay. Nothing here runs.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { ThreadlineSinks } from '../workflows/sinks';

export const replaySinks: InjectedSinks<ThreadlineSinks> = {
  threadlineSteps: { cancelRequested: { fn: () => undefined } },
};
