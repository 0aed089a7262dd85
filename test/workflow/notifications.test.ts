/**
 * behaviour §4 on a real Temporal dev server (digest windows of a few hundred milliseconds): the built-in delivery table,
 * high = summary now + full once idle, digests (grouping, sorting, low-only without waking), coalescing with a
 * count and under concurrency, a deferred delivery across a worker replacement (one durable timer), failed after 5
 * attempts, the inbox tool, the application API, and 10,000 notifications to one thread across continue-as-new.
 */
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { replaySinks } from '../../worker/replay-sinks';
import { defineAgent } from '../../agents/agent';
import { createNotificationInboxTool, NOTIFICATION_INBOX_TOOL } from '../../agents/tools/notification-inbox';
import type { ThreadEvent } from '../../protocol/events';
import type { NotificationInput, ThreadTarget } from '../../protocol/schemas';
import { threadKey } from '../../protocol/ids';
import type { NotificationRecord } from '../../protocol/views';
import { afterFinishes, collectUntil, startHarness, userTurns, type Harness } from '../support/harness';
import { echoResponder, type ReceivedRequest } from '../support/model-server';

const inboxer = defineAgent({
  id: 'inboxer',
  instructions: 'You read your inbox.',
  model: 'openai/test-model',
  notifications: { digestWindow: 300 },
  tools: { [NOTIFICATION_INBOX_TOOL]: createNotificationInboxTool() },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ agents: [inboxer] });
});
afterEach(() => {
  h.model.setResponder(undefined);
  release?.();
});
afterAll(async () => {
  await h?.close();
});

let release: (() => void) | undefined;
/** The next model request waits until `release()`: the thread stays active meanwhile. */
function holdFirstReply(server = h.model): void {
  let held = false;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  release = open;
  server.setResponder(async (req) => {
    if (!held) {
      held = true;
      await gate;
    }
    return echoResponder(req);
  });
}

const agent = () => h.client.agent('inboxer');
const ci = (extra: Partial<NotificationInput> = {}): NotificationInput => ({
  source: 'github',
  kind: 'ci-status',
  summary: 'CI failed on main: 3 tests failed.',
  ...extra,
});
const changeOf = (change: string) => (e: ThreadEvent) =>
  e.type === 'notification-updated' && (e.payload as { change: string }).change === change;
const promptOf = (req: ReceivedRequest) => userTurns(req.messages).join('\n');

async function record(t: ThreadTarget, id: string, client = h.client): Promise<NotificationRecord> {
  const page = await client.agent('inboxer').listNotifications(t, { limit: 200 });
  return page!.notifications.find((r) => r.id === id)!;
}

/**
 * Reads the inbox until `done` holds. Workflow-decided events of a thread wait for its step boundary (the step in
 * flight publishes first), so tests that hold a step watch the state through the query instead.
 */
async function untilRecord(
  t: ThreadTarget,
  id: string,
  done: (r: NotificationRecord) => boolean,
  client = h.client,
): Promise<NotificationRecord> {
  for (let i = 0; i < 600; i++) {
    const r = await record(t, id, client);
    if (r && done(r)) return r;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `Notification ${id} never reached the expected state: ${JSON.stringify(await record(t, id, client))}`,
  );
}

/** Starts a run whose first reply is held, and waits until the model has the request. */
async function activeThread(): Promise<{ t: ThreadTarget; stream: AsyncIterable<ThreadEvent>; before: number }> {
  const t = h.thread();
  const stream = h.client.subscribeToThread(t).stream;
  const before = h.model.requests.length;
  holdFirstReply();
  await agent().sendMessage('work on something', t);
  await h.model.waitForRequests(before + 1, 30_000);
  return { t, stream, before };
}

