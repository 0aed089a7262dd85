/** Workflow interceptor module: a later release that turns the drill's change off behind a second gate. */
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { SettleBeforeStep } from './settle-before-step';

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new SettleBeforeStep('switched-off')] });
