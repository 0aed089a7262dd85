#!/usr/bin/env -S npx tsx
/**
 * The `threadline` command (package.json "bin"). Each subcommand is one entry of `commands`: its summary, options,
 * examples and `run`; parsing, `--help` and exit codes are shared. The environment is read here, once, and the
 * settings passed down.
 *
 * Exit codes: 0 ok, 1 failure (invalid settings, a start-up error, an unreachable server, an unknown thread), 2 usage
 * error (unknown command or option, a missing argument).
 */
import { parseArgs } from 'node:util';
import { readers, type Reader } from '../config/definitions';
import { maskedSettings, variableRows } from '../config/describe';
import { isEntryPoint } from '../config/entry';
import { SettingsError, readSettings, type Settings } from '../config/settings';
import {
  EXIT,
  UsageError,
  abortCommand,
  approveCommand,
  declineCommand,
  doctorCommand,
  forkCommand,
  historyCommand,
  inboxCommand,
  inspectCommand,
  messagesCommand,
  queueCommand,
  sendCommand,
  signalCommand,
  tailCommand,
  threadCommand,
  threadsCommand,
  type Command,
  type CommandContext,
  type CommandGroup,
} from './commands';

/**
 * The subcommands. To add one: add an entry (heavy modules imported inside `run`, so `--help` stays fast); a group
 * (`history export|replay`) has `subcommands` instead of `run`. The operator commands are in ./commands/.
 */
const commands: Record<string, Command | CommandGroup> = {
  start: {
    summary:
      'The whole stack in one process, as `npm start`: the Temporal dev server (unless a Temporal address is configured), a worker and the gateway.',
    examples: ['threadline start', 'OPENAI_API_KEY=sk-… MODEL=openai/gpt-4o-mini threadline start'],
    async run({ env }) {
      const { startStack } = await import('./start');
      await startStack(readSettings(env, 'start'), env);
    },
  },
  worker: {
    summary: "A worker hosting the deployment's agents (agents/served.ts), as `npm run worker`.",
    examples: ['TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 threadline worker'],
    async run({ env }) {
      const { runWorker } = await import('./main');
      await runWorker(readSettings(env, 'worker'));
      return EXIT.ok;
    },
  },
  gateway: {
    summary: 'The HTTP gateway alone, as `npm run gateway`; it lists the agents workers announce on the bus.',
    examples: ['TEMPORAL_ADDRESS=temporal:7233 REDIS_URL=redis://redis:6379 HOST=0.0.0.0 threadline gateway'],
    async run({ env }) {
      const { runGateway } = await import('../gateway/main');
      await runGateway(readSettings(env, 'gateway'));
    },
  },
  'temporal:setup': {
    summary:
      'Print the path of the Temporal CLI the dev server runs, building it from the Go module proxy first if needed (~5-10 min, once).',
    examples: ['threadline temporal:setup'],
    async run({ env }) {
      const { setupTemporalCli } = await import('./temporal-cli');
      await setupTemporalCli(env);
      return EXIT.ok;
    },
  },
  config: {
    summary:
      'Print the settings a process would run with, from the environment and the Temporal profile; secrets masked.',
    usage: '[--for worker|gateway|start] [--json]',
    options: { json: { type: 'boolean' }, for: { type: 'string' } },
    optionHelp: {
      '--for <process>':
        'The process whose settings to resolve: worker, gateway or start (default: start, all of them).',
      '--json': 'One JSON object: { for, settings, variables }.',
    },
    examples: ['threadline config', 'TEMPORAL_PROFILE=prod threadline config --for worker --json'],
    async run({ values, env, out }) {
      const reader = (values.for ?? 'start') as Reader;
      if (!readers.includes(reader)) {
        throw new UsageError(`--for must be one of ${readers.join(', ')}, got "${String(values.for)}".`);
      }
      const settings = readSettings(env, reader);
      const variables = variableRows(env, settings);
      if (values.json) {
        out(JSON.stringify({ for: reader, settings: maskedSettings(settings), variables }, null, 2));
      } else {
        const { defaultModelName } = await import('../agents/models');
        out(describeConfig(settings, variables, defaultModelName(settings.models)));
      }
      return EXIT.ok;
    },
  },
  setup: {
    summary:
      "Register Threadline's search attributes in the namespace (once per namespace, before workers start; running it again changes nothing).",
    examples: ['threadline setup', 'TEMPORAL_PROFILE=prod TEMPORAL_NAMESPACE=threads threadline setup'],
    async run({ env, out }) {
      const { runSetup } = await import('./setup');
      return runSetup(env, out);
    },
  },
  doctor: doctorCommand,
  threads: threadsCommand,
  thread: threadCommand,
  messages: messagesCommand,
  tail: tailCommand,
  send: sendCommand,
  queue: queueCommand,
  signal: signalCommand,
  abort: abortCommand,
  approve: approveCommand,
  decline: declineCommand,
  inbox: inboxCommand,
  history: historyCommand,
  inspect: inspectCommand,
  fork: forkCommand,
};

function describeConfig(settings: Settings, variables: ReturnType<typeof variableRows>, model: string): string {
  const width = Math.max(...variables.map((v) => v.name.length));
  const shown = (value: string | null) => value ?? '—';
  const valueWidth = Math.min(40, Math.max(...variables.map((v) => shown(v.value).length)));
  const { temporal } = settings;
  const server = temporal.address
    ? `${temporal.address} (${temporal.addressSource})`
    : settings.reader === 'start'
      ? `none configured: the embedded dev server on 127.0.0.1:${settings.devServer.port}`
      : `none configured: 127.0.0.1:${settings.devServer.port}`;
  const tls = temporal.tls === undefined || temporal.tls === false ? 'off' : 'on';
  return [
    `Settings of \`threadline ${settings.reader}\` (secrets masked):`,
    '',
    ...variables.map((v) => `  ${v.name.padEnd(width)}  ${shown(v.value).padEnd(valueWidth)}  (${v.source})`),
    '',
    `Temporal: ${server}, namespace ${temporal.namespace}, task queue ${temporal.taskQueue}, TLS ${tls}` +
      (temporal.configFile ? `; profile "${temporal.profile}" of ${temporal.configFile}` : '; no config file'),
    ...(settings.reader === 'gateway' ? [] : [`Model: ${model}${model === 'demo' ? ' (the offline demo model)' : ''}`]),
  ].join('\n');
}

