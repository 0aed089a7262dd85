/**
 * Acting on a thread: `send`, `queue` and `signal` deliver inputs as an agent would (the thread starts on its first
 * input); `abort` stops the active run; `approve` and `decline` answer a tool call the run is parked on.
 */
import type { SendResult } from '../../client/connect';
import type { ThreadTarget } from '../../protocol/schemas';
import { activeBehaviors, idleBehaviors, type ActiveBehavior, type IdleBehavior } from '../../protocol/vocabulary';
import { EXIT, UsageError, type Command, type CommandContext } from './command';
import { json } from './format';
import { found, withSession } from './session';
import { formatThreadName, noMore, threadArgument, threadOptionHelp, threadOptions } from './thread-name';

const common = {
  json: { type: 'boolean' },
  agent: { type: 'string' },
  id: { type: 'string' },
  ...threadOptions,
} as const;

const commonHelp = {
  ...threadOptionHelp,
  '--agent <id>': 'The agent the input is for (required).',
  '--id <id>': 'Idempotency key: an input id the thread already accepted is not applied twice.',
  '--json': "The thread's answer as JSON: { accepted, action, signalId, runId?, duplicate? }.",
};

/** The thread, the agent, the text (the remaining arguments, joined by spaces) and the optional input id. */
function inputArguments(context: CommandContext) {
  const { target, rest } = threadArgument(context);
  const agent = context.values.agent;
  if (typeof agent !== 'string' || !agent) throw new UsageError('--agent is required: the agent the input is for.');
  const text = rest.join(' ');
  if (!text) throw new UsageError('Give the text to send after the thread, e.g. `… --agent assistant "Hello"`.');
  const id = context.values.id as string | undefined;
  return { target, agent, text, options: id ? { id } : {} };
}

function printResult({ values, out }: CommandContext, target: ThreadTarget, result: SendResult): number {
  const { persisted: _persisted, ...answer } = result;
  if (values.json) {
    out(json(answer));
  } else {
    out(
      `${formatThreadName(target)}: ${answer.action}, input ${answer.signalId}` +
        (answer.runId ? `, run ${answer.runId}` : '') +
        (answer.duplicate ? ' (a duplicate: already accepted)' : '') +
        (answer.reason ? ` (${answer.reason})` : ''),
    );
  }
  return EXIT.ok;
}

const send: Command = {
  summary: 'Send a user message: it joins the active run at its next step, or starts a run.',
  usage: 'RESOURCE/THREAD --agent A [--id ID] [--json] TEXT',
  options: common,
  positionals: true,
  optionHelp: commonHelp,
  examples: ['threadline send user-42/support --agent assistant "Where is my order?"'],
  async run(context) {
    const { target, agent, text, options } = inputArguments(context);
    const result = await withSession(context.env, ({ threadline }) =>
      threadline.agent(agent).sendMessage(text, target, options),
    );
    return printResult(context, target, result);
  },
};

const queue: Command = {
  summary: 'Queue a user message: it runs after the active run finishes, or starts a run when the thread is idle.',
  usage: 'RESOURCE/THREAD --agent A [--id ID] [--json] TEXT',
  options: common,
  positionals: true,
  optionHelp: commonHelp,
  examples: ['threadline queue user-42/support --agent assistant "Then summarise the conversation."'],
  async run(context) {
    const { target, agent, text, options } = inputArguments(context);
    const result = await withSession(context.env, ({ threadline }) =>
      threadline.agent(agent).queueMessage(text, target, options),
    );
    return printResult(context, target, result);
  },
};

const signal: Command = {
  summary: 'Send a signal (system context: reactive, notification, user) with its routing while active and idle.',
  usage:
    'RESOURCE/THREAD --agent A --type T [--tag NAME] [--attr k=v …] [--if-active B] [--if-idle B] [--id ID] [--json] TEXT',
  options: {
    ...common,
    type: { type: 'string' },
    tag: { type: 'string' },
    attr: { type: 'string', multiple: true },
    'if-active': { type: 'string' },
    'if-idle': { type: 'string' },
  },
  positionals: true,
  optionHelp: {
    ...commonHelp,
    '--type <type>': 'reactive, notification or user (docs/signals.md).',
    '--tag <name>': 'A custom XML tag to wrap the signal in.',
    '--attr <k=v>': 'An attribute of the signal (repeatable).',
    '--if-active <b>': `While a run is active: ${activeBehaviors.join(', ')}.`,
    '--if-idle <b>': `While the thread is idle: ${idleBehaviors.join(', ')}.`,
  },
  examples: [
    'threadline signal user-42/support --agent assistant --type notification --if-idle persist "CI failed on main"',
    'threadline signal user-42/support --agent assistant --type reactive --tag alert --attr level=high --if-active interrupt "Disk full"',
  ],
  async run(context) {
    const { target, agent, text, options } = inputArguments(context);
    const { values } = context;
    if (typeof values.type !== 'string') throw new UsageError('--type is required: reactive, notification or user.');
    const ifActive = choice(values['if-active'], activeBehaviors, '--if-active') as ActiveBehavior | undefined;
    const ifIdle = choice(values['if-idle'], idleBehaviors, '--if-idle') as IdleBehavior | undefined;
    const attributes = attributeOptions(values.attr as string[] | undefined);
    const result = await withSession(context.env, ({ threadline }) =>
      threadline.agent(agent).sendSignal(
        {
          type: values.type as string,
          contents: text,
          ...(values.tag ? { tagName: values.tag as string } : {}),
          ...(attributes ? { attributes } : {}),
        },
        {
          ...target,
          ...(ifActive ? { ifActive: { behavior: ifActive } } : {}),
          ...(ifIdle ? { ifIdle: { behavior: ifIdle } } : {}),
        },
        options,
      ),
    );
    return printResult(context, target, result);
  },
};

