/**
 * The generated reference docs match their sources: docs/configuration.md the settings table, docs/http-api.md the
 * gateway's route table. A change to either without `npm run docs` fails here (and in `npm run docs:check`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { definitionList } from '../../config/definitions';
import { generatedDocs } from '../../worker/docs';

const root = join(import.meta.dirname, '../..');

describe('generated docs', () => {
  it('are committed exactly as the generator writes them now', async () => {
    const docs = await generatedDocs();
    expect(Object.keys(docs)).toEqual(['docs/configuration.md', 'docs/http-api.md']);
    for (const [path, content] of Object.entries(docs)) {
      expect(await readFile(join(root, path), 'utf8'), `${path} is stale: run \`npm run docs\``).toBe(content);
    }
  });

  it('document every setting and every route', async () => {
    const docs = await generatedDocs();
    for (const [, definition] of definitionList)
      expect(docs['docs/configuration.md']).toContain(`\`${definition.env}\``);
    for (const heading of [
      '## GET /health',
      '## POST /api/agents/{agentId}/send-message',
      '## GET /api/threads/{resourceId}/{threadId}/events',
    ]) {
      expect(docs['docs/http-api.md']).toContain(heading);
    }
  });
});
