/**
 * The operator commands of `threadline` end to end, against the test dev server with a worker (scripted model,
 * Redis bus): most through `runCli` in-process (the same code path as the binary, without ~1 s of process start per
 * call), `tail` and `doctor` also as real processes for their exit codes and Ctrl-C.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { msToTs } from '@temporalio/common/lib/time';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../agents/agent';
import { createBus } from '../../bus';
import type { EventBus } from '../../bus/types';
import type { ThreadEvent } from '../../protocol/events';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import type { MessagesPage, RecordPage, ThreadView } from '../../protocol/views';
import { runCli } from '../../worker/cli';
import { runThreadline } from '../support/cli';
import { formatThreadName } from '../../worker/commands/thread-name';
import type { HistoryExport } from '../../worker/commands/history-file';
import { afterFinishes, collectUntil, startHarness, testAgent, type Harness } from '../support/harness';
import { startRedis, type RedisServer } from '../support/redis';

const root = fileURLToPath(new URL('../..', import.meta.url));

const ops = defineAgent({
  id: 'ops',
  instructions: 'You run operations.',
  model: 'openai/test-model',
  tools: {
    wipe: {
      description: 'Wipes a scratch folder.',
      inputSchema: z.object({ folder: z.string() }),
      requireApproval: true,
      execute: ({ folder }: { folder: string }) => `wiped ${folder}`,
    },
  },
});

let redis: RedisServer;
let bus: EventBus;
let h: Harness;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  redis = await startRedis();
  bus = createBus({ redisUrl: redis.url });
  h = await startHarness({ agents: [testAgent, ops], bus, threadConfig: { continueAsNewAfterEvents: 60 } });
  dir = await mkdtemp(join(tmpdir(), 'threadline-operator-'));
  // An empty config home: no temporal.toml of the machine's user leaks into the settings.
  env = {
    HOME: dir,
    XDG_CONFIG_HOME: dir,
    TEMPORAL_ADDRESS: h.address,
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    REDIS_URL: redis.url,
  };
});

afterAll(async () => {
  await h?.close();
  await bus?.close();
  await redis?.stop();
});

/** `threadline …` in-process, with the test's settings (plus `extra`). */
const cli = (args: string[], extra: Record<string, string | undefined> = {}, signal?: AbortSignal) =>
  runThreadline(args, { ...env, ...extra }, signal);

const name = (t: ThreadTarget) => formatThreadName(t);

/** Runs `send` and waits for the run it starts to finish, on a subscription made before. */
async function converse(t: ThreadTarget, text: string, reply: string): Promise<ThreadEvent[]> {
  const stream = h.client.subscribeToThread(t).stream;
  h.model.enqueue({ text: reply });
  const sent = await cli(['send', name(t), '--agent', 'tester', text]);
  expect(sent, sent.err).toMatchObject({ code: 0 });
  return collectUntil(stream, afterFinishes(1));
}

