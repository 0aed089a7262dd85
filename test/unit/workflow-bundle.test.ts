/**
 * The workflow bundle carries no zod: Temporal evaluates every module of it once per workflow context (each new
 * thread, each replay after eviction), and zod with the wire schemas costs tens of milliseconds there (see
 * bench/workflow-context.ts). A value import of protocol/schemas.ts anywhere under workflows/ brings it back; the
 * workflow validates with protocol/validate.ts instead. esbuild's module graph answers in well under a second, where
 * Temporal's webpack bundle takes several.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { preloadModules } from '../../worker/bundle';

const workflowsIndex = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

async function workflowModules(entryPoints = [workflowsIndex]): Promise<string[]> {
  const { metafile } = await build({
    entryPoints,
    bundle: true,
    write: false,
    outdir: 'unused',
    metafile: true,
    platform: 'neutral',
    mainFields: ['module', 'main'],
    // The SDK is in every workflow bundle anyway; only our own import graph is in question.
    external: ['@temporalio/*'],
    logLevel: 'silent',
  });
  return Object.keys(metafile.inputs);
}

describe('the workflow bundle', () => {
  it('contains no zod and not the zod schemas', async () => {
    const modules = await workflowModules();

    expect(modules).toContain('protocol/validate.ts');
    expect(modules.filter((path) => path.includes('node_modules/zod/') || path === 'protocol/schemas.ts')).toEqual([]);
  });

  // The preloaded modules and all they import are evaluated once per workflow thread and shared by every workflow in it
  // (worker/bundle.ts, `preloadModules`): state at module level there would pass from one thread's workflow to another's.
  it('shares only modules without module-level state of a workflow', async () => {
    const ours = preloadModules.filter((module) => module.startsWith('/'));
    expect(ours.length).toBe(preloadModules.length - 1); // and '@temporalio/workflow', the SDK's API
    const shared = await workflowModules(ours);

    expect(shared).toContain('workflows/state/thread.ts');
    for (const stateful of ['thread', 'tracing', 'inspection', 'sinks', 'inspect-step', 'index'])
      expect(shared).not.toContain(`workflows/${stateful}.ts`);
    const source = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
    const withModuleVariables = shared.filter((path) => /^(export )?(let|var) /m.test(source(path)));
    expect(withModuleVariables).toEqual([]);

    // A collection made at module level is module state too, unless its type says read-only or it is a memo keyed by
    // each workflow's own objects (listed here, with the reason beside its declaration). Constant tables (object and
    // array literals: validators' fields, defaults, ranks) are read, never written.
    const memosKeyedByOwnObjects = ['workflows/state/conversation.ts: jsonSizes'];
    const moduleCollections = shared.flatMap((path) =>
      [...source(path).matchAll(/^(?:export )?const (\w+)\s*(?::\s*([^=]+))?=\s*new (?:Map|Set|WeakMap|WeakSet)\b/gm)]
        .filter(([, , type]) => !/^\s*Readonly/.test(type ?? ''))
        .map(([, name]) => `${path}: ${name}`),
    );
    expect(moduleCollections).toEqual(memosKeyedByOwnObjects);
  });
});
