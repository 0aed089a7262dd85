/**
 * The import fence in eslint.config.js, tested with ESLint's Node API: a deliberately wrong import in a probe file
 * placed inside a folder of the tree must be reported. The probe is linted as text under its would-be path (config
 * and import resolution are the same as for a file on disk), so nothing is written into the shared tree.
 */
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const layeringRules = new Set(['import-x/no-restricted-paths', 'no-restricted-imports', 'import-x/no-cycle']);

const eslint = new ESLint({
  cwd: root,
  // Import rules need no type information; building the TypeScript program would take most of the run.
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => layeringRules.has(ruleId),
});

async function lintProbe(
  folder: string,
  source: string,
  name = '__lint_probe__.ts',
): Promise<{ rule: string | null; message: string }[]> {
  const [result] = await eslint.lintText(source, { filePath: join(root, folder, name) });
  return result.messages.map((m) => ({ rule: m.ruleId, message: m.message }));
}

describe('the layering fence', () => {
  it('reports an import that points up', async () => {
    const messages = await lintProbe('protocol', `import { connect } from '../client/connect';\nexport { connect };\n`);

    expect(messages).toEqual([
      {
        rule: 'import-x/no-restricted-paths',
        message: expect.stringContaining('protocol/ must not import client/ (the bottom layer knows nothing above it)'),
      },
    ]);
  });

  it('reports an import on the "never" list with its reason', async () => {
    const gateway = await lintProbe(
      'gateway',
      `import { defineAgent } from '../agents/agent';\nexport { defineAgent };\n`,
    );
    const httpClient = await lintProbe(
      'http-client',
      `import { connect } from '../client/connect';\nexport { connect };\n`,
    );

    expect(gateway).toEqual([
      {
        rule: 'import-x/no-restricted-paths',
        message: expect.stringContaining('gateway/ must not import agents/ (the gateway lists agents'),
      },
    ]);
    expect(httpClient).toEqual([
      {
        rule: 'import-x/no-restricted-paths',
        message: expect.stringContaining('http-client/ must not import client/ (the browser SDK carries no Temporal'),
      },
    ]);
  });

  it('reports a wrong import from a nested folder and through an index file', async () => {
    const messages = await lintProbe(
      'workflows/nested',
      `import { RedisBus } from '../../bus';\nexport { RedisBus };\n`,
    );

    expect(messages).toEqual([
      {
        rule: 'import-x/no-restricted-paths',
        message: expect.stringContaining('workflows/ must not import bus/ (the workflow never does I/O)'),
      },
    ]);
  });

  it('keeps Node built-ins and Node-only packages out of protocol/', async () => {
    const messages = await lintProbe(
      'protocol',
      [
        `import { readFileSync } from 'node:fs';`,
        `import { join } from 'path';`,
        `import { Client } from '@temporalio/client';`,
        `import { Redis } from 'ioredis';`,
        `import { cors } from 'hono/cors';`,
        `import { serve } from '@hono/node-server';`,
        `export { readFileSync, join, Client, Redis, cors, serve };`,
      ].join('\n'),
    );

    expect(messages.map((m) => m.rule)).toEqual(Array(6).fill('no-restricted-imports'));
    expect(messages[0].message).toContain('no Node built-ins');
    expect(messages[1].message).toContain('no Node built-ins');
    expect(messages.slice(2).every((m) => m.message.includes('no Node-only packages'))).toBe(true);
  });

  it('lets workflows import activities as types only', async () => {
    const asValue = await lintProbe(
      'workflows',
      `import { createActivities } from '../activities';\nexport { createActivities };\n`,
    );
    const asType = await lintProbe(
      'workflows',
      `import type { createActivities } from '../activities';\nexport type A = typeof createActivities;\n`,
    );

    expect(asValue).toEqual([{ rule: 'no-restricted-imports', message: expect.stringContaining('as types only') }]);
    expect(asType).toEqual([]);
  });

  it('reports an import cycle (the rules resolve and parse .ts modules)', async () => {
    // client/connect.ts imports ./inputs; this version of client/inputs.ts imports it back.
    const messages = await lintProbe(
      'client',
      `import { connect } from './connect';\nexport { connect };\n`,
      'inputs.ts',
    );

    expect(messages).toEqual([{ rule: 'import-x/no-cycle', message: expect.stringContaining('Dependency cycle') }]);
  });

  it('accepts imports that point down', async () => {
    const protocol = await lintProbe(
      'protocol',
      `import { z } from 'zod';\nimport { XML_NAME } from './schemas';\nexport { z, XML_NAME };\n`,
    );
    const gateway = await lintProbe(
      'gateway',
      `import { connect } from '../client/connect';\nimport { threadKey } from '../protocol/ids';\nexport { connect, threadKey };\n`,
    );
    const worker = await lintProbe(
      'worker',
      `import { createActivities } from '../activities';\nimport { serveGateway } from '../gateway/serve';\nexport { createActivities, serveGateway };\n`,
    );

    expect([...protocol, ...gateway, ...worker]).toEqual([]);
  });
});
