/**
 * The web console (`console/`), served by the gateway at `/console`. Nothing generated is committed and there is no
 * build step: the first request for the console bundles `console/main.tsx` in memory with esbuild (a dependency; tsx
 * runs on it too), about a quarter of a second, and the gateway keeps the result for its lifetime. Gateways that
 * nobody opens the console on never build it.
 *
 * The console is static: its page and assets need no API key. It talks to `/api` like any other client, with the key
 * the user types in (kept in the tab's sessionStorage, sent as `Authorization: Bearer`; docs/console.md, "Auth"), so
 * it shows exactly what that key may see. A strict Content-Security-Policy allows scripts, styles and requests from
 * this origin only.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Hono } from 'hono';
import type { GatewayEnv } from './auth';

/** What the page tells the console about this gateway (inlined in the HTML as JSON, read by `console/config.ts`). */
export interface ConsoleConfig {
  /** API keys are configured: the console asks for one before anything else. */
  authRequired: boolean;
  /** Base URL of the Temporal Web UI the console links workflows to. */
  temporalUiUrl: string;
  /** The Temporal namespace of this gateway's threads (part of a Temporal UI link). */
  namespace: string;
}

/** The Temporal dev server's UI, where `npm start` and `temporal server start-dev` put it by default. */
export const DEFAULT_TEMPORAL_UI_URL = 'http://127.0.0.1:8233';

/** The page's root path; every path below it that is not an asset is the console's own route (`console/router.ts`). */
export const CONSOLE_PATH = '/console';
const ASSETS_PATH = `${CONSOLE_PATH}/assets/`;

interface Bundle {
  /** `app-<hash>.js`, `app-<hash>.css`, and their source maps, by file name. */
  files: Map<string, { contents: Uint8Array; type: string }>;
  script: string;
  style: string | undefined;
}

const consoleDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'console');
let bundle: Promise<Bundle> | null = null;

/** Bundles the console once per process; a failed build is tried again on the next request. */
function consoleBundle(): Promise<Bundle> {
  bundle ??= buildBundle().catch((err: unknown) => {
    bundle = null;
    throw err;
  });
  return bundle;
}

async function buildBundle(): Promise<Bundle> {
  // Loaded on first use: a gateway whose console nobody opens never starts esbuild's service process.
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: { app: join(consoleDir, 'main.tsx') },
    bundle: true,
    write: false,
    outdir: '/assets',
    entryNames: '[name]-[hash]',
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome111', 'firefox111', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: 'linked',
    legalComments: 'none',
    charset: 'utf8',
    logLevel: 'silent',
  });
  const files = new Map<string, { contents: Uint8Array; type: string }>();
  let script = '';
  let style: string | undefined;
  for (const file of result.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    const type = name.endsWith('.js')
      ? 'text/javascript; charset=utf-8'
      : name.endsWith('.css')
        ? 'text/css; charset=utf-8'
        : 'application/json; charset=utf-8';
    files.set(name, { contents: file.contents, type });
    if (name.endsWith('.js')) script = name;
    if (name.endsWith('.css')) style = name;
  }
  return { files, script, style };
}

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** JSON safe inside a `<script>` element: no `<` that could close it. */
function inlineJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

function page(config: ConsoleConfig, assets: Bundle): string {
  const style = assets.style ? `<link rel="stylesheet" href="${ASSETS_PATH}${assets.style}">` : '';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<title>Threadline console</title>' +
    `${style}<script type="module" src="${ASSETS_PATH}${assets.script}"></script></head>` +
    '<body><div id="app"><p class="boot">Loading the Threadline console…</p></div>' +
    `<script type="application/json" id="threadline-console-config">${inlineJson(config)}</script>` +
    '<noscript>The Threadline console needs JavaScript.</noscript></body></html>'
  );
}

async function servePage(c: Context<GatewayEnv>, config: ConsoleConfig): Promise<Response> {
  let assets: Bundle;
  try {
    assets = await consoleBundle();
  } catch (err) {
    const message = `The console could not be built: ${(err as Error).message}`;
    return c.text(message, 500, { 'Cache-Control': 'no-store' });
  }
  return c.html(page(config, assets), 200, { ...SECURITY_HEADERS, 'Cache-Control': 'no-cache' });
}

/** The gateway's front door: a link to the console for browsers, the same as JSON for everything else. */
function serveRoot(c: Context<GatewayEnv>): Response {
  const links = { console: CONSOLE_PATH, openapi: '/api/openapi.json', health: '/health' };
  if (!(c.req.header('Accept') ?? '').includes('text/html')) return c.json({ name: 'Threadline gateway', ...links });
  return c.html(
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Threadline gateway</title></head><body>' +
      `<h1>Threadline gateway</h1><ul><li><a href="${links.console}">Console</a></li>` +
      `<li><a href="${links.openapi}">OpenAPI document</a></li><li><a href="${links.health}">Health</a></li></ul>` +
      '</body></html>',
    200,
    SECURITY_HEADERS,
  );
}

/**
 * Serves `/` (links), `/console` and its routes (the page), and `/console/assets/*` (the bundle, immutable). `config`
 * is read per page, so a gateway built around a stand-in client (the OpenAPI document's) never asks it.
 */
export function mountConsole(app: Hono<GatewayEnv>, config: () => ConsoleConfig): void {
  app.get('/', (c) => serveRoot(c));
  app.get(`${ASSETS_PATH}:file`, async (c) => {
    const file = (await consoleBundle().catch(() => null))?.files.get(c.req.param('file'));
    if (!file) return c.json({ error: { type: 'NotFoundError', message: `No console asset ${c.req.path}` } }, 404);
    // Names carry the content hash: a new build has new names, so a browser may keep these for good.
    return c.body(file.contents as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': file.type,
      'Cache-Control': 'public, max-age=31536000, immutable',
      'X-Content-Type-Options': 'nosniff',
    });
  });
  app.get(CONSOLE_PATH, (c) => servePage(c, config()));
  app.get(`${CONSOLE_PATH}/*`, (c) => servePage(c, config()));
}
