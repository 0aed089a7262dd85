/**
 * Time travel's eyes inside the workflow: what the thread planned at each step, captured while an inspection replays
 * the thread's history (worker/inspect.ts). Three calls in `threadWorkflow`'s step: the thread as it stood before the
 * step was planned (what a fork starts from), the plan (the step's window, with its whole messages), and the signals
 * the step's processors added (returned by the activity: part of what the model saw).
 *
 * Off everywhere but in an inspection replay: this module is also the replay worker's workflow interceptor module
 * (`workflowInterceptorModules`), and only there does its factory switch capturing on. Off, each call is one boolean
 * test: no commands, no history, no sink call. On, the data leaves the sandbox through the `inspection` sink, which
 * only the inspection replay worker registers (`callDuringReplay: true`).
 */
import { proxySinks, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';
import type { StepResult } from '../protocol/messages';
import type { StepPlan } from '../protocol/step';
import type { ThreadSnapshot } from './state';

/** One capture, as the inspection sink receives it. */
export type StepCapture =
  | { point: 'before'; snapshot: ThreadSnapshot }
  | { point: 'planned'; plan: StepPlan }
  | { point: 'completed'; stepKey: string; signals: NonNullable<StepResult['signals']> };

export interface InspectionSinks extends Sinks {
  inspection: { capture(capture: StepCapture): void };
}

/** The sink's name and function, as the replay worker registers them. */
export const INSPECTION_SINK = 'inspection';

let capturing = false;

/** Loaded as an interceptor module by the inspection replay worker only: that is what turns capturing on. */
export const interceptors: WorkflowInterceptorsFactory = () => {
  capturing = true;
  return {};
};

/**
 * Sink calls leave the sandbox at the end of the activation, after the thread changed further: send a copy as it is
 * now (the thread's state is JSON: it travels through continue-as-new).
 */
function capture(make: () => StepCapture): void {
  if (!capturing) return;
  proxySinks<InspectionSinks>().inspection.capture(JSON.parse(JSON.stringify(make())) as StepCapture);
}

/** Right before `planStep`: the thread as it stood before the step (conversation, run, lanes, inbox). */
export function captureBeforeStep(snapshot: () => ThreadSnapshot): void {
  capture(() => ({ point: 'before', snapshot: snapshot() }));
}

/** Right after `planStep`: the plan, with its whole window. */
export function captureStepPlan(plan: StepPlan): void {
  capture(() => ({ point: 'planned', plan }));
}

/** When the step activity returned: the signals its processors added to the prompt. */
export function captureStepResult(plan: StepPlan, result: StepResult): void {
  capture(() => ({ point: 'completed', stepKey: plan.stepKey, signals: result.signals ?? [] }));
}