describe('the built-in delivery table (behaviour §4.2, §4.3)', () => {
  it('urgent on an idle thread wakes it with the full notification; the record is delivered', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const before = h.model.requests.length;
    const sent = await agent().sendNotificationSignal(ci({ priority: 'urgent' }), t);
    const [outcome] = sent.notifications;
    expect(outcome).toMatchObject({ action: 'deliver', status: 'delivered', coalesced: false });
    const events = await collectUntil(stream, afterFinishes(1));
    expect(promptOf(h.model.requests[before])).toBe(
      `<notification id="${outcome.id}" source="github" type="ci-status" kind="ci-status" priority="urgent" status="delivered">CI failed on main: 3 tests failed.</notification>`,
    );
    expect(events.some(changeOf('created'))).toBe(true);
    const r = await record(t, outcome.id);
    expect(r).toMatchObject({
      status: 'delivered',
      deliveredSignalId: expect.any(String),
      deliveredAt: expect.any(Number),
    });
    expect((await h.client.getThread(t))!.inbox).toMatchObject({ total: 1, delivered: 1, pending: 0 });
  });

  it('urgent while active joins the run at the next step boundary', async () => {
    const { t, stream, before } = await activeThread();
    const sent = await agent().sendNotificationSignal(ci({ priority: 'urgent' }), t);
    expect(sent.notifications[0]).toMatchObject({ action: 'deliver', status: 'delivered' });
    release!();
    await collectUntil(stream, afterFinishes(1));
    expect(promptOf(h.model.requests[before + 1])).toContain('priority="urgent" status="delivered"');
  });

  it('high while active: a summary now, the full notification once the thread is idle', async () => {
    const { t, stream, before } = await activeThread();
    const sent = await agent().sendNotificationSignal(ci({ priority: 'high' }), t);
    expect(sent.notifications[0]).toMatchObject({ action: 'summarize', status: 'pending' });
    release!();
    await collectUntil(stream, afterFinishes(2));
    const runOne = promptOf(h.model.requests[before + 1]);
    expect(runOne).toContain('<notification-summary pending="1" priority="high">github: 1</notification-summary>');
    expect(runOne).not.toContain('<notification id=');
    const runTwo = promptOf(h.model.requests[before + 2]);
    expect(runTwo).toContain(`<notification id="${sent.notifications[0].id}"`);
    expect(await record(t, sent.notifications[0].id)).toMatchObject({
      status: 'delivered',
      summarySignalId: expect.any(String),
    });
  });

  it('medium while active goes out in the next digest; medium on an idle thread wakes it', async () => {
    const { t, stream, before } = await activeThread();
    const sent = await agent().sendNotificationSignal(ci({ priority: 'medium' }), t);
    expect(sent.notifications[0]).toMatchObject({ action: 'summarize', status: 'pending' });
    // The digest goes out while the step is still in flight; the summary joins the run at its boundary.
    await untilRecord(t, sent.notifications[0].id, (r) => r.summarySignalId !== undefined);
    release!();
    await collectUntil(stream, afterFinishes(1));
    expect(promptOf(h.model.requests[before + 1])).toContain('<notification-summary pending="1" priority="medium">');
    const summarized = await record(t, sent.notifications[0].id);
    expect(summarized).toMatchObject({ status: 'pending', summarySignalId: expect.any(String) });
    expect(summarized.summaryAt).toBeUndefined();

    const idle = h.thread();
    const idleSent = await agent().sendNotificationSignal(ci({ priority: 'medium' }), idle);
    expect(idleSent.notifications[0]).toMatchObject({ action: 'deliver', status: 'delivered' });
  });

  it('high on an idle thread wakes it; low while active waits for the digest', async () => {
    const idle = h.thread();
    const idleStream = h.client.subscribeToThread(idle).stream;
    const high = await agent().sendNotificationSignal(ci({ priority: 'high' }), idle);
    expect(high.notifications[0]).toMatchObject({ action: 'deliver', status: 'delivered' });
    await collectUntil(idleStream, afterFinishes(1));

    const { t, stream, before } = await activeThread();
    const low = await agent().sendNotificationSignal(ci({ priority: 'low', source: 'email', kind: 'mail' }), t);
    expect(low.notifications[0]).toMatchObject({ action: 'summarize', status: 'pending' });
    await untilRecord(t, low.notifications[0].id, (r) => r.summarySignalId !== undefined);
    release!();
    await collectUntil(stream, afterFinishes(1));
    expect(promptOf(h.model.requests[before + 1])).toContain(
      '<notification-summary pending="1" priority="low">email: 1</notification-summary>',
    );
  });

  it('low on an idle thread: the digest is stored without waking the thread', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const sent = await agent().sendNotificationSignal(ci({ priority: 'low' }), t);
    expect(sent.notifications[0]).toMatchObject({ action: 'summarize', status: 'pending' });
    const events = await collectUntil(stream, changeOf('summarized'));
    expect(events.some((e) => e.type === 'start')).toBe(false);
    const view = await h.client.getThread(t);
    expect(view).toMatchObject({ status: 'idle', runsCompleted: 0, inbox: { pending: 1 } });
    const { messages } = (await h.client.getMessages(t))!;
    expect(messages).toEqual([
      expect.objectContaining({ type: 'notification', tagName: 'notification-summary', contents: 'github: 1' }),
    ]);
  });

  it('groups one digest: pending count, highest priority, sources sorted by name', async () => {
    const { t, stream, before } = await activeThread();
    const sent = await agent().sendNotificationSignal(
      [
        ci({ priority: 'medium', summary: 'one' }),
        ci({ priority: 'low', source: 'email', kind: 'mail', summary: 'two' }),
        ci({ priority: 'medium', source: 'slack', kind: 'mention', summary: 'three' }),
        ci({ priority: 'medium', summary: 'four' }),
      ],
      t,
    );
    await untilRecord(t, sent.notifications[3].id, (r) => r.summarySignalId !== undefined);
    release!();
    await collectUntil(stream, afterFinishes(1));
    expect(promptOf(h.model.requests[before + 1])).toContain(
      '<notification-summary pending="4" priority="medium">email: 1, github: 2, slack: 1</notification-summary>',
    );
  });
});

