/**
 * Settings (config/): one table parsed per process, invalid values named with the form they need, the Temporal
 * connection through @temporalio/envconfig (temporal.toml profiles, TEMPORAL_* over them), secrets masked.
 */
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definitionList } from '../../config/definitions';
import { maskedSettings, variableRows } from '../../config/describe';
import {
  SettingsError,
  readSettings,
  temporalAddress,
  temporalConnectionFromEnv,
  temporalConnectionOptions,
} from '../../config/settings';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'threadline-config-'));
});
afterAll(async () => {
  const { rm } = await import('node:fs/promises');
  await rm(dir, { recursive: true, force: true });
});

async function configFile(name: string, toml: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, toml);
  return path;
}

function errorOf(read: () => unknown): SettingsError {
  try {
    read();
  } catch (err) {
    expect(err).toBeInstanceOf(SettingsError);
    return err as SettingsError;
  }
  throw new Error('expected a SettingsError');
}

describe('readSettings', () => {
  it('gives every process the documented defaults', () => {
    const settings = readSettings({}, 'start');
    expect(settings).toMatchObject({
      reader: 'start',
      models: {},
      server: { port: 4111, host: '127.0.0.1', keepAliveMs: 25_000, maxInputBytes: 256 * 1024 },
      gateway: { rateLimit: { perSecond: 200, burst: 400 }, maxSubscribersPerThread: 1000, corsOrigins: [] },
      temporal: { namespace: 'default', taskQueue: 'threadline', profile: 'default' },
      devServer: { port: 7233, uiPort: 8233, dataDir: '.data' },
    });
    expect(settings.temporal.address).toBeUndefined();
    expect(settings.redisUrl).toBeUndefined();
    expect(temporalAddress(settings)).toBe('127.0.0.1:7233');
  });

  it("reads the Temporal core's log filter, and refuses one the core could not parse, naming the form", () => {
    const filter = 'temporalio_sdk_core::worker::workflow=debug, warn';
    expect(readSettings({ THREADLINE_TEMPORAL_CORE_LOG_FILTER: filter }, 'worker').observability).toMatchObject({
      temporalCoreLogFilter: 'temporalio_sdk_core::worker::workflow=debug,warn',
    });
    expect(readSettings({}, 'worker').observability.temporalCoreLogFilter).toBeUndefined();
    for (const bad of ['temporalio_sdk_core=loud', 'a b', 'x=debug;rm', ',']) {
      expect(() => readSettings({ THREADLINE_TEMPORAL_CORE_LOG_FILTER: bad }, 'worker')).toThrow(
        /THREADLINE_TEMPORAL_CORE_LOG_FILTER must be comma-separated tracing directives/,
      );
    }
  });

  it('reads each variable with its meaning; empty is the same as unset', () => {
    const settings = readSettings(
      {
        MODEL: 'openai/gpt-4o-mini',
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
        PORT: '8080',
        HOST: '',
        REDIS_URL: 'redis://127.0.0.1:6379',
        TEMPORAL_ADDRESS: 'temporal.internal:7233',
        TEMPORAL_NAMESPACE: 'prod',
        TEMPORAL_TASK_QUEUE: 'threads',
        TEMPORAL_PORT: '7300',
        THREADLINE_DATA_DIR: '/var/lib/threadline',
        THREADLINE_MAX_INPUT_BYTES: '1024',
      },
      'start',
    );
    expect(settings.models).toEqual({
      model: 'openai/gpt-4o-mini',
      openaiApiKey: 'sk-test',
      openaiBaseUrl: 'http://127.0.0.1:11434/v1',
    });
    expect(settings.server).toMatchObject({ port: 8080, host: '127.0.0.1', maxInputBytes: 1024 });
    expect(settings.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(settings.temporal).toMatchObject({
      address: 'temporal.internal:7233',
      addressSource: 'TEMPORAL_ADDRESS',
      namespace: 'prod',
      taskQueue: 'threads',
    });
    expect(settings.devServer).toMatchObject({ port: 7300, dataDir: '/var/lib/threadline' });
  });

  it('reads only what the process uses: the gateway ignores model settings, the worker gateway ones', () => {
    expect(readSettings({ MODEL: 'not a model' }, 'gateway').models).toEqual({});
    expect(readSettings({ PORT: 'x' }, 'worker').server.port).toBe(4111);
    expect(() => readSettings({ MODEL: 'not a model' }, 'worker')).toThrow(/MODEL must be provider\/model/);
    expect(() => readSettings({ PORT: 'x' }, 'gateway')).toThrow(/PORT/);
  });

  it('lists every invalid variable at once, naming it, the form it needs and what it got', () => {
    const error = errorOf(() =>
      readSettings(
        {
          PORT: '70000',
          TEMPORAL_UI_PORT: 'eighty',
          THREADLINE_SSE_KEEPALIVE_MS: '1.5',
          TEMPORAL_TLS: 'maybe',
          OPENAI_BASE_URL: 'localhost:11434',
          TEMPORAL_ADDRESS: 'http://temporal:7233',
          THREADLINE_CORS_ORIGINS: 'https://a.example/app',
        },
        'start',
      ),
    );
    expect(error.problems).toEqual([
      'OPENAI_BASE_URL must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1, got "localhost:11434".',
      'PORT must be a whole number from 0 to 65535, got "70000".',
      'THREADLINE_SSE_KEEPALIVE_MS must be a whole number of at least 0, got "1.5".',
      expect.stringContaining('THREADLINE_CORS_ORIGINS must list comma-separated origins'),
      'TEMPORAL_ADDRESS must be host:port without a scheme, e.g. temporal.example.com:7233, got "http://temporal:7233".',
      'TEMPORAL_TLS must be true or false (or 1 or 0), got "maybe".',
      'TEMPORAL_UI_PORT must be a whole number from 0 to 65535, got "eighty".',
    ]);
    expect(error.message).toMatch(/^7 settings are invalid:\n {2}- OPENAI_BASE_URL/);
  });

  it('never quotes a secret in an error', () => {
    const error = errorOf(() => readSettings({ REDIS_URL: 'http://:hunter2@redis:6379' }, 'worker'));
    expect(error.message).toMatch(/^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/);
    expect(error.message).not.toContain('hunter2');
  });

  it("bounds slow clients on every HTTP listener: the headers' timeout at most the request's", () => {
    expect(readSettings({}, 'worker').server.http).toEqual({
      headersTimeoutMs: 15_000,
      requestTimeoutMs: 60_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 10_000,
    });
    const env = {
      THREADLINE_HTTP_HEADERS_TIMEOUT_MS: '5000',
      THREADLINE_HTTP_REQUEST_TIMEOUT_MS: '5000',
      THREADLINE_HTTP_KEEPALIVE_TIMEOUT_MS: '65000',
      THREADLINE_HTTP_MAX_CONNECTIONS: '100',
    };
    expect(readSettings(env, 'gateway').server.http).toEqual({
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 5_000,
      keepAliveTimeoutMs: 65_000,
      maxConnections: 100,
    });
    expect(errorOf(() => readSettings({ THREADLINE_HTTP_HEADERS_TIMEOUT_MS: '90000' }, 'start')).problems).toEqual([
      'THREADLINE_HTTP_HEADERS_TIMEOUT_MS (90000) must not be more than THREADLINE_HTTP_REQUEST_TIMEOUT_MS (60000): ' +
        'the headers are part of the request.',
    ]);
    expect(() => readSettings({ THREADLINE_HTTP_MAX_CONNECTIONS: '0' }, 'worker')).toThrow(
      'THREADLINE_HTTP_MAX_CONNECTIONS must be at least 1, got "0".',
    );
  });
});

describe('the Temporal connection (@temporalio/envconfig)', () => {
  it('honours a profile of the temporal.toml that TEMPORAL_CONFIG_FILE names, selected by TEMPORAL_PROFILE', async () => {
    const file = await configFile(
      'profiles.toml',
      [
        '[profile.default]',
        'address = "localhost:7233"',
        '',
        '[profile.prod]',
        'address = "prod.tmprl.example:7233"',
        'namespace = "prod-ns"',
        'api_key = "profile-key"',
        '',
        '[profile.prod.grpc_meta]',
        'x-team = "threads"',
      ].join('\n'),
    );
    const env = { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' };
    const { temporal } = readSettings(env, 'worker');

    expect(temporal).toMatchObject({
      address: 'prod.tmprl.example:7233',
      addressSource: `profile "prod" in ${file}`,
      namespace: 'prod-ns',
      apiKey: 'profile-key',
      tls: true, // an API key turns TLS on, as the CLI does
      metadata: { 'x-team': 'threads' },
      taskQueue: 'threadline',
      profile: 'prod',
      configFile: file,
    });
    expect(temporalConnectionOptions(temporal, temporal.address!)).toEqual({
      address: 'prod.tmprl.example:7233',
      apiKey: 'profile-key',
      tls: true,
      metadata: { 'x-team': 'threads' },
    });
    // Without TEMPORAL_PROFILE the `default` profile applies.
    expect(readSettings({ TEMPORAL_CONFIG_FILE: file }, 'worker').temporal).toMatchObject({
      address: 'localhost:7233',
      namespace: 'default',
      profile: 'default',
    });
  });

  it('lets TEMPORAL_* variables override the profile field by field', async () => {
    const file = await configFile(
      'override.toml',
      '[profile.prod]\naddress = "prod:7233"\nnamespace = "prod-ns"\napi_key = "k"\n',
    );
    const { temporal } = readSettings(
      { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'staging', TEMPORAL_TLS: 'false' },
      'gateway',
    );
    expect(temporal).toMatchObject({ address: 'prod:7233', namespace: 'staging', apiKey: 'k', tls: false });
  });

  it('finds the default file under XDG_CONFIG_HOME, as the temporal CLI does', async () => {
    const configHome = await mkdtemp(join(dir, 'xdg-'));
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(configHome, 'temporalio'));
    await writeFile(join(configHome, 'temporalio', 'temporal.toml'), '[profile.default]\naddress = "from-xdg:7233"\n');
    const { temporal } = readSettings({ XDG_CONFIG_HOME: configHome }, 'start');
    expect(temporal.address).toBe('from-xdg:7233');
    expect(temporal.configFile).toBe(join(configHome, 'temporalio', 'temporal.toml'));
  });

  it('reads TLS material from the paths the TLS variables name', async () => {
    const ca = await configFile('ca.pem', 'ca-bytes');
    const cert = await configFile('client.pem', 'cert-bytes');
    const key = await configFile('client.key', 'key-bytes');
    const { temporal } = readSettings(
      {
        TEMPORAL_ADDRESS: 'secure:7233',
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca,
        TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: key,
        TEMPORAL_TLS_SERVER_NAME: 'secure.example',
      },
      'worker',
    );
    const tls = temporal.tls as {
      serverNameOverride?: string;
      serverRootCACertificate?: Uint8Array;
      clientCertPair?: { crt: Uint8Array; key: Uint8Array };
    };
    expect(tls.serverNameOverride).toBe('secure.example');
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toBe('ca-bytes');
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe('cert-bytes');
    expect(Buffer.from(tls.clientCertPair!.key).toString()).toBe('key-bytes');
  });

  it('says what to fix when the profile, the file or a TLS file is missing', async () => {
    const file = await configFile('only-default.toml', '[profile.default]\naddress = "a:7233"\n');
    expect(() => readSettings({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' }, 'worker')).toThrow(
      `TEMPORAL_PROFILE is "prod", but ${file} has no [profile.prod].`,
    );
    expect(() => readSettings({ TEMPORAL_CONFIG_FILE: join(dir, 'missing.toml') }, 'worker')).toThrow(
      /TEMPORAL_CONFIG_FILE is ".*missing\.toml", but there is no file there/,
    );
    expect(() => readSettings({ TEMPORAL_PROFILE: 'prod' }, 'worker')).toThrow(
      /TEMPORAL_PROFILE is "prod", but there is no Temporal config file/,
    );
    expect(() => readSettings({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(dir, 'nope.pem') }, 'worker')).toThrow(
      /The Temporal TLS settings: .*nope\.pem/,
    );
    const broken = await configFile('broken.toml', '[profile.default\naddress = ');
    expect(() => readSettings({ TEMPORAL_CONFIG_FILE: broken }, 'worker')).toThrow(
      new RegExp(`The Temporal config file ${broken}`),
    );
  });

  it('gives connect() the same connection, falling back to the dev server port', () => {
    expect(temporalConnectionFromEnv({ TEMPORAL_PORT: '7300', TEMPORAL_TASK_QUEUE: 'q' })).toMatchObject({
      address: '127.0.0.1:7300',
      temporal: { taskQueue: 'q', namespace: 'default' },
    });
  });
});

describe('threadline config view', () => {
  it('masks secrets and names where each value came from', async () => {
    const file = await configFile('view.toml', '[profile.default]\nnamespace = "from-file"\napi_key = "file-key"\n');
    const env = {
      TEMPORAL_CONFIG_FILE: file,
      OPENAI_API_KEY: 'sk-secret',
      REDIS_URL: 'redis://:hunter2@redis:6379',
      THREADLINE_API_KEYS: '{"tenant-key":["t1"]}',
      PORT: '9000',
    };
    const settings = readSettings(env, 'start');
    const rows = variableRows(env, settings);
    const text = JSON.stringify({ settings: maskedSettings(settings), rows });

    for (const secret of ['sk-secret', 'hunter2', 'tenant-key', 'file-key']) expect(text).not.toContain(secret);
    const row = (name: string) => rows.find((r) => r.name === name);
    expect(row('PORT')).toEqual({ name: 'PORT', value: '9000', source: 'environment' });
    expect(row('REDIS_URL')).toMatchObject({ value: 'redis://:********@redis:6379' });
    expect(row('TEMPORAL_NAMESPACE')).toEqual({
      name: 'TEMPORAL_NAMESPACE',
      value: 'from-file',
      source: `profile "default" in ${file}`,
    });
    expect(row('THREADLINE_RATE_LIMIT_BURST')).toEqual({
      name: 'THREADLINE_RATE_LIMIT_BURST',
      value: '400',
      source: 'default: twice the rate',
    });
    // Every variable `npm start` reads (all but the worker's own listener port), in the table's order.
    expect(rows.map((r) => r.name)).toEqual(
      definitionList.filter(([, d]) => d.readBy.includes('start')).map(([, d]) => d.env),
    );
  });
});

describe('where the environment is read', () => {
  it('only in the entry points (and connect(), documented); library code takes settings as arguments', async () => {
    const root = join(import.meta.dirname, '../..');
    const allowed = new Set([
      'worker/main.ts',
      'worker/start.ts',
      'worker/cli.ts',
      'worker/temporal-cli.ts', // its own `npm run temporal:setup` entry, and the default of an `env` option
      'worker/temporal-server.ts', // the same for the production Temporal server's build (an entry, an `env` default)
      'worker/go-build.ts', // the default of the `env` option both builds pass on
      'worker/setup.ts', // `threadline setup`'s own entry (the compose file's setup service)
      'gateway/main.ts',
      'client/connect.ts', // connect() without a client: documented
    ]);
    const readers: string[] = [];
    for (const folder of [
      'protocol',
      'workflows',
      'activities',
      'agents',
      'bus',
      'config',
      'client',
      'gateway',
      'worker',
    ]) {
      for (const entry of await readdir(join(root, folder), { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
        const path = join(entry.parentPath, entry.name);
        const code = (await readFile(path, 'utf8')).split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line)); // comments may name it
        // Quoted or in backticks it is prose (docs text), not a read.
        if (code.some((line) => /(^|[^'"`\w.])process\.env\b/.test(line))) readers.push(relative(root, path));
      }
    }
    expect(readers.filter((path) => !allowed.has(path))).toEqual([]);
  });
});
