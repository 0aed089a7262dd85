/**
 * The workflow bundle carries no zod: Temporal evaluates every module of it once per workflow context (each new
 * thread, each replay after eviction), and zod with the wire schemas costs tens of milliseconds there (see
 * bench/workflow-context.ts). A value import of protocol/schemas.ts anywhere under workflows/ brings it back; the
 * workflow validates with protocol/validate.ts instead. esbuild's module graph answers in well under a second, where
 * Temporal's webpack bundle takes several.
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const workflowsIndex = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

async function workflowModules(): Promise<string[]> {
  const { metafile } = await build({
    entryPoints: [workflowsIndex],
    bundle: true,
    write: false,
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
});
