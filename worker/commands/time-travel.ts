/**
 * Time travel on the command line: `threadline inspect` lists a thread's steps, or prints exactly what the model
 * received at one of them; `threadline fork` starts a new thread from a thread as it stood before a step. Both go
 * through a worker of the thread's task queue (the `threadlineInspectStep` workflow, client/time-travel.ts): the
 * agents and the workflow code live in workers, so the command works against any deployment that has them.
 */
import type { ModelMessage } from 'ai';
import type { StepListing, StepPrompt } from '../../protocol/time-travel';
import type { ThreadView } from '../../protocol/views';
import { EXIT, UsageError, type Command } from './command';
import { json, oneLine, table } from './format';
import { found, withSession } from './session';
import {
  formatThreadName,
  noMore,
  parseThreadName,
  threadArgument,
  threadOptionHelp,
  threadOptions,
} from './thread-name';

export const inspectCommand: Command = {
  summary:
    "List a thread's steps (model calls), or print exactly what the model received at one: system prompt, tools, messages, the provider request.",
  usage: 'RESOURCE/THREAD [--step N [--body]] [--json]',
  options: { step: { type: 'string' }, body: { type: 'boolean' }, json: { type: 'boolean' }, ...threadOptions },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--step <n>':
      'The step to show: its thread-wide number, as the list shows it (counted across runs and continue-as-new).',
    '--body': 'With --step: print only the provider request body, byte for byte (pipe it to jq, or diff two steps).',
    '--json':
      'Without --step: { steps: [{ step, runId, stepNumber, agentId, status, startedAt, summary, execution }] }. ' +
      'With it: { step, runId, stepNumber, agentId, status, model, system, tools, messages, settings?, request, complete, notes }.',
  },
  examples: [
    'threadline inspect user-42/support',
    'threadline inspect --step 7 user-42/support',
    'threadline inspect --step 7 --body user-42/support | jq .messages',
  ],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    const stepOption = context.values.step as string | undefined;
    if (stepOption === undefined) {
      if (context.values.body) throw new UsageError('--body goes with --step N.');
      const list = await withSession(context.env, async ({ threadline, settings }) =>
        found(await threadline.listSteps(target), target, settings),
      );
      context.out(context.values.json ? json(list) : describeSteps(formatThreadName(target), list.steps));
      return EXIT.ok;
    }
    const step = stepNumber(stepOption, '--step');
    const prompt = await withSession(context.env, ({ threadline }) => threadline.inspectStep(target, step));
    if (context.values.body) {
      if (!prompt.request) throw new Error(`Step ${step} has no provider request: ${prompt.notes.join(' ')}`);
      context.out(prompt.request.body);
    } else {
      context.out(context.values.json ? json(prompt) : describePrompt(formatThreadName(target), prompt));
    }
    return EXIT.ok;
  },
};

export const forkCommand: Command = {
  summary:
    'Start a new thread from a thread as it stood before step N (conversation, lanes, inbox); it re-runs step N at once, with --agent if given.',
  usage: 'RESOURCE/THREAD --at-step N --to RESOURCE/THREAD [--agent ID] [--json]',
  options: {
    'at-step': { type: 'string' },
    to: { type: 'string' },
    agent: { type: 'string' },
    json: { type: 'boolean' },
    ...threadOptions,
  },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--at-step <n>': 'The step to re-run (its thread-wide number, as `threadline inspect THREAD` lists it).',
    '--to <thread>': 'The new thread, RESOURCE/THREAD; it must not exist yet.',
    '--agent <id>': "Re-run the step with this agent (other instructions or another model); default the step's own.",
    '--json': "The fork's view, as `thread show --json` prints it.",
  },
  examples: [
    'threadline fork user-42/support --at-step 7 --to user-42/support-what-if',
    'threadline fork user-42/support --at-step 7 --to user-42/support-b --agent support-agent-v2',
  ],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    const atStep = stepNumber(context.values['at-step'] as string | undefined, '--at-step');
    const toName = context.values.to as string | undefined;
    if (toName === undefined) throw new UsageError('Name the new thread: --to RESOURCE/THREAD.');
    const to = parseThreadName(toName);
    const agentId = context.values.agent as string | undefined;
    const view = await withSession(context.env, ({ threadline }) =>
      threadline.forkThread(target, { atStep, to, ...(agentId !== undefined ? { agentId } : {}) }),
    );
    context.out(context.values.json ? json(view) : describeFork(formatThreadName(target), atStep, view));
    return EXIT.ok;
  },
};

function stepNumber(value: string | undefined, option: string): number {
  if (value === undefined)
    throw new UsageError(`${option} is required: the step's number (threadline inspect THREAD lists them).`);
  if (!/^[1-9]\d{0,15}$/.test(value)) throw new UsageError(`${option} takes a step number from 1, got "${value}".`);
  return Number(value);
}

function describeSteps(name: string, steps: StepListing[]): string {
  if (steps.length === 0) return `Thread ${name} has no steps yet.`;
  const rows = steps.map((s) => [
    String(s.step),
    s.status,
    s.agentId,
    s.runId,
    String(s.stepNumber),
    s.startedAt ?? '—',
  ]);
  return [
    `Thread ${name}: ${steps.length} step(s). \`threadline inspect --step N ${name}\` shows one.`,
    table(['STEP', 'STATUS', 'AGENT', 'RUN', 'IN RUN', 'STARTED'], rows),
  ].join('\n');
}

function describePrompt(name: string, p: StepPrompt): string {
  const lines = [
    `Step ${p.step} of ${name} (${p.status}): step ${p.stepNumber} of run ${p.runId}, agent ${p.agentId}, model ${p.model}`,
    '',
    'System:',
    indent(p.system),
    '',
    `Tools: ${Object.keys(p.tools).length === 0 ? 'none' : ''}`.trimEnd(),
    ...Object.entries(p.tools).map(([tool, t]) => `  ${tool}: ${oneLine(t.description ?? '', 100)}`),
    ...(p.settings ? ['', `Settings: ${JSON.stringify(p.settings)}`] : []),
    '',
    `Messages (${p.messages.length}):`,
    ...p.messages.map(messageText),
    '',
    p.request
      ? `Request: POST ${p.request.url}, ${Buffer.byteLength(p.request.body)} bytes (--body prints it)`
      : 'Request: none',
    ...p.notes.map((note) => `Note: ${note}`),
  ];
  return lines.join('\n');
}

function messageText(message: ModelMessage): string {
  const parts =
    typeof message.content === 'string'
      ? [message.content]
      : message.content.map((part) => {
          switch (part.type) {
            case 'text':
            case 'reasoning':
              return part.text;
            case 'tool-call':
              return `[tool call ${part.toolName} ${JSON.stringify(part.input)}]`;
            case 'tool-result':
              return `[tool result ${part.toolName} ${JSON.stringify(part.output)}]`;
            default:
              return `[${part.type}]`;
          }
        });
  return `  ${message.role.padEnd(9)} ${oneLine(parts.join(' '), 160)}`;
}

function describeFork(source: string, atStep: number, view: ThreadView): string {
  const fork = formatThreadName(view);
  const run = view.activeRun
    ? `; it re-runs step ${atStep} now (run ${view.activeRun.runId}, agent ${view.activeRun.agentId})`
    : '';
  return `Forked ${source} before step ${atStep} into ${fork}${run}. \`threadline tail ${fork}\` follows it.`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
