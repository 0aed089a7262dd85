/**
 * The resolved settings as `threadline config` shows them: every variable a process reads with its value and where
 * it came from, and the structured settings the process runs with. Secrets are masked.
 */
import { definitionList, definitions, type SettingDefinition, type SettingName } from './definitions';
import { rawValue, type Settings } from './settings';
import type { Env, TemporalSettings } from './temporal';

export const MASK = '********';

export interface VariableRow {
  name: string;
  /** The value as written (masked for secrets), or the default in effect; null: unset, no value. */
  value: string | null;
  /** `environment`, `default` (with the rule when it is computed), or the Temporal profile that set it. */
  source: string;
}

/** Temporal settings a profile can set, by the profile field that sets them. */
const profileField: Partial<Record<SettingName, string>> = {
  temporalAddress: 'address',
  temporalNamespace: 'namespace',
  temporalApiKey: 'apiKey',
  temporalTls: 'tls',
};

/** One row per variable the settings' process reads, in the table's order. */
export function variableRows(env: Env, settings: Settings): VariableRow[] {
  const rows: VariableRow[] = [];
  for (const [name, definition] of definitionList) {
    if (!definition.readBy.includes(settings.reader)) continue;
    const raw = rawValue(env, definition);
    if (raw !== undefined) {
      rows.push({ name: definition.env, value: masked(definition, raw), source: 'environment' });
      continue;
    }
    const field = profileField[name];
    const { temporal } = settings;
    if (field && temporal.profileFields.includes(field)) {
      rows.push({
        name: definition.env,
        value: profileValue(name, temporal),
        source: `profile "${temporal.profile}" in ${temporal.configFile}`,
      });
      continue;
    }
    const value = resolvedDefault[name]?.(settings) ?? plainDefault(definition);
    // `— (in-process bus)` reads `default: in-process bus`.
    const note = definition.defaultText?.replace(/`/g, '').replace(/^— \((.*)\)$/, '$1');
    rows.push({ name: definition.env, value, source: note && note !== value ? `default: ${note}` : 'default' });
  }
  return rows;
}

/** Defaults that depend on other settings, as these settings resolved them. */
const resolvedDefault: Partial<Record<SettingName, (settings: Settings) => string | undefined>> = {
  rateLimitBurst: (settings) => String(settings.gateway.rateLimit.burst),
  temporalNamespace: (settings) => settings.temporal.namespace,
  temporalProfile: (settings) => settings.temporal.profile,
  temporalConfigFile: (settings) => settings.temporal.configFile,
};

function plainDefault(definition: SettingDefinition): string | null {
  const value = definition.default;
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return null;
  return Array.isArray(value) ? value.join(',') : String(value);
}

function profileValue(name: SettingName, temporal: TemporalSettings): string | null {
  if (name === 'temporalAddress') return temporal.address ?? null;
  if (name === 'temporalNamespace') return temporal.namespace;
  if (name === 'temporalApiKey') return temporal.apiKey ? MASK : null;
  return temporal.tls ? 'true' : 'false';
}

/** A secret URL keeps its host (`redis://:********@redis:6379`); other secrets are masked whole. */
function masked(definition: SettingDefinition, raw: string): string {
  if (!definition.secret) return raw;
  return definition === definitions.redisUrl ? maskUrl(raw) : MASK;
}

function maskUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = MASK;
    else if (url.username) url.username = MASK;
    return url.toString();
  } catch {
    return MASK;
  }
}

/** The settings object with its secrets masked and TLS material summarized, for `threadline config --json`. */
export function maskedSettings(settings: Settings): Record<string, unknown> {
  const { models, gateway, temporal } = settings;
  const tls = temporal.tls;
  return {
    ...settings,
    models: { ...models, ...(models.openaiApiKey ? { openaiApiKey: MASK } : {}) },
    gateway: {
      ...gateway,
      ...(gateway.apiKeys
        ? {
            apiKeys: Object.fromEntries(
              Object.values(gateway.apiKeys).map((resources, i) => [`${MASK}${i + 1}`, resources]),
            ),
          }
        : {}),
    },
    ...(settings.redisUrl ? { redisUrl: maskUrl(settings.redisUrl) } : {}),
    temporal: {
      ...temporal,
      ...(temporal.apiKey ? { apiKey: MASK } : {}),
      tls:
        typeof tls === 'object'
          ? {
              serverName: tls.serverNameOverride,
              serverCaCertificate: tls.serverRootCACertificate ? 'set' : 'system roots',
              clientCertificate: tls.clientCertPair ? 'set' : 'none',
            }
          : tls,
      ...(temporal.metadata
        ? { metadata: Object.fromEntries(Object.keys(temporal.metadata).map((header) => [header, MASK])) }
        : {}),
    },
  };
}