describe('reading a thread', () => {
  it('send, then thread show and messages see the conversation', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    h.model.enqueue({ text: 'Hello from the model.' });
    const sent = await cli(['send', name(t), '--agent', 'tester', '--json', 'Hi', 'there']);
    expect(sent.code, sent.err).toBe(0);
    expect(JSON.parse(sent.out)).toMatchObject({ accepted: true, action: 'wake', signalId: expect.any(String) });
    await collectUntil(stream, afterFinishes(1));

    const shown = await cli(['thread', 'show', name(t)]);
    expect(shown.code, shown.err).toBe(0);
    expect(shown.out).toContain(`Thread ${name(t)}`);
    expect(shown.out).toContain('Status: idle');
    expect(shown.out).toContain('Messages: 2, runs completed: 1');
    const view = JSON.parse((await cli(['thread', 'show', '--json', name(t)])).out) as ThreadView;
    expect(view).toMatchObject({ resourceId: t.resourceId, threadId: t.threadId, status: 'idle', messageCount: 2 });

    const messages = await cli(['messages', name(t)]);
    expect(messages.code, messages.err).toBe(0);
    expect(messages.out).toMatch(/user \(user\)\s+Hi there/);
    expect(messages.out).toMatch(/assistant\s+Hello from the model\./);
    const page = JSON.parse((await cli(['messages', name(t), '--limit', '1', '--json'])).out) as MessagesPage;
    expect(page.messages).toHaveLength(1);
    expect(page.hasMore).toBe(true);
    const before = JSON.parse(
      (await cli(['messages', name(t), '--before', page.messages[0].id, '--json'])).out,
    ) as MessagesPage;
    expect(before.messages.map((m) => m.role)).toEqual(['user']);
  });

  it('names the thread with --resource/--thread when an id has a "/"', async () => {
    const t = { resourceId: `team/${h.thread().resourceId}`, threadId: 'a/b' };
    await converse(t, 'hello', 'hi');
    expect(name(t)).toContain('%2F');
    const byName = await cli(['thread', 'show', name(t), '--json']);
    const byOptions = await cli(['thread', 'show', '--resource', t.resourceId, '--thread', t.threadId, '--json']);
    expect(byName.code, byName.err).toBe(0);
    expect(JSON.parse(byName.out)).toEqual(JSON.parse(byOptions.out));
  });

  it('says so and exits 1 for a thread that does not exist', async () => {
    const t = h.thread();
    for (const args of [
      ['thread', 'show', name(t)],
      ['messages', name(t)],
      ['inbox', name(t)],
      ['abort', name(t)],
    ]) {
      const run = await cli(args);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.err).toContain(`No thread ${name(t)}`);
      expect(run.out).toBe('');
    }
  });

  it('threads list finds threads by resource, status, agent and a raw query', async () => {
    const t = h.thread();
    await converse(t, 'hello', 'hi');
    const list = async (...args: string[]) => {
      const run = await cli(['threads', 'list', '--json', ...args]);
      expect(run.code, run.err).toBe(0);
      return JSON.parse(run.out) as { resourceId: string; threadId: string; status: string; runState: string }[];
    };
    // Visibility is eventually consistent: wait until the thread's latest search attributes are listed.
    await vi.waitFor(
      async () =>
        expect(await list('--resource', t.resourceId, '--status', 'idle', '--agent', 'tester')).toHaveLength(1),
      { timeout: 20_000, interval: 200 },
    );
    const [row] = await list('--resource', t.resourceId);
    expect(row).toMatchObject({ ...t, status: 'idle', runState: 'RUNNING' });
    expect(await list('--resource', t.resourceId, '--status', 'running')).toEqual([]);
    expect(await list('--query', `ThreadlineResource = '${t.resourceId}'`, '--limit', '1')).toHaveLength(1);

    const human = await cli(['threads', 'list', '--resource', t.resourceId]);
    expect(human.out).toMatch(/^THREAD\s+STATUS\s+AGENT\s+RUN STATE\s+STARTED/);
    expect(human.out).toContain(`${name(t)}  idle`);

    const bad = await cli(['threads', 'list', '--query', 'NoSuchAttribute = 1']);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('Listing threads failed');
  });
});

