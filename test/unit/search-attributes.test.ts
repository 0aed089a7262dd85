import { TypedSearchAttributes, type SearchAttributePair } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  LAST_INPUT_RESOLUTION_MS,
  agentSearchAttribute,
  lastInputAtSearchAttribute,
  openNotificationsSearchAttribute,
  pendingApprovalsSearchAttribute,
  resourceSearchAttribute,
  searchAttributeChanges,
  statusSearchAttribute,
  threadSearchValues,
  type ThreadSearchValues,
} from '../../protocol/search-attributes';
import { currentDetails, oneLine, stepSummary, threadSummary } from '../../protocol/summaries';
import { input, newThread, stepResult } from './state/support';

const idle: ThreadSearchValues = {
  status: 'idle',
  agent: null,
  resource: 'r',
  pendingApprovals: 0,
  openNotifications: 0,
  lastInputAt: null,
};

/** What an execution has after upserting `values` (absent values are not set). */
function executionWith(values: ThreadSearchValues): TypedSearchAttributes {
  return new TypedSearchAttributes().updateCopy(searchAttributeChanges(new TypedSearchAttributes(), values));
}

const names = (pairs: { key: { name: string } }[]) => pairs.map((p) => p.key.name);

describe('thread search attributes', () => {
  it('follow the view: status, agent, approvals waiting, open notifications, last input', () => {
    const { thread, clock } = newThread();
    thread.accept(input('m1', { agentId: 'support' }));
    const plan = thread.planStep();
    thread.parkTools(plan, stepResult([{ toolCallId: 'c1', toolName: 'deleteRepo', input: {}, approval: {} }], ''));
    thread.acceptNotifications({
      id: 'b1',
      agentId: 'support',
      notifications: [{ source: 's', kind: 'k', summary: 'x', priority: 'low' }],
    });
    expect(threadSearchValues(thread.view(), { lastAgent: null, lastInputAt: thread.lastInputAt })).toEqual({
      status: 'awaiting-approval',
      agent: 'support',
      resource: 'r',
      pendingApprovals: 1,
      openNotifications: 1,
      lastInputAt: clock.now(),
    });
  });

  it('keep the last run’s agent once the thread is idle', () => {
    const { thread } = newThread();
    expect(threadSearchValues(thread.view(), { lastAgent: 'support', lastInputAt: null })).toMatchObject({
      status: 'idle',
      agent: 'support',
    });
  });

  it('upsert nothing when nothing changed, and only what changed otherwise, in one batch', () => {
    const running = { ...idle, status: 'running' as const, agent: 'support', lastInputAt: 5_000 };
    const execution = executionWith(running);
    expect(searchAttributeChanges(execution, running)).toEqual([]);
    const done = { ...running, status: 'idle' as const };
    expect(searchAttributeChanges(execution, done)).toEqual([{ key: statusSearchAttribute, value: 'idle' }]);
  });

  it('set every attribute on an execution that has none (the agent once there is one)', () => {
    expect(names(searchAttributeChanges(new TypedSearchAttributes(), idle))).toEqual([
      statusSearchAttribute.name,
      resourceSearchAttribute.name,
      pendingApprovalsSearchAttribute.name,
      openNotificationsSearchAttribute.name,
    ]);
    const started: SearchAttributePair[] = [{ key: resourceSearchAttribute, value: 'r' }];
    const changes = searchAttributeChanges(new TypedSearchAttributes(started), {
      ...idle,
      status: 'running',
      agent: 'support',
      lastInputAt: 1_000,
    });
    expect(changes).toContainEqual({ key: agentSearchAttribute, value: 'support' });
    expect(changes).toContainEqual({ key: lastInputAtSearchAttribute, value: new Date(1_000) });
    expect(names(changes)).not.toContain(resourceSearchAttribute.name);
  });

  it('write a newer last input alone only once it moved by the resolution; with another change, exactly', () => {
    const execution = executionWith({ ...idle, lastInputAt: 1_000 });
    expect(searchAttributeChanges(execution, { ...idle, lastInputAt: 1_000 + LAST_INPUT_RESOLUTION_MS - 1 })).toEqual(
      [],
    );
    expect(searchAttributeChanges(execution, { ...idle, lastInputAt: 1_000 + LAST_INPUT_RESOLUTION_MS })).toEqual([
      { key: lastInputAtSearchAttribute, value: new Date(1_000 + LAST_INPUT_RESOLUTION_MS) },
    ]);
    expect(searchAttributeChanges(execution, { ...idle, openNotifications: 1, lastInputAt: 1_500 })).toEqual([
      { key: openNotificationsSearchAttribute, value: 1 },
      { key: lastInputAtSearchAttribute, value: new Date(1_500) },
    ]);
  });

  it('take the thread setting for the last input resolution', () => {
    const execution = executionWith({ ...idle, lastInputAt: 1_000 });
    expect(searchAttributeChanges(execution, { ...idle, lastInputAt: 3_999 }, 3_000)).toEqual([]);
    expect(searchAttributeChanges(execution, { ...idle, lastInputAt: 4_000 }, 3_000)).toEqual([
      { key: lastInputAtSearchAttribute, value: new Date(4_000) },
    ]);
  });

  it('cut keyword values to 255 characters, on a code point, and see the cut value as unchanged', () => {
    const resource = '😀'.repeat(300);
    const [pair] = searchAttributeChanges(executionWith(idle), { ...idle, resource });
    expect(pair.key).toBe(resourceSearchAttribute);
    expect(Array.from(pair.value as string)).toHaveLength(255);
    expect(searchAttributeChanges(executionWith({ ...idle, resource }), { ...idle, resource })).toEqual([]);
  });
});

describe('Temporal UI summaries', () => {
  it('are one line within the server’s summary limit, cut on a code point', () => {
    expect(stepSummary({ stepNumber: 3, agentId: 'support-agent' })).toBe('step 3 · support-agent');
    expect(oneLine('a\nb\tc')).toBe('a b c');
    const long = threadSummary({ resourceId: 'r', threadId: '€'.repeat(500) });
    expect(new TextEncoder().encode(long).length).toBeLessThanOrEqual(190);
    expect(long.endsWith('…')).toBe(true);
    expect(long).not.toContain('\uFFFD');
    // JSON escaping at most doubles it: still under the server's 400 bytes.
    expect(new TextEncoder().encode(JSON.stringify(oneLine('"'.repeat(500)))).length).toBeLessThanOrEqual(400);
  });

  it('describe the thread’s current state', () => {
    const { thread } = newThread();
    expect(currentDetails(thread.view())).toBe('**idle**\n0 open notifications · 0 messages · 0 runs completed');
    thread.accept(input('m1', { agentId: 'support' }));
    const plan = thread.planStep();
    thread.parkTools(plan, stepResult([{ toolCallId: 'c1', toolName: 'deleteRepo', input: {}, approval: {} }], ''));
    expect(currentDetails(thread.view())).toMatch(
      /^\*\*awaiting-approval\*\* · agent `support` · step 1 · run `id-1`\nwaiting for approval: `deleteRepo`\n/,
    );
  });
});
