/**
 * Workflow bundles for the upgrade drill: the thread workflow as it is (`current`), with the drill's change behind
 * `patched()` (`gated`), without a gate (`ungated`), and turned off again behind a second gate (`switched-off`). A
 * worker process runs one with THREADLINE_WORKFLOW_BUNDLE; `threadline history replay --bundle` replays a history
 * against one.
 *
 * By hand (docs/operations.md, "Upgrade drill"):
 *
 *   npx tsx test/support/upgrade/bundle.ts ungated /tmp/ungated.js
 *   npx threadline history replay test/replay/histories/thread-conversation.json --bundle /tmp/ungated.js
 */
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { threadBundleOptions } from '../../../worker/index';

export type UpgradeVariant = 'current' | 'gated' | 'ungated' | 'switched-off';
export const UPGRADE_VARIANTS: readonly UpgradeVariant[] = ['current', 'gated', 'ungated', 'switched-off'];

const require = createRequire(import.meta.url);
const interceptorModules: Record<UpgradeVariant, string[]> = {
  current: [],
  gated: [require.resolve('./gated.ts')],
  ungated: [require.resolve('./ungated.ts')],
  'switched-off': [require.resolve('./switched-off.ts')],
};

/** Bundles `variant` and writes it to `out`; resolves with `out`. */
export async function writeUpgradeBundle(variant: UpgradeVariant, out: string): Promise<string> {
  const { code } = await bundleWorkflowCode({
    ...threadBundleOptions,
    workflowInterceptorModules: interceptorModules[variant],
    logger: quietLogger,
  });
  await writeFile(out, code);
  return out;
}

const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [variant, out] = process.argv.slice(2);
  if (!UPGRADE_VARIANTS.includes(variant as UpgradeVariant) || !out) {
    console.error(`Usage: npx tsx test/support/upgrade/bundle.ts ${UPGRADE_VARIANTS.join('|')} OUT_FILE`);
    process.exit(2);
  }
  const written = await writeUpgradeBundle(variant as UpgradeVariant, resolve(out));
  console.log(`Wrote the ${variant} workflow bundle to ${written}.`);
}