describe('acting on a thread', () => {
  it('queue and signal deliver inputs with their routing', async () => {
    const t = h.thread();
    const signal = await cli([
      'signal',
      name(t),
      '--agent',
      'tester',
      '--type',
      'notification',
      '--tag',
      'ci',
      '--attr',
      'branch=main',
      '--if-idle',
      'persist',
      '--json',
      'CI failed',
    ]);
    expect(signal.code, signal.err).toBe(0);
    expect(JSON.parse(signal.out)).toMatchObject({ accepted: true, action: 'persist' });
    const stored = JSON.parse((await cli(['messages', name(t), '--json'])).out) as MessagesPage;
    expect(stored.messages).toEqual([
      expect.objectContaining({
        type: 'notification',
        tagName: 'ci',
        contents: 'CI failed',
        attributes: { branch: 'main' },
      }),
    ]);

    const stream = h.client.subscribeToThread(t).stream;
    h.model.enqueue({ text: 'Queued reply.' });
    const queued = await cli(['queue', name(t), '--agent', 'tester', 'Then this.']);
    expect(queued.code, queued.err).toBe(0);
    expect(queued.out).toMatch(new RegExp(`^${name(t)}: wake, input \\S+, run \\S+`));
    await collectUntil(stream, afterFinishes(1));
  });

  it('approve and decline answer a parked tool call; a second answer and an unknown call exit 1', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    h.model.enqueue({ toolCalls: [{ id: 'call-1', name: 'wipe', args: { folder: 'scratch' } }] });
    expect((await cli(['send', name(t), '--agent', 'ops', 'wipe it'])).code).toBe(0);
    await collectUntil(stream, (e) => e.type === 'tool-call-approval');

    const shown = await cli(['thread', 'show', name(t)]);
    expect(shown.out).toContain('awaiting-approval');
    expect(shown.out).toMatch(/tool call call-1: wipe\(\{"folder":"scratch"\}\) waiting/);

    h.model.enqueue({ text: 'Wiped.' });
    const approved = await cli(['approve', name(t), 'call-1', '--resume-data', '{"by":"ops"}']);
    expect(approved.code, approved.err).toBe(0);
    expect(approved.out).toMatch(/Tool call call-1 of run \S+: approved\./);
    const rest = await collectUntil(stream, afterFinishes(1));
    expect(JSON.stringify(rest.find((e) => e.type === 'tool-result')?.payload)).toContain('wiped scratch');

    const again = await cli(['decline', name(t), 'call-1']);
    expect(again.code).toBe(1);
    const unknown = await cli(['approve', name(t), 'call-404']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('call-404');

    h.model.enqueue({ toolCalls: [{ id: 'call-2', name: 'wipe', args: { folder: 'prod' } }] });
    expect((await cli(['send', name(t), '--agent', 'ops', 'wipe prod'])).code).toBe(0);
    await collectUntil(stream, (e) => e.type === 'tool-call-approval');
    h.model.enqueue({ text: 'Left it.' });
    const declined = await cli(['decline', name(t), 'call-2', '--reason', 'Not on production.', '--json']);
    expect(declined.code, declined.err).toBe(0);
    expect(JSON.parse(declined.out)).toMatchObject({ toolCallId: 'call-2', status: 'declined' });
    await collectUntil(stream, afterFinishes(1));
  });

  it('abort stops the active run, and --clear-pending drops the queued input', async () => {
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    const sent = h.model.requests.length;
    h.model.enqueue({ text: 'Thinking', hang: true });
    expect((await cli(['send', name(t), '--agent', 'tester', 'go'])).code).toBe(0);
    const queued = JSON.parse((await cli(['queue', name(t), '--agent', 'tester', '--json', 'later'])).out) as {
      action: string;
      signalId: string;
    };
    expect(queued.action).toBe('queued');
    await collectUntil(stream, (e) => e.type === 'step-start');
    // Abort only once the hanging reply is taken, so that it cannot stay queued for a later test's run.
    await h.model.waitForRequests(sent + 1, 30_000);
    const aborted = await cli(['abort', name(t), '--clear-pending', '--json']);
    expect(aborted.code, aborted.err).toBe(0);
    expect(JSON.parse(aborted.out)).toMatchObject({
      aborted: true,
      runId: expect.any(String),
      clearedSignalIds: [queued.signalId],
    });
    await collectUntil(stream, (e) => e.type === 'abort');
    const idle = await cli(['abort', name(t)]);
    expect(idle.code, idle.err).toBe(0);
    expect(idle.out).toContain('No run was active');
  });

  it('inbox lists notifications and changes their status', async () => {
    const t = h.thread();
    const sent = await h.client
      .agent('tester')
      .sendNotificationSignal({ source: 'github', kind: 'ci', priority: 'low', summary: 'Build 7 passed.' }, t);
    const id = sent.notifications[0].id;

    const listed = await cli(['inbox', name(t)]);
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out).toMatch(/^ID\s+STATUS\s+PRIORITY\s+SOURCE\s+KIND\s+UPDATED\s+SUMMARY/);
    expect(listed.out).toContain(id);
    expect(listed.out).toContain('Build 7 passed.');

    const seen = await cli(['inbox', name(t), 'seen', id]);
    expect(seen.code, seen.err).toBe(0);
    expect(seen.out.trim()).toBe(`${id}: seen`);
    const page = JSON.parse((await cli(['inbox', name(t), '--status', 'seen', '--json'])).out) as RecordPage;
    expect(page.notifications.map((n) => [n.id, n.status])).toEqual([[id, 'seen']]);
    expect(JSON.parse((await cli(['inbox', name(t), '--source', 'jira', '--json'])).out)).toMatchObject({
      notifications: [],
    });

    const wrong = await cli(['inbox', name(t), 'archive', 'ntf-404']);
    expect(wrong.code).toBe(1);
  });
});

