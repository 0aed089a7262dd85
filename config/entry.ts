/**
 * What every `main` entry point shares: knowing it is the script Node was started with, and ending with a clear
 * message (exit code 1) when its settings are invalid, instead of a stack trace.
 *
 * @example
 * if (isEntryPoint(import.meta.url)) await runEntry(() => runWorker(readSettings(process.env, 'worker')));
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
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
 * Runs `main`; a failure prints its message (a `SettingsError` without a stack) and exits with code 1 at once: a
 * half-started process would otherwise hang on its open connections.
 */
export async function runEntry(main: () => Promise<unknown>): Promise<void> {
  try {
    await main();
  } catch (err) {
    console.error(err instanceof SettingsError ? err.message : err);
    process.exit(1);
  }
}
