/**
 * The thread's search attributes and Temporal UI summaries on a real dev server: found by status while running,
 * parked on an approval and idle after, by resource and agent, through the client and the `temporal` CLI; kept across
 * continue-as-new; summaries on the workflow and its activities; `threadline setup` idempotent, and a worker refused
 * in a namespace without the attributes.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowExecutionInfo } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../agents/agent';
import { connect } from '../../client/connect';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import {
  agentSearchAttribute,
  lastInputAtSearchAttribute,
  openNotificationsSearchAttribute,
  pendingApprovalsSearchAttribute,
  resourceSearchAttribute,
  statusSearchAttribute,
  threadSearchAttributes,
} from '../../protocol/search-attributes';
import { createWorker } from '../../worker/index';
import { runCli } from '../../worker/cli';
import { SearchAttributesError, checkSearchAttributes, registerSearchAttributes } from '../../client/search-attributes';
import { afterFinishes, collectUntil, startHarness, testAgent, type Harness } from '../support/harness';

const admin = defineAgent({
  id: 'admin',
  instructions: 'You administer repositories.',
  model: 'openai/test-model',
  tools: {
    deleteRepo: {
      description: 'Deletes a repository.',
      inputSchema: z.object({ repo: z.string() }),
      requireApproval: true,
      execute: ({ repo }: { repo: string }) => `deleted ${repo}`,
    },
  },
});

let h: Harness;
beforeAll(async () => {
  // A low threshold, so that a few turns cross continue-as-new.
  h = await startHarness({ agents: [testAgent, admin], threadConfig: { continueAsNewAfterEvents: 60 } });
});
afterAll(async () => {
  await h?.close();
});

/** Visibility is eventually consistent: re-query until `done` holds, failing after a generous bound. */
async function listUntil(
  query: string,
  done: (executions: WorkflowExecutionInfo[]) => boolean,
  timeoutMs = 30_000,
): Promise<WorkflowExecutionInfo[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const executions: WorkflowExecutionInfo[] = [];
    for await (const execution of h.temporal.workflow.list({ query })) executions.push(execution);
    if (done(executions)) return executions;
    if (Date.now() > deadline) {
      throw new Error(`Visibility did not answer ${query} as expected within ${timeoutMs} ms: ${executions.length}`);
    }
    await pause(50); // between polls, not a guess at how long visibility takes
  }
}

/** The cached `temporal` binary against the test server; resolves with its stdout. */
async function temporalCli(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(inject('temporalCliPath'), [...args, '--address', h.address]);
  return stdout;
}

const ofThread = (t: ThreadTarget) => `WorkflowId = '${threadKey(t.resourceId, t.threadId)}'`;
const running = (executions: WorkflowExecutionInfo[]) => executions.filter((e) => e.status.name === 'RUNNING');
const found = (executions: WorkflowExecutionInfo[]) => running(executions).length === 1;