describe('tail', () => {
  it('prints live events as a real process, stops on Ctrl-C (exit 0) and says how to resume', async () => {
    const t = h.thread();
    const child = spawn(process.execPath, ['--import', 'tsx', 'worker/cli.ts', 'tail', name(t), '--json'], {
      cwd: root,
      env: { PATH: process.env.PATH!, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const events: ThreadEvent[] = [];
    const finished = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const lines = stdout.split('\n');
        stdout = lines.pop()!;
        for (const line of lines.filter(Boolean)) {
          events.push(JSON.parse(line) as ThreadEvent);
          if (events.at(-1)!.type === 'finish') resolve();
        }
      });
    });
    try {
      // The process is following once it says so on stderr; an input sent after that is seen.
      await vi.waitFor(() => expect(stderr).toContain(`Following ${name(t)}`), { timeout: 30_000, interval: 50 });
      h.model.enqueue({ text: 'Streamed to the tail.' });
      await h.client.agent('tester').sendMessage('hello tail', t);
      await finished;
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['start', 'text-delta', 'finish']));
    const last = events.at(-1)!.id;
    expect(stderr).toContain(`Resume with: threadline tail ${name(t)} --from-event ${last}`);

    // Resumed after that id (in-process): only what came later.
    const stop = new AbortController();
    const lines: string[] = [];
    const resumed = runCli(['tail', name(t), '--from-event', last], env, {
      out: (line) => {
        lines.push(line);
        if (/\sfinish(\s|$)/.test(line)) stop.abort();
      },
      err: () => {},
      signal: stop.signal,
    });
    h.model.enqueue({ text: 'Second.' });
    await h.client.agent('tester').sendMessage('again', t);
    expect(await resumed).toBe(0);
    const ids = lines.map((line) => line.split(/\s+/)[0]);
    expect(ids).not.toContain(last);
    expect(ids.filter((id) => events.some((e) => e.id === id))).toEqual([]);
    expect(lines.map((line) => line.split(/\s+/)[1])).toEqual(expect.arrayContaining(['start', 'data-user-message']));
  });

  it('without REDIS_URL explains that an in-process bus cannot be tailed, exit 1', async () => {
    const run = await cli(['tail', 'r/t'], { REDIS_URL: undefined });
    expect(run.code).toBe(1);
    expect(run.err).toContain('REDIS_URL is not set');
    expect(run.err).toContain('in-process bus');
  });
});

