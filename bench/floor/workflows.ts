/**
 * The bare-Temporal floor's workflow: bundled on its own for the floor worker (bench/floor/world.ts), never part of
 * Threadline. One input type arrives by update or by signal; the handler records it and returns, the main loop runs
 * the activities it asks for, one after another, then waits again. As little as a program on Temporal can do for
 * "an input wakes a waiting workflow, which runs an activity".
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineSignal,
  defineUpdate,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { FloorActivities } from './activities';

export interface FloorInput {
  /** Names the sample: the activities it runs carry it, so the harness finds them. */
  marker: string;
  /** Activities to run for this input, in sequence (0: the input is only recorded). */
  activities: number;
}

export interface FloorArgs {
  /** Continue as new after this many inputs in one execution (0: never). */
  continueAsNewAfter: number;
  /** Inputs accepted by the executions before this one. */
  acceptedBefore?: number;
}

/** Answers the number of inputs the workflow has accepted, this one included. */
export const floorInputUpdate = defineUpdate<number, [FloorInput]>('floorInput');
export const floorInputSignal = defineSignal<[FloorInput]>('floorInput');

const { floorWork } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

export async function floorWorkflow({ continueAsNewAfter, acceptedBefore = 0 }: FloorArgs): Promise<void> {
  const queue: FloorInput[] = [];
  let accepted = 0;
  const accept = (input: FloorInput) => {
    accepted += 1;
    if (input.activities > 0) queue.push(input);
    return acceptedBefore + accepted;
  };
  setHandler(floorInputUpdate, accept);
  setHandler(floorInputSignal, (input) => void accept(input));
  const full = () => continueAsNewAfter > 0 && accepted >= continueAsNewAfter;
  for (;;) {
    await condition(() => queue.length > 0 || full());
    if (queue.length === 0) break;
    const input = queue.shift()!;
    for (let step = 0; step < input.activities; step++) await floorWork(input.marker, step);
  }
  await condition(allHandlersFinished);
  await continueAsNew<typeof floorWorkflow>({ continueAsNewAfter, acceptedBefore: acceptedBefore + accepted });
}
