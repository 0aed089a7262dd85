/**
 * The Temporal connection, loaded by `@temporalio/envconfig` as the `temporal` CLI loads it: a profile of the config
 * file (`TEMPORAL_CONFIG_FILE`, else `~/.config/temporalio/temporal.toml`; `TEMPORAL_PROFILE`, else `default`), then
 * `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*` and `TEMPORAL_GRPC_META_*` over it.
 * Only the environment passed in is read.
 */
import { existsSync } from 'node:fs';
import { platform } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { TLSConfig } from '@temporalio/client';
import { loadClientConfig, loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';

export type Env = Readonly<Record<string, string | undefined>>;

export interface TemporalSettings {
  /** The server, from `TEMPORAL_ADDRESS` or the profile; undefined when neither names one. */
  address?: string;
  /** Where `address` came from, for start-up lines: `TEMPORAL_ADDRESS` or `profile "prod" in /…/temporal.toml`. */
  addressSource?: string;
  namespace: string;
  taskQueue: string;
  apiKey?: string;
  /** `true`/a config: TLS on; `false`: off; undefined: the SDK's default (off). */
  tls?: TLSConfig | boolean;
  /** gRPC headers sent with every call (`grpc_meta` of the profile, `TEMPORAL_GRPC_META_<NAME>`). */
  metadata?: Record<string, string>;
  /** The profile used, the config file it was read from (undefined: no file), and the fields the file set. */
  profile: string;
  configFile?: string;
  profileFields: string[];
}

/** What a `Connection.connect` / `NativeConnection.connect` needs to reach the server at `address`. */
export interface TemporalConnectionOptions {
  address: string;
  apiKey?: string;
  tls?: TLSConfig | boolean;
  metadata?: Record<string, string>;
}

const DEFAULT_PROFILE = 'default';
const GRPC_META_PREFIX = 'TEMPORAL_GRPC_META_';

/**
 * Loads the connection settings from `env` (and the config file it points at). `defaults` fill what neither names:
 * the namespace, and the task queue, which is Threadline's own (`TEMPORAL_TASK_QUEUE`, not part of a profile).
 */
export function loadTemporalSettings(env: Env, defaults: { namespace: string; taskQueue: string }): TemporalSettings {
  const vars = presentVariables(env);
  const explicitFile = vars.TEMPORAL_CONFIG_FILE;
  if (explicitFile && !existsSync(explicitFile)) {
    throw new Error(
      `TEMPORAL_CONFIG_FILE is "${explicitFile}", but there is no file there. Point it at a temporal.toml, or unset it.`,
    );
  }
  const file = explicitFile ?? defaultConfigFile(vars);
  const configFile = file && existsSync(file) ? file : undefined;
  const profile = vars.TEMPORAL_PROFILE ?? DEFAULT_PROFILE;

  const fromFile = withContext(`The Temporal config file ${configFile}`, () =>
    configFile ? loadClientConfig({ configSource: { path: configFile } }).profiles[profile] : undefined,
  );
  if (vars.TEMPORAL_PROFILE && !fromFile) {
    throw new Error(
      `TEMPORAL_PROFILE is "${profile}", but ${configFile ? `${configFile} has no [profile.${profile}]` : `there is no Temporal config file (looked for ${file ?? 'TEMPORAL_CONFIG_FILE'})`}. ` +
        'Add the profile (`temporal config set --profile <name> --prop address --value <host:port>`), or unset TEMPORAL_PROFILE.',
    );
  }

  const merged = loadClientConfigProfile({
    profile: vars.TEMPORAL_PROFILE,
    ...(configFile ? { configSource: { path: configFile } } : { disableFile: true }),
    overrideEnvVars: vars,
  });
  const { connectionOptions, namespace } = withContext('The Temporal TLS settings', () => toClientOptions(merged));
  const addressSource = vars.TEMPORAL_ADDRESS
    ? 'TEMPORAL_ADDRESS'
    : fromFile?.address
      ? `profile "${profile}" in ${configFile}`
      : undefined;
  return {
    address: connectionOptions.address,
    addressSource,
    namespace: namespace ?? defaults.namespace,
    taskQueue: defaults.taskQueue,
    apiKey: connectionOptions.apiKey,
    tls: connectionOptions.tls ?? undefined,
    metadata: connectionOptions.metadata as Record<string, string> | undefined,
    profile,
    configFile,
    profileFields: Object.keys(fromFile ?? {}),
  };
}

/** Options for `Connection.connect` (client) and `NativeConnection.connect` (worker) alike. */
export function temporalConnectionOptions(settings: TemporalSettings, address: string): TemporalConnectionOptions {
  return {
    address,
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
    ...(settings.tls !== undefined ? { tls: settings.tls } : {}),
    ...(settings.metadata && Object.keys(settings.metadata).length > 0 ? { metadata: settings.metadata } : {}),
  };
}

/**
 * Unset and empty are the same for Threadline's settings, so empty values are dropped (envconfig would take an empty
 * TEMPORAL_ADDRESS as an address); an empty `TEMPORAL_GRPC_META_*` still removes the profile's header, as documented.
 */
function presentVariables(env: Env): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (value !== '' || name.startsWith(GRPC_META_PREFIX)) vars[name] = value;
  }
  return vars;
}

/** Where the `temporal` CLI keeps its config file (envconfig looks in the same place). */
function defaultConfigFile(vars: Record<string, string>): string | undefined {
  switch (platform()) {
    case 'win32':
      return vars.APPDATA ? join(vars.APPDATA, 'temporalio', 'temporal.toml') : undefined;
    case 'darwin':
      return vars.HOME ? join(vars.HOME, 'Library', 'Application Support', 'temporalio', 'temporal.toml') : undefined;
    default: {
      const xdg = vars.XDG_CONFIG_HOME;
      if (xdg) return isAbsolute(xdg) ? join(xdg, 'temporalio', 'temporal.toml') : undefined;
      return vars.HOME ? join(vars.HOME, '.config', 'temporalio', 'temporal.toml') : undefined;
    }
  }
}

function withContext<T>(context: string, load: () => T): T {
  try {
    return load();
  } catch (err) {
    throw new Error(`${context}: ${(err as Error).message}`, { cause: err });
  }
}