describe('history', () => {
  it('exports the chain across continue-as-new; the file replays; a tampered one names the diverging event', async () => {
    // Started by the harness's client, so that the thread has its low continue-as-new threshold.
    const t = h.thread();
    const stream = h.client.subscribeToThread(t).stream;
    let turns = 0;
    const turn = async () => {
      turns += 1;
      h.model.enqueue({ text: `answer ${turns}` });
      await h.client.agent('tester').sendMessage(`turn ${turns}`, t);
      await collectUntil(stream, afterFinishes(1));
    };
    // Turns until the thread has continued as new (how many depends on how the server batched the turns' events),
    // then one more, so the second execution has a model step of its own.
    const handle = h.client.temporal.workflow.getHandle(threadKey(t.resourceId, t.threadId));
    await turn();
    const firstRunId = (await handle.describe()).runId;
    while (turns < 12 && (await handle.describe()).runId === firstRunId) await turn();
    await turn();
    const file = join(dir, 'thread.history.json');
    const exported = await cli(['history', 'export', name(t), '--out', file, '--json']);
    expect(exported.code, exported.err).toBe(0);
    const summary = JSON.parse(exported.out) as { executions: number; events: number };
    expect(summary.executions).toBeGreaterThanOrEqual(2);

    const document = JSON.parse(await readFile(file, 'utf8')) as HistoryExport;
    expect(document).toMatchObject({ format: 'threadline-history', resourceId: t.resourceId, threadId: t.threadId });
    expect(document.executions[1].continuedFromRunId).toBe(document.executions[0].runId);

    const bundle = inject('workflowBundlePath');
    const replayed = await cli(['history', 'replay', file, '--bundle', bundle]);
    expect(replayed.code, replayed.out + replayed.err).toBe(0);
    expect(replayed.out).toContain(`All ${summary.executions} execution(s) replay`);

    // The second execution's first model step, renamed in the file: the code schedules `runStep` there.
    const events = document.executions[1].history.events;
    const scheduled = events.find(
      (e) =>
        (e.activityTaskScheduledEventAttributes as { activityType: { name: string } } | undefined)?.activityType
          .name === 'runStep',
    )!;
    (scheduled.activityTaskScheduledEventAttributes as { activityType: { name: string } }).activityType.name =
      'runStepRenamed';
    const tampered = join(dir, 'tampered.history.json');
    await writeFile(tampered, JSON.stringify(document));
    const diverged = await cli(['history', 'replay', tampered, '--bundle', bundle, '--json']);
    expect(diverged.code).toBe(1);
    const result = JSON.parse(diverged.out) as {
      ok: boolean;
      executions: { ok: boolean; divergence?: { eventId: number; eventType: string; name?: string } }[];
    };
    expect(result.ok).toBe(false);
    expect(result.executions[0].ok).toBe(true);
    expect(result.executions[1].divergence).toMatchObject({
      eventId: Number(scheduled.eventId),
      eventType: 'ActivityTaskScheduled',
      name: 'runStepRenamed',
    });
    const human = await cli(['history', 'replay', tampered, '--bundle', bundle]);
    expect(human.out).toContain(`DIVERGES at event ${scheduled.eventId} (ActivityTaskScheduled runStepRenamed)`);

    // The live thread, against the workflow code bundled on the spot.
    const live = await cli(['history', 'replay', name(t)]);
    expect(live.code, live.out + live.err).toBe(0);
    expect(live.out).toContain('against the workflow code of this installation');
  });

  it('refuses a file that is not a history (exit 1) and an unknown thread (exit 1)', async () => {
    const file = join(dir, 'not-history.json');
    await writeFile(file, '{"hello":"world"}');
    const run = await cli(['history', 'replay', file]);
    expect(run.code).toBe(1);
    expect(run.err).toContain('neither a `threadline history export` file nor a Temporal JSON history');
    const missing = await cli(['history', 'export', name(h.thread())]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('No thread');
  });
});

describe('doctor', () => {
  it('passes with a worker polling, Redis and the model endpoint up', async () => {
    const run = await cli(['doctor'], { OPENAI_BASE_URL: h.model.url });
    expect(run.code, run.out).toBe(0);
    for (const check of [
      'Temporal reachable',
      'Namespace "default"',
      'Search attributes',
      'Workers polling',
      'Redis',
    ]) {
      expect(run.out).toMatch(new RegExp(`^PASS  ${check}`, 'm'));
    }
    expect(run.out).toMatch(/^PASS {2}Model endpoint: GET .*\/models: 200/m);
    expect(run.out).toContain('All checks passed.');
  });

  it('fails with the fix printed when no worker polls a fresh task queue, as a real process (exit 1)', async () => {
    const queue = `fresh-${Date.now()}`;
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'worker/cli.ts', 'doctor', '--json'], {
        cwd: root,
        env: { PATH: process.env.PATH!, ...env, TEMPORAL_TASK_QUEUE: queue },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.once('exit', (exit) => resolve({ code: exit, stdout: out }));
    });
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as { ok: boolean; checks: { name: string; status: string; fix?: string }[] };
    expect(report.ok).toBe(false);
    expect(report.checks.find((c) => c.name === `Workers polling "${queue}"`)).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('threadline worker'),
    });
    expect(report.checks.find((c) => c.name === 'Temporal reachable')?.status).toBe('pass');
  });

  it('fails on a Redis and a model endpoint that do not answer, and on a missing namespace', async () => {
    const run = await cli(['doctor'], {
      REDIS_URL: 'redis://127.0.0.1:1',
      OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
      TEMPORAL_NAMESPACE: 'no-such-namespace',
    });
    expect(run.code).toBe(1);
    expect(run.out).toMatch(/^FAIL {2}Namespace "no-such-namespace": does not exist/m);
    expect(run.out).toContain('temporal operator namespace create --namespace no-such-namespace');
    expect(run.out).toMatch(/^SKIP {2}Workers polling/m);
    expect(run.out).toMatch(/^FAIL {2}Redis: redis:\/\/127\.0\.0\.1:1/m);
    expect(run.out).toMatch(/^FAIL {2}Model endpoint: GET http:\/\/127\.0\.0\.1:1\/v1\/models/m);
    expect(run.out).toContain('3 check(s) failed.');
  });

  it('fails in a namespace without the search attributes, saying to run `threadline setup`', async () => {
    const namespace = `fresh-${randomUUID()}`;
    await h.temporal.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    // A new namespace reaches the server's namespace cache within a few seconds.
    await vi.waitFor(
      async () => {
        const run = await cli(['doctor', '--json'], { TEMPORAL_NAMESPACE: namespace });
        const report = JSON.parse(run.out) as {
          checks: { name: string; status: string; detail: string; fix?: string }[];
        };
        expect(report.checks.find((c) => c.name === 'Search attributes')).toMatchObject({
          status: 'fail',
          detail: expect.stringContaining('missing ThreadlineStatus'),
          fix: expect.stringContaining('threadline setup'),
        });
        expect(run.code).toBe(1);
      },
      { timeout: 30_000, interval: 500 },
    );
  });

  it('an unreachable server fails the commands with exit 1 and the fix', async () => {
    const run = await cli(['thread', 'show', 'r/t'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(run.code).toBe(1);
    expect(run.err).toContain('Cannot reach Temporal at 127.0.0.1:1');
  });
});

