/**
 * What every `main` entry point shares: knowing it is the script Node was started with, and ending with a clear
 * message (exit code 1) when its settings are invalid, instead of a stack trace.
 *
 * @example
 * if (isEntryPoint(import.meta.url)) await runEntry(() => runWorker(readSettings(process.env, 'worker')));
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { logger } from '../observability/logger';
import { SettingsError } from './settings';

/** True when the module at `moduleUrl` is the script Node runs (`tsx worker/main.ts`, `node --import tsx …`). */
export function isEntryPoint(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/**
 * Runs `main`; a failure is logged (`fatal`; a `SettingsError` as its message and the list of problems, without a
 * stack) and the process exits with code 1 at once: a half-started process would otherwise hang on its open
 * connections.
 */
export async function runEntry(main: () => Promise<unknown>): Promise<void> {
  try {
    await main();
  } catch (err) {
    const log = logger('entry');
    if (err instanceof SettingsError) log.fatal({ problems: err.problems }, err.message);
    else log.fatal({ err }, `start-up failed: ${(err as Error)?.message ?? err}`);
    process.exit(1);
  }
}
