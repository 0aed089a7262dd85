/**
 * What the thread workflow needs to know about an agent, asked once per execution from the worker that hosts it
 * (agents are worker-side code; the workflow only sees this plain data).
 */
import type { DeliveryPolicyConfig } from './delivery-policy';
import type { ContextWindowConfig } from './messages';

export interface AgentProfile {
  agentId: string;
  /** The agent's own context window (`defineAgent({ contextWindow })`), over the thread's default. */
  contextWindow?: Partial<ContextWindowConfig>;
  /** Lanes the agent's processors own through `computeStateSignal` (their `stateId`, default their `id`). */
  ownedLanes: string[];
  /** `notifications` settings: the plain-data policy, the digest window, and whether `decide()` must be asked. */
  notifications?: { deliveryPolicy?: DeliveryPolicyConfig; digestWindowMs?: number; hasDecide: boolean };
}