describe('usage errors exit 2', () => {
  it.each([
    [['send', 'r/t', 'hello'], '--agent is required'],
    [['send', 'r/t', '--agent', 'a'], 'Give the text'],
    [['thread', 'show'], 'Name the thread'],
    [['thread', 'show', 'a/b/c'], 'is not a thread name'],
    [['thread', 'show', 'r/t', 'extra'], 'Unexpected argument "extra"'],
    [['threads', 'frob'], 'Unknown command "threads frob"'],
    [['threads', 'list', '--limit', '0'], '--limit must be a whole number'],
    [['inbox', 'r/t', 'frob', 'x'], 'Unknown inbox action "frob"'],
    [['inbox', 'r/t', '--status', 'unread'], '--status takes'],
    [['signal', 'r/t', '--agent', 'a', '--type', 'user', '--if-idle', 'sleep', 'x'], '--if-idle must be one of'],
    [['signal', 'r/t', '--agent', 'a', '--type', 'shout', 'x'], 'Invalid signal type: shout'],
    [['approve', 'r/t', 'call-1', '--resume-data', '{nope'], '--resume-data must be JSON'],
    [['history', 'replay', 'r/t', '--bundle', '/no/such/bundle.js'], '--bundle: there is no file'],
    [['messages', 'r/t', '--bogus'], "Unknown option '--bogus'"],
  ])('%j', async (args, message) => {
    const run = await cli(args);
    expect(run.code, run.err).toBe(2);
    expect(run.err).toContain(message);
  });

  it('history alone prints its commands (exit 2); --help lists them (exit 0)', async () => {
    const bare = await cli(['history']);
    expect(bare.code).toBe(2);
    expect(bare.err).toContain('Usage: threadline history <export|replay|repair>');
    const help = await cli(['history', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('threadline history replay support.history.json');
  });
});
