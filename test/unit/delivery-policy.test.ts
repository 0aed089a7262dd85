import { describe, expect, it } from 'vitest';
import { notificationPriorities } from '../../protocol/schemas';
import { builtInDecision, decideDelivery } from '../../workflows/delivery-policy';
import { type DeliveryPolicyConfig } from '../../protocol/agent-profile';

describe('built-in delivery table (behaviour §4.2)', () => {
  const table = {
    urgent: { active: 'deliver', idle: 'deliver' },
    high: { active: 'summarize', idle: 'deliver' },
    medium: { active: 'summarize', idle: 'deliver' },
    low: { active: 'summarize', idle: 'summarize' },
  } as const;
  for (const priority of notificationPriorities) {
    for (const state of ['active', 'idle'] as const) {
      it(`${priority} while ${state} → ${table[priority][state]}`, () => {
        const decision = decideDelivery({ source: 'github', priority }, state === 'active', undefined);
        expect(decision.action).toBe(table[priority][state]);
        // Only `high` while active is summarized now and delivered in full once idle.
        expect(decision.fullWhenIdle === true).toBe(priority === 'high' && state === 'active');
      });
    }
  }
});

describe('precedence: decide() → sources → priorities → default → built-in', () => {
  const policy: DeliveryPolicyConfig = {
    default: 'persist',
    priorities: { low: 'discard', medium: { action: 'defer', deliverAt: 5_000 } },
    sources: { pagerduty: 'deliver' },
  };
  const layers = [
    { name: 'decide()', decided: 'queue' as const, source: 'pagerduty', priority: 'low' as const, want: 'queue' },
    { name: 'sources', decided: null, source: 'pagerduty', priority: 'low' as const, want: 'deliver' },
    { name: 'priorities', decided: null, source: 'github', priority: 'low' as const, want: 'discard' },
    { name: 'priorities (object)', decided: null, source: 'github', priority: 'medium' as const, want: 'defer' },
    { name: 'default', decided: null, source: 'github', priority: 'urgent' as const, want: 'persist' },
  ];
  for (const layer of layers) {
    for (const active of [true, false]) {
      it(`${layer.name} wins (${active ? 'active' : 'idle'})`, () => {
        const decision = decideDelivery(
          { source: layer.source, priority: layer.priority },
          active,
          policy,
          layer.decided,
        );
        expect(decision.action).toBe(layer.want);
      });
    }
  }

  it('keeps deliverAt/summaryAt/reason of an object decision', () => {
    expect(decideDelivery({ source: 'x', priority: 'medium' }, true, policy)).toEqual({
      action: 'defer',
      deliverAt: 5_000,
      reason: 'policy',
    });
  });

  it('falls through to the built-in table when nothing is configured for the input', () => {
    const only: DeliveryPolicyConfig = { sources: { slack: 'discard' } };
    for (const priority of notificationPriorities) {
      for (const active of [true, false]) {
        expect(decideDelivery({ source: 'github', priority }, active, only)).toEqual(builtInDecision(priority, active));
      }
    }
  });
});
