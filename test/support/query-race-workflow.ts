/**
 * A workflow of the thread workflow's shape for test/workflow/query-task-guard.test.ts: it waits on an activity, takes
 * an update, answers a query, and what it does after the activity depends on whether the update came first (another
 * `step`) or not (`publish`), as the thread's main loop does. `guard` installs the thread workflow's query-task guard.
 */
import {
  condition,
  defineQuery,
  defineUpdate,
  proxyActivities,
  proxySinks,
  setHandler,
  type Sinks,
} from '@temporalio/workflow';
import { installQueryTaskGuard } from '../../workflows/query-task-guard';

export const raceInputUpdate = defineUpdate<void, [string]>('input');
export const raceStateQuery = defineQuery<number>('state');

interface RaceSinks extends Sinks {
  race: { activation(jobs: string[]): void };
}
const { race } = proxySinks<RaceSinks>();

export async function queryRaceWorkflow(guard: boolean): Promise<void> {
  if (guard) installQueryTaskGuard();
  const inputs: string[] = [];
  setHandler(raceInputUpdate, (input) => {
    inputs.push(input);
  });
  setHandler(raceStateQuery, () => inputs.length);
  const { step, publish } = proxyActivities<{ step(): Promise<string>; publish(): Promise<void> }>({
    startToCloseTimeout: '10 minutes',
  });
  await step();
  race.activation(['step resolved', inputs.length > 0 ? 'after the update' : 'before the update']);
  if (inputs.length > 0) await step();
  else await publish();
  await condition(() => inputs.length > 0);
}
