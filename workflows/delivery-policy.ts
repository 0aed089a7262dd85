/**
 * Which way a notification reaches the model (behaviour §4.2). A pure function of the notification, the thread's state
 * (read from the workflow itself) and the agent's policy: no clock, no I/O. `decide()` callbacks are user code and
 * run in an activity; their answer comes in here as `decided`.
 */
import type { NotificationPriority } from '../protocol/schemas';
import type { ConfiguredDecision, DeliveryDecision, DeliveryPolicyConfig } from '../protocol/agent-profile';

export interface PolicyInput {
  source: string;
  priority: NotificationPriority;
}

/** Built-in table (behaviour §4.2), by priority and thread state. */
export function builtInDecision(priority: NotificationPriority, active: boolean): DeliveryDecision {
  switch (priority) {
    case 'urgent':
      return { action: 'deliver', reason: 'urgent' };
    case 'high':
      return active
        ? { action: 'summarize', fullWhenIdle: true, reason: 'high priority while active: summary now, full once idle' }
        : { action: 'deliver', reason: 'high priority, thread idle' };
    case 'medium':
      return active
        ? { action: 'summarize', reason: 'medium priority while active: next digest' }
        : { action: 'deliver', reason: 'medium priority, thread idle' };
    case 'low':
      return { action: 'summarize', reason: active ? 'low priority: next digest' : 'low priority: digest, no wake' };
  }
}

/**
 * Precedence: `decide()` → `sources[source]` → `priorities[priority]` → `default` → built-in. A `high` notification
 * summarized by the built-in rule while active is delivered in full once the thread is idle; a configured
 * `summarize` means just that.
 */
export function decideDelivery(
  input: PolicyInput,
  active: boolean,
  policy: DeliveryPolicyConfig | undefined,
  decided?: ConfiguredDecision | null,
): DeliveryDecision {
  const configured =
    decided ?? policy?.sources?.[input.source] ?? policy?.priorities?.[input.priority] ?? policy?.default;
  if (configured === undefined || configured === null) return builtInDecision(input.priority, active);
  if (typeof configured === 'string') return { action: configured, reason: 'policy' };
  return { reason: 'policy', ...configured };
}

export const priorityRank: Record<NotificationPriority, number> = { urgent: 0, high: 1, medium: 2, low: 3 };
