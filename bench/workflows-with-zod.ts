/**
 * The thread workflow as it was bundled before the workflow validated with protocol/validate.ts: zod and the wire
 * schemas are evaluated in every workflow context. Only bench/workflow-context.ts bundles this entry, to measure the
 * "before" side by side with the current bundle.
 */
import '../protocol/schemas';

export { threadWorkflow } from '../workflows';