function mainHelp(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  return [
    'threadline: durable conversation threads for AI agents, on Temporal.',
    '',
    'Usage: threadline <command> [options]',
    '       threadline <command> --help',
    '',
    'Commands:',
    ...Object.entries(commands).map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`),
    '',
    'Options:',
    '  -h, --help  Show this help, or a command’s.',
    '',
    'Examples:',
    ...Object.values(commands).flatMap((command) =>
      examplesOf(command)
        .slice(0, 1)
        .map((e) => `  ${e}`),
    ),
    '',
    'Settings come from environment variables (and a temporal.toml profile for Temporal): docs/configuration.md,',
    'or `threadline config` for the values in effect.',
    '',
    'Threads are named RESOURCE/THREAD (a "/" inside an id written %2F), or with --resource R --thread T.',
    '',
    'Exit codes: 0 ok, 1 failure (invalid settings, a start-up error, an unreachable server, an unknown thread),',
    '2 usage error (unknown command or option, a missing argument).',
  ].join('\n');
}

function examplesOf(command: Command | CommandGroup): string[] {
  return 'subcommands' in command
    ? Object.values(command.subcommands).flatMap((sub) => sub.examples)
    : command.examples;
}

function groupHelp(name: string, group: CommandGroup): string {
  const width = Math.max(...Object.keys(group.subcommands).map((sub) => sub.length));
  return [
    `Usage: threadline ${name} <${Object.keys(group.subcommands).join('|')}> [options]`,
    '',
    group.summary,
    '',
    'Commands:',
    ...Object.entries(group.subcommands).map(([sub, command]) => `  ${sub.padEnd(width)}  ${command.summary}`),
    '',
    'Examples:',
    ...examplesOf(group).map((example) => `  ${example}`),
    '',
    `\`threadline ${name} <command> --help\` shows a command's options.`,
  ].join('\n');
}

function commandHelp(name: string, command: Command): string {
  const options = Object.entries(command.optionHelp ?? {});
  const width = Math.max(10, ...options.map(([flag]) => flag.length));
  return [
    `Usage: threadline ${name}${command.usage ? ` ${command.usage}` : ''}`,
    '',
    command.summary,
    '',
    'Options:',
    ...options.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
    `  ${'-h, --help'.padEnd(width)}  Show this help.`,
    '',
    'Examples:',
    ...command.examples.map((example) => `  ${example}`),
  ].join('\n');
}

/**
 * Runs the command line `args`; resolves with the exit code, or `undefined` while a server keeps running. `signal`
 * stops a command that runs until stopped (`tail`), as SIGINT does.
 */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  io: { out: (text: string) => void; err: (text: string) => void; signal?: AbortSignal },
): Promise<number | undefined> {
  let [name, ...rest] = args;
  try {
    if (name === undefined) {
      io.err(mainHelp());
      return EXIT.usage;
    }
    if (name === '--help' || name === '-h' || name === 'help') {
      io.out(mainHelp());
      return EXIT.ok;
    }
    const entry = Object.hasOwn(commands, name) ? commands[name] : undefined;
    if (!entry) {
      throw new UsageError(`Unknown command "${name}". Commands: ${Object.keys(commands).join(', ')}.`);
    }
    let command: Command;
    if ('subcommands' in entry) {
      const [sub, ...after] = rest;
      if (sub === undefined || sub === '--help' || sub === '-h') {
        (sub ? io.out : io.err)(groupHelp(name, entry));
        return sub ? EXIT.ok : EXIT.usage;
      }
      if (!Object.hasOwn(entry.subcommands, sub)) {
        const known = Object.keys(entry.subcommands).map((s) => `${name} ${s}`);
        throw new UsageError(`Unknown command "${name} ${sub}". Commands: ${known.join(', ')}.`);
      }
      [command, name, rest] = [entry.subcommands[sub], `${name} ${sub}`, after];
    } else {
      command = entry;
    }
    let values: CommandContext['values'];
    let positionals: string[];
    try {
      ({ values, positionals } = parseArgs({
        args: rest,
        options: { ...command.options, help: { type: 'boolean', short: 'h' } },
        strict: true,
        allowPositionals: command.positionals === true,
      }));
    } catch (err) {
      throw new UsageError(`${(err as Error).message.replace(/\.?$/, '.')} See \`threadline ${name} --help\`.`);
    }
    if (values.help) {
      io.out(commandHelp(name, command));
      return EXIT.ok;
    }
    const code = await command.run({ values, positionals, env, out: io.out, err: io.err, signal: io.signal });
    return code ?? undefined;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`threadline: ${err.message}`);
      return EXIT.usage;
    }
    io.err(err instanceof SettingsError ? err.message : `threadline ${name}: ${(err as Error)?.message ?? err}`);
    return EXIT.failure;
  }
}

if (isEntryPoint(import.meta.url)) {
  const code = await runCli(process.argv.slice(2), process.env, {
    out: (text) => console.log(text),
    err: (text) => console.error(text),
  });
  // A server keeps running (undefined); a finished command exits with its code even if a handle is still open.
  if (code !== undefined) process.exit(code);
}
