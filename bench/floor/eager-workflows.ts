/** bench/eager-start.ts's bundle: the floor's workflow, and one that runs its activity as soon as it starts. */
import { proxyActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';
import type { FloorInput } from './workflows';

export { floorWorkflow } from './workflows';

const { floorWork } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

export async function startedFloorWorkflow(input: FloorInput): Promise<void> {
  for (let step = 0; step < input.activities; step++) await floorWork(input.marker, step);
}