describe('thread search attributes', () => {
  it('find a running thread, by status, resource and agent, and the same thread idle after its run', async () => {
    const t = h.thread();
    const sent = h.model.requests.length;
    h.model.enqueue({ text: 'Thinking…', hang: true });
    const stream = h.client.subscribeToThread(t).stream;
    await h.client.agent('tester').sendMessage('hello', t);
    // The hanging reply must be taken before the abort: an abort that lands before the model request leaves it queued,
    // and the next test's run would get it instead of its own script.
    await h.model.waitForRequests(sent + 1, 30_000);
    const [execution] = await listUntil(`${ofThread(t)} AND ThreadlineStatus = 'running'`, found);
    expect(execution.typedSearchAttributes.get(resourceSearchAttribute)).toBe(t.resourceId);
    expect(execution.typedSearchAttributes.get(agentSearchAttribute)).toBe('tester');
    expect(execution.typedSearchAttributes.get(pendingApprovalsSearchAttribute)).toBe(0);
    expect(execution.typedSearchAttributes.get(lastInputAtSearchAttribute)).toBeInstanceOf(Date);
    await listUntil(`ThreadlineResource = '${t.resourceId}' AND ThreadlineAgent = 'tester'`, found);

    await h.client.abortThread(t);
    await collectUntil(stream, (e) => e.type === 'abort');
    const [idle] = await listUntil(`${ofThread(t)} AND ThreadlineStatus = 'idle'`, found);
    // The last run's agent stays: "threads of agent X" includes idle ones.
    expect(idle.typedSearchAttributes.get(agentSearchAttribute)).toBe('tester');
  });

  it('show a run parked on an approval, with the approvals waiting, then idle once decided', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    h.model.enqueue({ toolCalls: [{ id: 'call-1', name: 'deleteRepo', args: { repo: 'acme/app' } }] });
    await h.client.agent('admin').sendMessage('please delete it', t);
    await collectUntil(stream, (e) => e.type === 'tool-call-approval');
    const parked = `${ofThread(t)} AND ThreadlineStatus = 'awaiting-approval' AND ThreadlinePendingApprovals = 1`;
    await listUntil(parked, found);
    await listUntil(`ThreadlinePendingApprovals > 0 AND ThreadlineResource = '${t.resourceId}'`, found);

    h.model.enqueue({ text: 'Deleted it.' });
    await h.client.agent('admin').sendToolApproval({ ...t, toolCallId: 'call-1', approved: true });
    await collectUntil(stream, afterFinishes(1));
    const [idle] = await listUntil(`${ofThread(t)} AND ThreadlineStatus = 'idle'`, found);
    expect(idle.typedSearchAttributes.get(pendingApprovalsSearchAttribute)).toBe(0);
    expect(idle.typedSearchAttributes.get(agentSearchAttribute)).toBe('admin');
  });

  it('count open notifications', async () => {
    const t = h.thread();
    await h.client.agent('tester').sendNotificationSignal(
      [
        { source: 'ci', kind: 'build', summary: 'Build failed', priority: 'low' },
        { source: 'ci', kind: 'deploy', summary: 'Deployed', priority: 'low' },
      ],
      t,
    );
    const [execution] = await listUntil(`${ofThread(t)} AND ThreadlineOpenNotifications = 2`, found);
    expect(execution.typedSearchAttributes.get(openNotificationsSearchAttribute)).toBe(2);
  });

  it('are found by the temporal CLI too', async () => {
    const t = h.thread();
    h.model.enqueue({ text: 'Hi.' });
    const stream = h.client.subscribeToThread(t).stream;
    await h.client.agent('tester').sendMessage('hello', t);
    await collectUntil(stream, afterFinishes(1));
    const query = `ThreadlineResource = '${t.resourceId}' AND ThreadlineStatus = 'idle'`;
    await listUntil(query, found);
    const stdout = await temporalCli(['workflow', 'list', '--query', query, '--output', 'json']);
    const listed = JSON.parse(stdout) as { execution: { workflowId: string } }[];
    expect(listed.map((e) => e.execution.workflowId)).toEqual([threadKey(t.resourceId, t.threadId)]);
  });

  it('carry over continue-as-new: the next execution starts with them and upserts only what changes', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    await h.client.agent('tester').sendMessage('turn 0', t);
    const firstRunId = (await handle.describe()).runId;
    await collectUntil(stream, afterFinishes(1));
    for (let turn = 1; (await handle.describe()).runId === firstRunId; turn++) {
      if (turn > 10) throw new Error('The thread never continued as new.');
      await h.client.agent('tester').sendMessage(`turn ${turn}`, t);
      await collectUntil(stream, afterFinishes(1));
    }
    const current = await handle.describe();
    expect(current.typedSearchAttributes.get(statusSearchAttribute)).toBe('idle');
    expect(current.typedSearchAttributes.get(agentSearchAttribute)).toBe('tester');
    expect(current.typedSearchAttributes.get(resourceSearchAttribute)).toBe(t.resourceId);
    expect(current.typedSearchAttributes.get(lastInputAtSearchAttribute)).toBeInstanceOf(Date);
    const events = (await handle.fetchHistory()).events ?? [];
    const started = events[0].workflowExecutionStartedEventAttributes!;
    expect(started.continuedExecutionRunId).toBe(firstRunId);
    expect(Object.keys(started.searchAttributes?.indexedFields ?? {}).sort()).toEqual(
      threadSearchAttributes.map((key) => key.name).sort(),
    );
    // The turn that crossed the boundary runs in the new execution: its run start changes the status (and the last
    // input, when the input arrived in this execution rather than in the snapshot), nothing else.
    const upserted = new Set(
      events.flatMap((e) =>
        Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
      ),
    );
    expect(upserted).toContain('ThreadlineStatus');
    // TemporalChangeVersion: sdk-core's own upsert beside the execution's patch marker (workflows/thread.ts).
    const allowed = ['ThreadlineStatus', 'ThreadlineLastInputAt', TEMPORAL_CHANGE_VERSION];
    expect([...upserted].filter((name) => !allowed.includes(name))).toEqual([]);
  });

  it('cost two history events in a one-step turn: one upsert when the run starts, one when it ends', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    await h.client.agent('tester').sendMessage('one', t);
    await collectUntil(stream, afterFinishes(1));
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    const upserts = ((await handle.fetchHistory()).events ?? []).flatMap((e) => {
      const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
      return fields ? [Object.keys(fields).sort()] : [];
    });
    // The resource was set by the client at start. Before them, in the first workflow task, sdk-core's upsert of
    // TemporalChangeVersion beside each patch marker every execution records (workflows/thread.ts
    // `SETTLE_BEFORE_ACTING_PATCH`, workflows/search-attributes.ts `LOOP_STAMPS_LAST_INPUT_PATCH`): once per
    // execution, not per turn.
    expect(upserts).toEqual([
      [TEMPORAL_CHANGE_VERSION],
      [TEMPORAL_CHANGE_VERSION],
      [
        'ThreadlineAgent',
        'ThreadlineLastInputAt',
        'ThreadlineOpenNotifications',
        'ThreadlinePendingApprovals',
        'ThreadlineStatus',
      ],
      ['ThreadlineStatus'],
    ]);
  });
});

