/**
 * The generated reference docs: `docs/configuration.md` from the settings table (config/definitions.ts) and
 * `docs/http-api.md` from the gateway's OpenAPI document, built in-process with a stub client (no server).
 *   npm run docs         writes them
 *   npm run docs:check   exits 1 when a committed file differs from what the sources generate now
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import type { ThreadlineClient } from '../client/connect';
import { configurationMarkdown } from '../config/docs';
import { isEntryPoint } from '../config/entry';
import { httpApiMarkdown } from '../gateway/api-docs';
import { createGateway } from '../gateway/app';
import { createLogger } from '../observability';
import { defaultLimits } from '../protocol/schemas';

const root = join(fileURLToPath(import.meta.url), '../..');

/** The OpenAPI document exactly as `GET /api/openapi.json` serves it. */
export async function gatewayOpenApiDocument(): Promise<Record<string, unknown>> {
  // Building the document touches no Temporal or bus: the client is only asked for its limits.
  const client = { limits: defaultLimits } as unknown as ThreadlineClient;
  const gateway = createGateway({ client, agents: [], logger: createLogger({ level: 'silent' }) });
  const response = await gateway.request('/api/openapi.json');
  if (!response.ok) throw new Error(`GET /api/openapi.json answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/** Every generated doc: path (from the repository root) → its content, formatted as Prettier would. */
export async function generatedDocs(): Promise<Record<string, string>> {
  const docs: Record<string, string> = {
    'docs/configuration.md': configurationMarkdown(),
    'docs/http-api.md': httpApiMarkdown(await gatewayOpenApiDocument()),
  };
  for (const [path, markdown] of Object.entries(docs)) {
    const file = join(root, path);
    docs[path] = await format(markdown, { ...(await resolveConfig(file)), filepath: file });
  }
  return docs;
}

async function main(check: boolean): Promise<number> {
  const stale: string[] = [];
  for (const [path, content] of Object.entries(await generatedDocs())) {
    const file = join(root, path);
    const current = await readFile(file, 'utf8').catch(() => null);
    if (current === content) continue;
    if (check) stale.push(path);
    else {
      await writeFile(file, content);
      console.log(`wrote ${path}`);
    }
  }
  if (stale.length > 0) {
    console.error(`Out of date: ${stale.join(', ')}. Run \`npm run docs\` and commit the result.`);
    return 1;
  }
  if (check) console.log('Generated docs are up to date.');
  return 0;
}

if (isEntryPoint(import.meta.url)) process.exitCode = await main(process.argv.includes('--check'));
