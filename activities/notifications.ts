/**
 * The user-code part of notification delivery: an agent's `decide()` callback (behaviour §4.2, first in precedence).
 * Runs as a regular activity; what it answers is recorded, so the workflow replays without calling it again.
 */
import { ApplicationFailure } from '@temporalio/common';
import { deliveryActions, type NotificationInput } from '../protocol/schemas';
import type { ConfiguredDecision } from '../protocol/agent-profile';
import type { AgentRegistry, DecideContext, DecideResult } from '../agents/agent';

export async function decideNotifications(
  agents: AgentRegistry,
  agentId: string,
  notifications: NotificationInput[],
  context: DecideContext,
): Promise<(ConfiguredDecision | null)[]> {
  const decide = agents.get(agentId)?.notifications?.deliveryPolicy?.decide;
  if (!decide) return notifications.map(() => null);
  const decisions: (ConfiguredDecision | null)[] = [];
  for (const notification of notifications) {
    decisions.push(normalise(await decide(notification, context), agentId));
  }
  return decisions;
}

/** Dates become epoch milliseconds; an unknown action is the agent's bug, reported as such (not retried). */
function normalise(result: DecideResult, agentId: string): ConfiguredDecision | null {
  if (result === null || result === undefined) return null;
  const action = typeof result === 'string' ? result : result.action;
  if (!(deliveryActions as readonly string[]).includes(action)) {
    throw ApplicationFailure.nonRetryable(
      `Agent ${agentId}: decide() returned the unknown action ${JSON.stringify(action)}. Use one of ${deliveryActions.join(', ')}.`,
      'InvalidDeliveryDecision',
    );
  }
  if (typeof result === 'string') return result;
  const decision: ConfiguredDecision = { action: result.action };
  if (result.deliverAt !== undefined) decision.deliverAt = +result.deliverAt;
  if (result.summaryAt !== undefined) decision.summaryAt = +result.summaryAt;
  if (result.reason !== undefined) decision.reason = result.reason;
  return decision;
}
