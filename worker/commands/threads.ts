/**
 * Reading threads: `threads list` (Temporal visibility), `thread show` (the thread's view), `messages` (its stored
 * conversation) and `tail` (its live events from the bus).
 */
import type { WorkflowExecutionInfo } from '@temporalio/client';
import type { ThreadlineClient } from '../../client/connect';
import type { ThreadEvent } from '../../protocol/events';
import { parseThreadKey, threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import type { ThreadView } from '../../protocol/views';
import { EXIT, type Command, type CommandContext, type CommandGroup } from './command';
import { contentsText, json, limitOption, messageLine, oneLine, table, time } from './format';
import { commandSettings, found, withSession } from './session';
import { formatThreadName, noMore, threadArgument, threadOptionHelp, threadOptions } from './thread-name';
import { filterAttributes, threadListQuery } from '../../client/thread-list';

const jsonOption = { json: { type: 'boolean' } } as const;

const list: Command = {
  summary: 'List threads through Temporal visibility: resource, thread, status, agent, run state, start time.',
  usage: '[--status S] [--agent A] [--resource R] [--query Q] [--limit N] [--json]',
  options: {
    ...jsonOption,
    status: { type: 'string' },
    agent: { type: 'string' },
    resource: { type: 'string' },
    query: { type: 'string' },
    limit: { type: 'string' },
  },
  optionHelp: {
    '--status <status>': `Threads with this ${filterAttributes.status}: idle, running or awaiting-approval.`,
    '--agent <id>': `Threads whose ${filterAttributes.agent} is this agent (the active run's, else the last run's).`,
    '--resource <id>': `Threads of this resource (${filterAttributes.resource}).`,
    '--query <query>': 'A raw visibility query, ANDed with the rest (e.g. "StartTime > \'2026-01-01T00:00:00Z\'").',
    '--limit <n>': 'At most this many threads (1-10000, default 50).',
    '--json': 'A JSON array: { resourceId, threadId, workflowId, runId, status, agent, runState, startTime }.',
  },
  examples: [
    'threadline threads list',
    'threadline threads list --status awaiting-approval --agent assistant',
    'threadline threads list --resource user-42 --query "StartTime > \'2026-01-01T00:00:00Z\'" --json',
  ],
  async run({ values, env, out }) {
    const limit = limitOption(values.limit, 10_000) ?? 50;
    const query = threadListQuery({
      status: values.status as string | undefined,
      agent: values.agent as string | undefined,
      resource: values.resource as string | undefined,
      query: values.query as string | undefined,
    });
    const rows = await withSession(env, async ({ temporal }) => {
      const listed: ReturnType<typeof threadRow>[] = [];
      try {
        for await (const execution of temporal.workflow.list({ query, pageSize: Math.min(limit, 1_000) })) {
          listed.push(threadRow(execution));
          if (listed.length >= limit) break;
        }
      } catch (err) {
        throw new Error(visibilityError(err, query), { cause: err });
      }
      return listed;
    });
    if (values.json) {
      out(json(rows));
    } else if (rows.length === 0) {
      out('No threads.');
    } else {
      out(
        table(
          ['THREAD', 'STATUS', 'AGENT', 'RUN STATE', 'STARTED'],
          rows.map((row) => [
            row.resourceId !== null && row.threadId !== null
              ? formatThreadName({ resourceId: row.resourceId, threadId: row.threadId })
              : row.workflowId,
            row.status ?? '—',
            row.agent ?? '—',
            row.runState,
            row.startTime,
          ]),
        ),
      );
    }
    return EXIT.ok;
  },
};

function threadRow(execution: WorkflowExecutionInfo) {
  const ids = parseThreadKey(execution.workflowId);
  const attribute = (name: string) => {
    const value = execution.typedSearchAttributes.getAll().find((pair) => pair.key.name === name)?.value;
    return value === undefined ? null : Array.isArray(value) ? value.join(',') : String(value);
  };
  return {
    resourceId: ids?.resourceId ?? null,
    threadId: ids?.threadId ?? null,
    workflowId: execution.workflowId,
    runId: execution.runId,
    status: attribute(filterAttributes.status),
    agent: attribute(filterAttributes.agent),
    runState: execution.status.name,
    startTime: time(execution.startTime),
  };
}

function visibilityError(err: unknown, query: string): string {
  const message = (err as Error).message;
  const unknown = Object.values(filterAttributes).find((name) => message.includes(name));
  if (unknown) {
    return `The server does not know the search attribute ${unknown} (${message}). Register the thread search attributes: run \`threadline setup\`.`;
  }
  return `Listing threads failed for the query \`${query}\`: ${message}`;
}

const show: Command = {
  summary: "A thread's state: status, active run (and tool calls awaiting approval), queue, lanes, inbox counts.",
  usage: 'RESOURCE/THREAD [--json]',
  options: { ...jsonOption, ...threadOptions },
  positionals: true,
  optionHelp: { ...threadOptionHelp, '--json': 'The thread view as JSON (what `getThread` returns).' },
  examples: [
    'threadline thread show user-42/support',
    'threadline thread show --resource acme/team --thread t1 --json',
  ],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    const view = await withSession(context.env, async ({ threadline, settings }) =>
      found(await threadline.getThread(target), target, settings),
    );
    context.out(context.values.json ? json(view) : describeThread(target, view));
    return EXIT.ok;
  },
};

