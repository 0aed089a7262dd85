/**
 * The package's "exports" map: `threadline/protocol`, `/client`, `/http-client` and `/worker` resolve (through
 * Node's self-reference, since "name" is set) to the TypeScript entry points, which export their API by name.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type * as workerEntry from 'threadline/worker';
import { ThreadlineError } from '../../protocol/errors';

const root = join(import.meta.dirname, '../..');
const entries = {
  'threadline/protocol': 'protocol/index.ts',
  'threadline/client': 'client/index.ts',
  'threadline/http-client': 'http-client/index.ts',
  'threadline/worker': 'worker/index.ts',
};

describe('package exports', () => {
  it('resolve in Node (run through tsx) to the TypeScript entry points', async () => {
    const script = [
      `const out = {};`,
      ...Object.keys(entries).map(
        (name) => `out[${JSON.stringify(name)}] = import.meta.resolve(${JSON.stringify(name)});`,
      ),
      `const protocol = await import('threadline/protocol');`,
      `const http = await import('threadline/http-client');`,
      `out.loaded = [typeof protocol.sendMessageSignal, typeof http.createHttpClient];`,
      `console.log(JSON.stringify(out));`,
    ].join('\n');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', script],
      { cwd: root },
    );
    const resolved = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;

    for (const [name, file] of Object.entries(entries))
      expect(resolved[name]).toBe(pathToFileURL(join(root, file)).href);
    expect(resolved.loaded).toEqual(['object', 'function']);
  });

  it('export the public API by name', async () => {
    const protocol = await import('threadline/protocol');
    const client = await import('threadline/client');
    const httpClient = await import('threadline/http-client');

    expect(protocol.sendMessageSignal).toMatchObject({ type: 'signal', name: 'sendMessage' });
    expect(protocol.threadKey('r', 't')).toEqual(expect.any(String));
    expect(protocol.messageSchema.safeParse({ contents: 'hi' }).success).toBe(true);
    expect(typeof client.connect).toBe('function');
    expect(typeof client.ThreadlineClient).toBe('function');
    expect(typeof httpClient.createHttpClient).toBe('function');
    expect(typeof httpClient.ThreadlineHttpError).toBe('function');
    // Checked by the type checker only: importing the worker loads the Temporal worker runtime (seconds).
    expectTypeOf<typeof workerEntry>().toHaveProperty('createWorker').toBeFunction();
    expectTypeOf<typeof workerEntry>().toHaveProperty('defineAgent').toBeFunction();
    // One class per error, whichever entry point it came through: `instanceof` works across them.
    expect(protocol.ThreadlineError).toBe(ThreadlineError);
    expect(client.ThreadlineError).toBe(ThreadlineError);
    expect(new client.ValidationError('x')).toBeInstanceOf(protocol.ThreadlineError);
  }, 20_000);

  it('re-export by name, never with export *', async () => {
    for (const file of Object.values(entries)) {
      const source = await readFile(join(root, file), 'utf8');
      expect(source, file).not.toMatch(/export \*/);
    }
  });
});