describe('coalescing (behaviour §4.1)', () => {
  it('one record per dedupeKey while pending, with a count and the latest summary', async () => {
    const { t } = await activeThread();
    const results = [];
    for (const n of [1, 2, 3]) {
      results.push(
        await agent().sendNotificationSignal(ci({ priority: 'low', summary: `CI failed (${n})`, dedupeKey: 'ci' }), t),
      );
    }
    const ids = new Set(results.map((r) => r.notifications[0].id));
    expect(ids.size).toBe(1);
    expect(results.map((r) => r.notifications[0].coalesced)).toEqual([false, true, true]);
    const r = await record(t, [...ids][0]);
    expect(r).toMatchObject({ coalescedCount: 3, summary: 'CI failed (3)', status: 'pending' });
  });

  it('100 concurrent sends with one dedupeKey make exactly one record', async () => {
    const t = h.thread();
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        agent().sendNotificationSignal(ci({ priority: 'low', summary: `#${i}`, dedupeKey: 'same' }), t),
      ),
    );
    expect(new Set(results.map((r) => r.notifications[0].id)).size).toBe(1);
    const page = await agent().listNotifications(t);
    expect(page!.notifications).toHaveLength(1);
    expect(page!.notifications[0].coalescedCount).toBe(100);
  });
});

describe('the inbox tool and the application API (behaviour §4.4)', () => {
  it('lists (marking seen), reads (the full notification arrives as a signal), searches and archives', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const sent = await agent().sendNotificationSignal(
      [
        ci({ priority: 'low', summary: 'Build red' }),
        ci({ priority: 'low', source: 'email', kind: 'mail', summary: 'Lunch?' }),
      ],
      t,
    );
    const [build, lunch] = sent.notifications.map((n) => n.id);
    await collectUntil(stream, changeOf('summarized'));
    const before = h.model.requests.length;
    let step = 0;
    h.model.setResponder((req) => {
      step += 1;
      if (step === 1) return { toolCalls: [{ id: 'list', name: NOTIFICATION_INBOX_TOOL, args: { action: 'list' } }] };
      if (step === 2)
        return { toolCalls: [{ id: 'read', name: NOTIFICATION_INBOX_TOOL, args: { action: 'read', id: build } }] };
      if (step === 3)
        return {
          toolCalls: [{ id: 'search', name: NOTIFICATION_INBOX_TOOL, args: { action: 'search', query: 'lunch' } }],
        };
      if (step === 4)
        return {
          toolCalls: [{ id: 'archive', name: NOTIFICATION_INBOX_TOOL, args: { action: 'archive', id: lunch } }],
        };
      return echoResponder(req);
    });
    await agent().sendMessage('check your inbox', t);
    const events = await collectUntil(stream, afterFinishes(1));
    const results = events.filter((e) => e.type === 'tool-result').map((e) => e.payload as { output: any }); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(results[0].output.notifications.map((n: { id: string }) => n.id).sort()).toEqual([build, lunch].sort());
    expect(results[0].output.notifications[0]).not.toHaveProperty('payload');
    expect(results[1].output.notifications).toEqual([{ id: build, status: 'seen', injected: true }]);
    expect(results[2].output.notifications.map((n: { id: string }) => n.id)).toEqual([lunch]);
    expect(results[3].output.notification).toMatchObject({ id: lunch, status: 'archived' });
    // The read notification reached the model as a signal in the step after the read.
    expect(promptOf(h.model.requests[before + 2])).toContain(`<notification id="${build}"`);
    expect(await record(t, build)).toMatchObject({ status: 'seen', deliveredSignalId: expect.any(String) });

    // Applications: filters, paging, status changes, 404 for unknown ids.
    const archived = await agent().listNotifications(t, { status: ['archived'] });
    expect(archived!.notifications.map((n) => n.id)).toEqual([lunch]);
    const page1 = await agent().listNotifications(t, { limit: 1 });
    const page2 = await agent().listNotifications(t, { limit: 1, cursor: page1!.nextCursor! });
    expect([page1!.notifications[0].id, page2!.notifications[0].id].sort()).toEqual([build, lunch].sort());
    expect((await agent().dismissNotifications(t, [build]))[0]).toMatchObject({ status: 'dismissed' });
    await expect(agent().markNotificationsSeen(t, ['nope'])).rejects.toThrow(/Unknown notification/);
    await expect(agent().listNotifications(t, { status: ['bogus' as never] })).rejects.toThrow(/status/);
  });
});