function describeThread(target: ThreadTarget, view: ThreadView): string {
  const lines = [`Thread ${formatThreadName(target)} (workflow id ${threadKey(target.resourceId, target.threadId)})`];
  lines.push(`Status: ${view.status}`);
  const run = view.activeRun;
  if (run) {
    lines.push(
      `Active run: ${run.runId}, agent ${run.agentId}, step ${run.stepNumber}, ${run.status}, ${run.pendingInputs} pending input(s)`,
    );
    for (const a of run.approvals) {
      lines.push(
        `  tool call ${a.toolCallId}: ${a.toolName}(${oneLine(JSON.stringify(a.args), 60)}) ${a.status}, requested ${time(a.requestedAt)}` +
          (a.expiresAt ? `, expires ${time(a.expiresAt)}` : ''),
      );
    }
  } else {
    lines.push('Active run: none');
  }
  lines.push(`Queue: ${view.queue.length === 0 ? 'empty' : `${view.queue.length} run(s)`}`);
  for (const queued of view.queue) {
    lines.push(`  ${queued.runId}, agent ${queued.agentId}, inputs ${queued.inputIds.join(', ')}`);
  }
  lines.push(`Messages: ${view.messageCount}, runs completed: ${view.runsCompleted}`);
  lines.push(`Lanes: ${view.lanes.length === 0 ? 'none' : ''}`.trimEnd());
  for (const lane of view.lanes) {
    lines.push(
      `  ${lane.id}: version ${lane.version}, ${lane.currentMode}, cache key ${lane.currentCacheKey}, updated ${time(lane.updatedAt)}`,
    );
  }
  const { total, ...byStatus } = view.inbox;
  const counts = Object.entries(byStatus)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${status} ${n}`);
  lines.push(`Inbox: ${total} record(s)${counts.length ? ` (${counts.join(', ')})` : ''}`);
  return lines.join('\n');
}

const messages: Command = {
  summary: "A thread's stored messages, oldest first: inputs, assistant steps, tool results.",
  usage: 'RESOURCE/THREAD [--limit N] [--before MESSAGE_ID] [--json]',
  options: { ...jsonOption, ...threadOptions, limit: { type: 'string' }, before: { type: 'string' } },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--limit <n>': 'The newest N messages (1-1000; default: the thread’s default page).',
    '--before <id>': 'Page backwards: the messages before this message id.',
    '--json': '{ messages, hasMore }, as `getMessages` returns it.',
  },
  examples: ['threadline messages user-42/support --limit 20', 'threadline messages user-42/support --before msg-17'],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    const limit = limitOption(context.values.limit, 1_000);
    const before = context.values.before as string | undefined;
    const page = await withSession(context.env, async ({ threadline, settings }) =>
      found(await threadline.getMessages(target, { limit, before }), target, settings),
    );
    if (context.values.json) {
      context.out(json(page));
    } else {
      const lines = page.messages.map(messageLine);
      if (lines.length === 0) lines.push('No messages.');
      if (page.hasMore && page.messages.length > 0) {
        lines.push(`(older messages: --before ${page.messages[0].id})`);
      }
      context.out(lines.join('\n'));
    }
    return EXIT.ok;
  },
};

const tail: Command = {
  summary: "Print a thread's live events from the bus (REDIS_URL) until Ctrl-C; resume after an event id.",
  usage: 'RESOURCE/THREAD [--from-event ID] [--json]',
  options: { ...jsonOption, ...threadOptions, 'from-event': { type: 'string' } },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--from-event <id>':
      'Resume after this event id (the last one printed); 0: every event the bus retains. Default: from the start of the active run, else new events.',
    '--json': 'One JSON event per line (NDJSON).',
  },
  examples: [
    'REDIS_URL=redis://127.0.0.1:6379 threadline tail user-42/support',
    'threadline tail user-42/support --from-event 1718000000000-3 --json | jq .type',
  ],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    if (!commandSettings(context.env).redisUrl) {
      throw new Error(
        'tail reads events from the bus, and REDIS_URL is not set. Without it each worker keeps its events in its own ' +
          'process (the in-process bus), which no other process can read. Set REDIS_URL to the Redis your workers use.',
      );
    }
    const fromEvent = context.values['from-event'] as string | undefined;
    return withSession(context.env, (session) => follow(context, session.threadline, target, fromEvent), {
      bus: true,
    });
  },
};

async function follow(
  { values, out, err, signal }: CommandContext,
  threadline: ThreadlineClient,
  target: ThreadTarget,
  fromEvent: string | undefined,
): Promise<number> {
  const subscription = threadline.subscribeToThread(target, { lastEventId: fromEvent });
  const stop = () => subscription.unsubscribe();
  if (signal) signal.addEventListener('abort', stop, { once: true });
  else process.once('SIGINT', stop);
  let lastId = fromEvent;
  err(`Following ${formatThreadName(target)}${fromEvent ? ` after event ${fromEvent}` : ''}; Ctrl-C stops.`);
  try {
    for await (const event of subscription.stream) {
      lastId = event.id;
      out(values.json ? JSON.stringify(event) : eventLine(event));
    }
  } finally {
    if (signal) signal.removeEventListener('abort', stop);
    else process.off('SIGINT', stop);
  }
  if (lastId) err(`Stopped. Resume with: threadline tail ${formatThreadName(target)} --from-event ${lastId}`);
  return EXIT.ok;
}

function eventLine(event: ThreadEvent): string {
  const payload = event.payload as Record<string, unknown> | null;
  let detail: string;
  switch (event.type) {
    case 'text-delta':
    case 'reasoning-delta':
      detail = JSON.stringify(payload?.text ?? '');
      break;
    case 'data-user-message':
    case 'data-signal':
      detail = oneLine(contentsText((payload?.contents ?? '') as Parameters<typeof contentsText>[0]));
      break;
    default:
      detail = payload === undefined || payload === null ? '' : oneLine(JSON.stringify(payload), 120);
  }
  return [event.id, event.type, event.runId ? `run ${event.runId}` : '', detail].filter(Boolean).join('  ');
}

export const threadsCommand: CommandGroup = {
  summary: 'List threads through Temporal visibility (`threads list`).',
  subcommands: { list },
};

export const threadCommand: CommandGroup = {
  summary: "Show one thread's state (`thread show R/T`).",
  subcommands: { show },
};

export { messages as messagesCommand, tail as tailCommand };