/** The search attribute sdk-core upserts with every patch marker (a KeywordList of the execution's patch ids). */
const TEMPORAL_CHANGE_VERSION = 'TemporalChangeVersion';

describe('Temporal UI summaries', () => {
  it('summarize the thread’s workflow, its current state and each activity', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    h.model.enqueue({ toolCalls: [{ id: 'call-1', name: 'deleteRepo', args: { repo: 'acme/app' } }] });
    await h.client.agent('admin').sendMessage('please delete it', t);
    await collectUntil(stream, (e) => e.type === 'tool-call-approval');
    const handle = h.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    const description = await handle.describe();
    expect(await description.staticSummary()).toBe(`thread ${t.threadId} · ${t.resourceId}`);
    expect(await description.staticDetails()).toContain(`\`${t.resourceId}\``);
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toMatch(/^\*\*awaiting-approval\*\* · agent `admin` · step 1/);

    h.model.enqueue({ text: 'Deleted it.' });
    await h.client.agent('admin').sendToolApproval({ ...t, toolCallId: 'call-1', approved: true });
    await collectUntil(stream, afterFinishes(1));
    const converter = h.temporal.options.loadedDataConverter.payloadConverter;
    const summaries = ((await handle.fetchHistory()).events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes && e.userMetadata?.summary
        ? [converter.fromPayload<string>(e.userMetadata.summary)]
        : [],
    );
    // No `describe admin`: the client started the thread with the agent's announced profile (docs/architecture.md).
    expect(summaries).toEqual(expect.arrayContaining(['step 1 · admin', 'tool deleteRepo', 'step 2 · admin']));
    expect(summaries.some((s) => /^publish \d+ events?$/.test(s))).toBe(true);
  });
});

