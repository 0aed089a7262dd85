/**
 * `protocol/` and `http-client/` are imported by browser apps: bundled for the browser (vite's build API, no Node
 * polyfills) they must need no Node built-in, and the bundle must load where only web-platform globals exist.
 */
import { isBuiltin } from 'node:module';
import { join, relative } from 'node:path';
import { runInNewContext } from 'node:vm';
import { build, type Plugin, type Rolldown } from 'vite';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

interface BrowserBundle {
  code: string;
  /** Every Node built-in the bundle would need, with the file that imports it. */
  nodeImports: string[];
}

async function bundleForBrowser(entry: string): Promise<BrowserBundle> {
  const nodeImports: string[] = [];
  const recordNodeImports: Plugin = {
    name: 'record-node-imports',
    enforce: 'pre',
    resolveId(id, importer) {
      if (!isBuiltin(id)) return null;
      nodeImports.push(`${id} (imported by ${importer ? relative(root, importer) : 'the entry'})`);
      return { id, external: true };
    },
  };
  const output = await build({
    configFile: false,
    root,
    logLevel: 'silent',
    plugins: [recordNodeImports],
    build: {
      write: false,
      minify: false,
      lib: { entry: join(root, entry), formats: ['iife'], name: 'bundle' },
      rolldownOptions: { platform: 'browser' },
    },
  });
  const [result] = [output].flat() as Rolldown.RolldownOutput[];
  const chunk = result.output.find((o): o is Rolldown.OutputChunk => o.type === 'chunk');
  return { code: chunk!.code, nodeImports };
}

/** Runs an IIFE bundle in a fresh context with web-platform globals only: no process, Buffer, require or module. */
function loadInBrowserLikeContext(code: string): Record<string, unknown> {
  const web = {
    AbortController,
    AbortSignal,
    Blob,
    console,
    crypto: globalThis.crypto,
    fetch,
    Headers,
    queueMicrotask,
    ReadableStream,
    Request,
    Response,
    setTimeout,
    clearTimeout,
    structuredClone,
    TextDecoder,
    TextEncoder,
    URL,
    URLSearchParams,
  } as Record<string, unknown>;
  web.globalThis = web;
  web.self = web;
  web.window = web;
  return runInNewContext(`${code}\n;bundle`, web) as Record<string, unknown>;
}

describe('browser bundles', () => {
  it('protocol/index.ts needs no Node built-in and loads in a browser-like context', async () => {
    const bundle = await bundleForBrowser('protocol/index.ts');

    expect(bundle.nodeImports).toEqual([]);
    const protocol = loadInBrowserLikeContext(bundle.code);
    expect(protocol.sendMessageSignal).toEqual({ type: 'signal', name: 'sendMessage' });
    expect(typeof protocol.threadKey).toBe('function');
  }, 30_000);

  it('http-client/index.ts needs no Node built-in and loads in a browser-like context', async () => {
    const bundle = await bundleForBrowser('http-client/index.ts');

    expect(bundle.nodeImports).toEqual([]);
    const sdk = loadInBrowserLikeContext(bundle.code);
    expect(typeof sdk.createHttpClient).toBe('function');
  }, 30_000);

  it('names the Node built-ins a Node-side entry point would drag in (the check itself works)', async () => {
    const bundle = await bundleForBrowser('client/index.ts');

    expect(bundle.nodeImports).toContain('node:crypto (imported by client/inputs.ts)');
  }, 60_000);
});