describe('the inbox bound', () => {
  it('closed records beyond maxInboxRecords leave for the archive and stay retrievable; open ones never leave', async () => {
    const small = await startHarness({ agents: [inboxer], threadConfig: { maxInboxRecords: 3 } });
    try {
      const t = small.thread();
      const a = small.client.agent('inboxer');
      const first = await a.sendNotificationSignal(
        [1, 2, 3].map((n) => ci({ priority: 'low', summary: `old ${n}` })),
        t,
      );
      const [n1, n2, n3] = first.notifications.map((n) => n.id);
      await a.dismissNotifications(t, [n1]);
      await a.archiveNotifications(t, [n2]);
      // Three open records would exceed the bound with n3 still open: refused, nothing changed.
      await expect(
        a.sendNotificationSignal(
          [4, 5, 6].map((n) => ci({ priority: 'low', summary: `new ${n}` })),
          t,
        ),
      ).rejects.toThrow(/inbox holds 1 open notifications/);
      await a.sendNotificationSignal(
        [4, 5].map((n) => ci({ priority: 'low', summary: `new ${n}` })),
        t,
      );
      const live = await a.listNotifications(t);
      expect(live!.notifications.map((r) => r.summary).sort()).toEqual(['new 4', 'new 5', 'old 3']);
      expect(live!.notifications.some((r) => r.id === n3)).toBe(true);
      let archived = await a.listArchivedNotifications(t);
      for (let i = 0; i < 600 && archived.notifications.length < 2; i++) {
        await new Promise((r) => setTimeout(r, 50));
        archived = await a.listArchivedNotifications(t);
      }
      expect(archived.notifications.map((r) => [r.id, r.status])).toEqual([
        [n2, 'archived'],
        [n1, 'dismissed'],
      ]);
      expect(archived.notifications[0]).toMatchObject({ summary: 'old 2', source: 'github' });
    } finally {
      await small.close();
    }
  });
});