function choice(value: unknown, allowed: readonly string[], option: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw new UsageError(`${option} must be one of ${allowed.join(', ')}, got "${String(value)}".`);
  }
  return value;
}

function attributeOptions(pairs: string[] | undefined): Record<string, string> | undefined {
  if (!pairs?.length) return undefined;
  const attributes: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at < 1) throw new UsageError(`--attr takes name=value, got "${pair}".`);
    attributes[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return attributes;
}

const abort: Command = {
  summary: 'Stop the active run (its model call and tools are cancelled); queued runs go next unless --clear-pending.',
  usage: 'RESOURCE/THREAD [--clear-pending] [--json]',
  options: { json: { type: 'boolean' }, 'clear-pending': { type: 'boolean' }, ...threadOptions },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--clear-pending': 'Also drop queued runs and inputs waiting for the aborted run.',
    '--json': '{ aborted, runId?, clearedSignalIds }.',
  },
  examples: ['threadline abort user-42/support', 'threadline abort user-42/support --clear-pending'],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    const result = await withSession(context.env, async ({ threadline, settings }) => {
      found(await threadline.getThread(target), target, settings);
      return threadline.abortThread({ ...target, clearPendingSignals: context.values['clear-pending'] === true });
    });
    if (context.values.json) {
      context.out(json(result));
    } else {
      const cleared = result.clearedSignalIds;
      context.out(
        (result.aborted ? `Aborted run ${result.runId}.` : 'No run was active: nothing to abort.') +
          (cleared.length ? ` Cleared ${cleared.length} pending input(s): ${cleared.join(', ')}.` : ''),
      );
    }
    return EXIT.ok;
  },
};

const approve: Command = {
  summary: 'Approve a tool call the active run is parked on; the run continues with it.',
  usage: 'RESOURCE/THREAD TOOL_CALL_ID [--resume-data JSON] [--json]',
  options: { json: { type: 'boolean' }, 'resume-data': { type: 'string' }, ...threadOptions },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--resume-data <json>': 'JSON handed to the tool with the approval.',
    '--json': '{ accepted, toolCallId, runId, status }.',
  },
  examples: [
    'threadline approve user-42/support call_8f2',
    'threadline approve user-42/support call_8f2 --resume-data \'{"folder":"/tmp/scratch"}\'',
  ],
  run: (context) => decide(context, true),
};

const decline: Command = {
  summary: 'Decline a tool call the active run is parked on; the model is told it was declined.',
  usage: 'RESOURCE/THREAD TOOL_CALL_ID [--reason TEXT] [--json]',
  options: { json: { type: 'boolean' }, reason: { type: 'string' }, ...threadOptions },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--reason <text>': 'Why, for the model.',
    '--json': '{ accepted, toolCallId, runId, status }.',
  },
  examples: ['threadline decline user-42/support call_8f2 --reason "Not on production."'],
  run: (context) => decide(context, false),
};

async function decide(context: CommandContext, approved: boolean): Promise<number> {
  const { target, rest } = threadArgument(context);
  const [toolCallId, ...more] = rest;
  if (!toolCallId) throw new UsageError('Give the tool call id (`threadline thread show` lists the waiting ones).');
  noMore(more);
  const { values } = context;
  let resumeData: unknown;
  if (typeof values['resume-data'] === 'string') {
    try {
      resumeData = JSON.parse(values['resume-data']);
    } catch (err) {
      throw new UsageError(`--resume-data must be JSON: ${(err as Error).message}.`);
    }
  }
  const result = await withSession(context.env, ({ threadline }) =>
    threadline.sendToolApproval({
      ...target,
      toolCallId,
      approved,
      ...(resumeData !== undefined ? { resumeData } : {}),
      ...(typeof values.reason === 'string' ? { declineReason: values.reason } : {}),
    }),
  );
  context.out(values.json ? json(result) : `Tool call ${result.toolCallId} of run ${result.runId}: ${result.status}.`);
  return EXIT.ok;
}

export {
  send as sendCommand,
  queue as queueCommand,
  signal as signalCommand,
  abort as abortCommand,
  approve as approveCommand,
  decline as declineCommand,
};
