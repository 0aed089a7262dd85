/** bench/ab-heartbeat.ts's bundle: one activity, run with a heartbeat timeout as Threadline's step is. */
import { proxyActivities } from '@temporalio/workflow';

export interface HeartbeatActivities {
  heartbeats(calls: number, gapMs: number): Promise<number>;
}

const { heartbeats } = proxyActivities<HeartbeatActivities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '10 seconds',
});

export async function heartbeatWorkflow(calls: number, gapMs: number): Promise<number> {
  return heartbeats(calls, gapMs);
}