describe('durable delivery', () => {
  it('a deferred notification is delivered once by its timer, across a worker replacement', async () => {
    let dueAt = 0;
    const deciding = defineAgent({
      id: 'deciding',
      instructions: 'You get notified later.',
      model: 'openai/test-model',
      notifications: {
        deliveryPolicy: {
          decide: (input) =>
            input.source === 'later' ? { action: 'defer', deliverAt: (dueAt = Date.now() + 1_500) } : undefined,
        },
      },
    });
    const small = await startHarness({ agents: [deciding] });
    try {
      const t = small.thread();
      const stream = small.client.subscribeToThread(t).stream;
      const sent = await small.client
        .agent('deciding')
        .sendNotificationSignal({ source: 'later', kind: 'reminder', summary: 'Stand-up in 5 minutes.' }, t);
      expect(sent.notifications[0]).toMatchObject({ action: 'defer', status: 'pending' });
      const handle = small.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
      const timerStarted = async () => (await handle.fetchHistory()).events!.some((e) => e.timerStartedEventAttributes);
      while (!(await timerStarted())) await new Promise((r) => setTimeout(r, 50));
      await small.worker!.shutdown();
      // No worker while the timer is due: the server keeps the timer, a new worker delivers once.
      while (Date.now() < dueAt + 200) await new Promise((r) => setTimeout(r, 100));
      await small.startWorker();
      await collectUntil(stream, afterFinishes(1));
      expect(userTurns(small.model.requests[0].messages).join('\n')).toContain('Stand-up in 5 minutes.');
      const history = await handle.fetchHistory();
      expect(history.events!.filter((e) => e.timerFiredEventAttributes)).toHaveLength(1);
      const page = await small.client.agent('deciding').listNotifications(t);
      expect(page!.notifications[0]).toMatchObject({ status: 'delivered', deliveryReason: 'policy' });
    } finally {
      await small.close();
    }
  });

  it('a record that fails delivery 5 times becomes failed', async () => {
    const small = await startHarness({
      agents: [inboxer],
      threadConfig: { maxPendingInputs: 0, notificationRetryMs: 50 },
    });
    try {
      const t = small.thread();
      holdFirstReply(small.model);
      await small.client.agent('inboxer').sendMessage('busy', t);
      await small.model.waitForRequests(1, 30_000);
      const sent = await small.client.agent('inboxer').sendNotificationSignal(ci({ priority: 'urgent' }), t);
      expect(sent.notifications[0]).toMatchObject({ status: 'pending' });
      const failed = await untilRecord(t, sent.notifications[0].id, (r) => r.status === 'failed', small.client);
      expect(failed).toMatchObject({
        status: 'failed',
        deliveryAttempts: 5,
        lastDeliveryError: expect.stringContaining('inputs waiting'),
      });
    } finally {
      release?.();
      await small.close();
    }
  });
});

describe('volume', () => {
  it('10,000 notifications in bursts: coalesced exactly, continued as new, nothing lost', async () => {
    const big = await startHarness({ agents: [inboxer], threadConfig: { continueAsNewAfterEvents: 150 } });
    try {
      const t = big.thread();
      const a = big.client.agent('inboxer');
      const keys = 500;
      for (let burst = 0; burst < 10; burst++) {
        await Promise.all(
          Array.from({ length: 10 }, (_, b) =>
            a.sendNotificationSignal(
              Array.from({ length: 100 }, (_, i) => {
                const n = burst * 1_000 + b * 100 + i;
                return ci({ priority: 'low', summary: `event ${n}`, dedupeKey: `k${n % keys}` });
              }),
              t,
            ),
          ),
        );
      }
      const all: NotificationRecord[] = [];
      let cursor: string | undefined;
      do {
        const page = await a.listNotifications(t, { limit: 200, ...(cursor ? { cursor } : {}) });
        all.push(...page!.notifications);
        cursor = page!.nextCursor ?? undefined;
      } while (cursor);
      expect(all).toHaveLength(keys);
      const counts = all.map((r) => r.coalescedCount);
      expect(
        counts.reduce((sum, n) => sum + n, 0),
        `counts: ${JSON.stringify(counts)}`,
      ).toBe(10_000);
      expect(new Set(all.map((r) => r.dedupeKey)).size).toBe(keys);
      // The current execution continued from an earlier one (the list API's visibility lags; the history does not).
      const handle = big.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
      const history = await big.temporal.workflow
        .getHandle(handle.workflowId, (await handle.describe()).runId)
        .fetchHistory();
      const previousRunId = history.events![0].workflowExecutionStartedEventAttributes!.continuedExecutionRunId;
      expect(previousRunId).toBeTruthy();
      // The busiest history of the test (bursts of updates, digests on the timer, continue-as-new) replays cleanly.
      // Histories of this size exceed gRPC's default 4 MB message limit: read them on a connection that allows more.
      const wide = await Connection.connect({
        address: big.address,
        channelArgs: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
      });
      try {
        const previous = await new Client({ connection: wide }).workflow
          .getHandle(handle.workflowId, previousRunId!)
          .fetchHistory();
        await Worker.runReplayHistory(
          { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: replaySinks },
          previous,
        );
      } finally {
        await wide.close();
      }
    } finally {
      await big.close();
    }
  }, 240_000);
});