describe('threadline setup', () => {
  let connection: Connection;
  beforeAll(async () => {
    connection = await Connection.connect({ address: h.address });
  });
  afterAll(async () => {
    await connection?.close();
  });

  /** A namespace of its own, so registering starts from nothing. */
  async function freshNamespace(): Promise<string> {
    const namespace = `setup-${randomUUID()}`;
    await temporalCli(['operator', 'namespace', 'create', '--namespace', namespace]);
    return namespace;
  }

  it('answers that the test server has every attribute already, and changes nothing (idempotent)', async () => {
    const out: string[] = [];
    const err: string[] = [];
    for (let i = 0; i < 2; i++) {
      const io = { out: (text: string) => out.push(text), err: (text: string) => err.push(text) };
      expect(await runCli(['setup'], { TEMPORAL_ADDRESS: h.address }, io)).toBe(0);
    }
    expect(err).toEqual([]);
    expect(out[0]).toBe(out[1]);
    expect(out[1]).toContain('Nothing to do');
    for (const key of threadSearchAttributes) expect(out[1]).toMatch(new RegExp(`${key.name} .* already registered`));
  });

  it('registers what a namespace lacks, once; a worker refuses the namespace before, the check passes after', async () => {
    const namespace = await freshNamespace();
    const native = await NativeConnection.connect({ address: h.address });
    try {
      const worker = createWorker({
        agents: [testAgent],
        bus: h.bus,
        connection: native,
        namespace,
        taskQueue: `refused-${randomUUID()}`,
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      await expect(worker).rejects.toBeInstanceOf(SearchAttributesError);
      await expect(worker).rejects.toThrow(
        /lacks the search attributes ThreadlineStatus \(Keyword\).*threadline setup/,
      );
    } finally {
      await native.close();
    }
    // A client there cannot start a thread either (the start sets ThreadlineResource), and says what to do.
    const bare = await connect({ bus: h.bus, client: new Client({ connection, namespace }), taskQueue: 'bare' });
    await expect(bare.agent('tester').sendMessage('hello', h.thread())).rejects.toThrow(
      /search attribute ThreadlineResource\. Register Threadline's search attributes .*: run `threadline setup`\.$/,
    );
    expect(await registerSearchAttributes(connection, namespace)).toEqual({
      added: threadSearchAttributes.map((key) => key.name),
      present: [],
    });
    expect(await registerSearchAttributes(connection, namespace)).toEqual({
      added: [],
      present: threadSearchAttributes.map((key) => key.name),
    });
    await expect(checkSearchAttributes(connection, namespace)).resolves.toBeUndefined();
    // At once, with the server's search-attribute cache on (worker/dev-server.ts): a start sets ThreadlineResource. A
    // persist-only signal goes by signal-with-start, which the server answers without a worker in this namespace.
    const thread = h.thread();
    const persisted = { ...thread, ifIdle: { behavior: 'persist' }, ifActive: { behavior: 'persist' } } as const;
    await expect(
      bare.agent('tester').sendSignal({ type: 'user', contents: 'after setup' }, persisted),
    ).resolves.toEqual(expect.objectContaining({ accepted: true, action: 'persist' }));
    const started = await connection.workflowService.describeWorkflowExecution({
      namespace,
      execution: { workflowId: threadKey(thread.resourceId, thread.threadId) },
    });
    expect(started.workflowExecutionInfo?.searchAttributes?.indexedFields?.ThreadlineResource).toBeDefined();
  });

  it('refuses an attribute registered with another type, naming both', async () => {
    const namespace = await freshNamespace();
    const wrong = defineSearchAttributeKey('ThreadlinePendingApprovals', SearchAttributeType.KEYWORD);
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: { [wrong.name]: 2 } });
    const refusal = registerSearchAttributes(connection, namespace);
    await expect(refusal).rejects.toBeInstanceOf(SearchAttributesError);
    await expect(refusal).rejects.toThrow('ThreadlinePendingApprovals is Keyword, Threadline needs Int');
  });
});
