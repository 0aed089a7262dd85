/** Workflow interceptor module: the drill's change without a gate, the mistake the replay check must catch. */
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { SettleBeforeStep } from './settle-before-step';

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new SettleBeforeStep('none')] });
