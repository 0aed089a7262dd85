/**
 * What the thread workflow needs to know about an agent, asked once per execution from the worker that hosts it
 * (agents are worker-side code; the workflow only sees this plain data).
 */
import type { ContextWindowConfig } from './messages';
import type { DeliveryAction, NotificationPriority } from './schemas';

export interface AgentProfile {
  agentId: string;
  /** The agent's own context window (`defineAgent({ contextWindow })`), over the thread's default. */
  contextWindow?: Partial<ContextWindowConfig>;
  /** Lanes the agent's processors own through `computeStateSignal` (their `stateId`, default their `id`). */
  ownedLanes: string[];
  /** `notifications` settings: the plain-data policy, the digest window, and whether `decide()` must be asked. */
  notifications?: { deliveryPolicy?: DeliveryPolicyConfig; digestWindowMs?: number; hasDecide: boolean };
}

/** What the delivery policy decided for one notification (behaviour §4.2). */
export interface DeliveryDecision {
  action: DeliveryAction;
  /** Absolute time (ms since the epoch) of a deferred full delivery. */
  deliverAt?: number;
  /** Absolute time of the summary; default: the thread's next digest. */
  summaryAt?: number;
  reason?: string;
  /** `high` while active: summarized now, delivered in full once the thread is idle. */
  fullWhenIdle?: boolean;
}

/** A decision as configured: an action, or an object with relative or absolute times. */
export type ConfiguredDecision =
  DeliveryAction | { action: DeliveryAction; deliverAt?: number; summaryAt?: number; reason?: string };

/** The plain-data part of an agent's `notifications.deliveryPolicy` (the workflow sees this). */
export interface DeliveryPolicyConfig {
  default?: ConfiguredDecision;
  priorities?: Partial<Record<NotificationPriority, ConfiguredDecision>>;
  sources?: Record<string, ConfiguredDecision>;
}
