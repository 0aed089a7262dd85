/** Workflow interceptor module: the drill's change behind `patched()` (see settle-before-step.ts). */
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { SettleBeforeStep } from './settle-before-step';

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new SettleBeforeStep('patched')] });
