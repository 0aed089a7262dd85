/**
 * `threadline setup`: prepares a Temporal namespace for Threadline by registering the thread search attributes. Run
 * it once per namespace (before the first worker starts; again after an upgrade that adds attributes): what is there
 * already stays, so running it twice changes nothing. The embedded dev server registers them by itself.
 *
 * @example
 * TEMPORAL_ADDRESS=temporal.internal:7233 TEMPORAL_NAMESPACE=threads threadline setup
 * node --import tsx worker/setup.ts    (the same, where the CLI is not installed: the compose file's `setup` service)
 */
import { Connection } from '@temporalio/client';
import { isEntryPoint, runEntry } from '../config/entry';
import { temporalConnectionFromEnv, temporalConnectionOptions } from '../config/settings';
import { searchAttributeTypeName, threadSearchAttributes } from '../protocol/search-attributes';
import { registerSearchAttributes } from '../client/search-attributes';

/** Registers what the namespace lacks and prints one line per attribute; resolves with the exit code. */
export async function runSetup(env: NodeJS.ProcessEnv, out: (text: string) => void): Promise<number> {
  const { temporal, address } = temporalConnectionFromEnv(env);
  const connection = await Connection.connect(temporalConnectionOptions(temporal, address));
  try {
    const { added } = await registerSearchAttributes(connection, temporal.namespace);
    const width = Math.max(...threadSearchAttributes.map((key) => key.name.length));
    out(
      [
        `Search attributes of namespace "${temporal.namespace}" at ${address}:`,
        ...threadSearchAttributes.map(
          (key) =>
            `  ${key.name.padEnd(width)}  ${searchAttributeTypeName(key.type).padEnd(8)}  ${added.includes(key.name) ? 'added' : 'already registered'}`,
        ),
        '',
        added.length > 0
          ? `Registered ${added.length}; the namespace is ready.`
          : 'Nothing to do: the namespace is ready.',
        `Find threads with: temporal workflow list${temporal.namespace === 'default' ? '' : ` --namespace ${temporal.namespace}`} --query "ThreadlineStatus = 'awaiting-approval'"`,
      ].join('\n'),
    );
    return 0;
  } finally {
    await connection.close();
  }
}

if (isEntryPoint(import.meta.url)) await runEntry(() => runSetup(process.env, (text) => console.log(text)));
