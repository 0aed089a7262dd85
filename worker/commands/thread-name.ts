/**
 * Threads on the command line: `RESOURCE/THREAD`, each part percent-decoded, so an id with a `/` is written with
 * `%2F` (and a `%` as `%25`): `threadline thread show acme%2Fteam/t1` names resource `acme/team`, thread `t1`.
 * `--resource R --thread T` take the ids verbatim instead.
 */
import type { ThreadTarget } from '../../protocol/schemas';
import { UsageError, type CommandContext, type Options } from './command';

export const threadOptions = {
  resource: { type: 'string' },
  thread: { type: 'string' },
} satisfies Options;

export const threadOptionHelp = {
  '--resource <id>, --thread <id>':
    'Name the thread by its ids, verbatim, instead of RESOURCE/THREAD (where a "/" in an id is written %2F).',
};

/** `R/T` for `target`, as the commands accept it back. */
export function formatThreadName(target: ThreadTarget): string {
  const part = (id: string) => id.replace(/%/g, '%25').replace(/\//g, '%2F');
  return `${part(target.resourceId)}/${part(target.threadId)}`;
}

export function parseThreadName(name: string): ThreadTarget {
  const parts = name.split('/');
  const decoded = parts.length === 2 ? parts.map(decodePart) : [];
  if (decoded.length !== 2 || decoded.some((part) => part === null || part === '')) {
    throw new UsageError(
      `"${name}" is not a thread name. Write RESOURCE/THREAD (a "/" inside an id as %2F, a "%" as %25), or use --resource and --thread.`,
    );
  }
  return { resourceId: decoded[0] as string, threadId: decoded[1] as string };
}

/** The thread a command names (first positional, or `--resource`/`--thread`) and the positionals after it. */
export function threadArgument(context: Pick<CommandContext, 'values' | 'positionals'>): {
  target: ThreadTarget;
  rest: string[];
} {
  const { resource, thread } = context.values;
  if (resource !== undefined || thread !== undefined) {
    if (typeof resource !== 'string' || typeof thread !== 'string' || !resource || !thread) {
      throw new UsageError('--resource and --thread go together: give both, or name the thread as RESOURCE/THREAD.');
    }
    return { target: { resourceId: resource, threadId: thread }, rest: context.positionals };
  }
  const [name, ...rest] = context.positionals;
  if (name === undefined) throw new UsageError('Name the thread: RESOURCE/THREAD, or --resource R --thread T.');
  return { target: parseThreadName(name), rest };
}

/** Refuses arguments a command does not take. */
export function noMore(rest: string[]): void {
  if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}".`);
}

function decodePart(part: string): string | null {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}
