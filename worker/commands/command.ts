/**
 * What a `threadline` subcommand is: worker/cli.ts holds the table and does the parsing, `--help` and exit codes;
 * the operator commands live one group per module beside this file.
 */
import type { ParseArgsConfig } from 'node:util';

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandContext {
  /** Parsed options; `multiple` options are arrays. */
  values: Record<string, string | boolean | string[] | undefined>;
  /** The arguments that are not options (thread names, texts, ids), for commands that take them. */
  positionals: string[];
  env: NodeJS.ProcessEnv;
  /** The command's output (stdout): what a script reads. */
  out: (text: string) => void;
  /** Notes beside the output (stderr). */
  err: (text: string) => void;
  /** Stops a command that runs until it is stopped (`tail`); without one, SIGINT stops it. */
  signal?: AbortSignal;
}

export interface Command {
  summary: string;
  /** What follows the command name in the usage line, e.g. `[--json]`. */
  usage?: string;
  options?: Options;
  /** The command takes arguments besides its options. */
  positionals?: boolean;
  /** Option descriptions for `--help`, by option name. */
  optionHelp?: Record<string, string>;
  examples: string[];
  /** Resolves with an exit code, or with nothing for a server that keeps running until a signal. */
  run(context: CommandContext): Promise<number | void>;
}

/** A command with subcommands (`threadline history export …`): `threadline history --help` lists them. */
export interface CommandGroup {
  summary: string;
  subcommands: Record<string, Command>;
}

export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** The command line is wrong (exit 2); the message says what is expected. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
