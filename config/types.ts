/**
 * The kinds of value a setting takes: each knows its expected form (for error messages and the generated docs) and
 * parses a raw environment value, throwing an error that names the variable, the form and what it got.
 */

/** How an invalid value is quoted in errors: `"abc"`, or a placeholder for secrets. */
export interface Given {
  name: string;
  shown: string;
}

export interface ValueType<T> {
  /** Completes "must be …", e.g. `a whole number from 0 to 65535`. */
  form: string;
  /** Parses a non-empty raw value. */
  parse(raw: string, given: Given): T;
}

export function invalid(given: Given, form: string): Error {
  return new Error(`${given.name} must be ${form}, got ${given.shown}.`);
}

export const text: ValueType<string> = { form: 'text', parse: (raw) => raw };

export const path: ValueType<string> = { form: 'a path', parse: (raw) => raw };

/** A whole number in [min, max]. Below `min` it says "must be at least min", the plainer fix. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): ValueType<number> {
  const form =
    max === Number.MAX_SAFE_INTEGER ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`;
  return {
    form,
    parse(raw, given) {
      const n = Number(raw);
      if (!/^\s*-?\d+\s*$/.test(raw) || !Number.isSafeInteger(n)) throw invalid(given, form);
      if (n < min) throw new Error(`${given.name} must be at least ${min}, got ${given.shown}.`);
      if (n > max) throw invalid(given, form);
      return n;
    },
  };
}

export function decimal(min: number): ValueType<number> {
  const form = `a number of at least ${min}`;
  return {
    form,
    parse(raw, given) {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || n < min) throw invalid(given, form);
      return n;
    },
  };
}

/** `true`/`false`, also `1`/`0` as the Temporal CLI reads them. */
export const flag: ValueType<boolean> = {
  form: 'true or false (or 1 or 0)',
  parse(raw, given) {
    const value = raw.trim().toLowerCase();
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    throw invalid(given, flag.form);
  },
};

/** A URL with one of `protocols` (`redis:`, `https:`, …). */
export function url(protocols: string[], example: string): ValueType<string> {
  const schemes = protocols.map((p) => `${p}//`).join(' or ');
  const form = `${/^[aeiouh]/.test(schemes) ? 'an' : 'a'} ${schemes} URL, e.g. ${example}`;
  return {
    form,
    parse(raw, given) {
      let parsed: URL;
      try {
        parsed = new URL(raw);
      } catch {
        throw invalid(given, form);
      }
      if (!protocols.includes(parsed.protocol)) throw invalid(given, form);
      return raw;
    },
  };
}

/** `host:port`, the form of a Temporal frontend address (no scheme: gRPC, not a URL). */
export const hostPort: ValueType<string> = {
  form: 'host:port without a scheme, e.g. temporal.example.com:7233',
  parse(raw, given) {
    const value = raw.trim();
    if (/\s|:\/\//.test(value)) throw invalid(given, hostPort.form);
    return value;
  },
};

/** `provider/model` or `demo`; which providers exist is the model resolver's business (agents/models.ts). */
export const modelName: ValueType<string> = {
  form: 'provider/model (e.g. openai/gpt-4o-mini) or demo',
  parse(raw, given) {
    const value = raw.trim();
    if (value !== 'demo' && !/^[A-Za-z0-9_.-]+\/\S+$/.test(value)) throw invalid(given, modelName.form);
    return value;
  },
};

/** Comma-separated browser origins (`scheme://host[:port]`, no path), or `*`. */
export const origins: ValueType<string[]> = {
  form: 'comma-separated origins (scheme://host[:port] without a path, e.g. https://app.example.com), or *',
  parse(raw, given) {
    const list = raw
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean);
    for (const origin of list) {
      if (origin !== '*' && !isOrigin(origin)) {
        throw new Error(`${given.name} must list ${origins.form}: "${origin}" is not an origin.`);
      }
    }
    return list;
  },
};

function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
}

/** A value parsed by `parse`, which writes its own complete error messages (JSON documents). */
export function custom<T>(form: string, parse: (raw: string, name: string) => T): ValueType<T> {
  return { form, parse: (raw, given) => parse(raw, given.name) };
}

/** One of `values`, as written (case-insensitive). */
export function oneOf<T extends string>(values: readonly T[]): ValueType<T> {
  const form = `one of ${values.join(', ')}`;
  return {
    form,
    parse(raw, given) {
      const value = raw.trim().toLowerCase();
      const found = values.find((v) => v === value);
      if (found === undefined) throw invalid(given, form);
      return found;
    },
  };
}

/**
 * A Rust `tracing` env-filter (what the Temporal SDK's core reads): comma-separated directives, each a level, a module
 * path (all its levels), or `module::path=level`, e.g. `temporalio_sdk_core::worker::workflow=debug,warn`.
 */
export const tracingFilter: ValueType<string> = {
  form:
    'comma-separated tracing directives, each a level (trace, debug, info, warn, error, off), a module path, or ' +
    '`module::path=level`, e.g. `temporalio_sdk_core::worker::workflow=debug,warn`',
  parse(raw, given) {
    const level = '(?:trace|debug|info|warn|error|off)';
    const target = '[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*';
    const directive = new RegExp(`^(?:${level}|${target}(?:=${level})?)$`, 'i');
    const directives = raw.split(',').map((d) => d.trim());
    if (directives.some((d) => !directive.test(d))) throw invalid(given, tracingFilter.form);
    return directives.join(',');
  },
};

/** A TCP port (`0`: any free one), or `off`: no listener at all. */
export const portOrOff: ValueType<number | 'off'> = {
  form: 'a whole number from 0 to 65535, or off',
  parse(raw, given) {
    if (raw.trim().toLowerCase() === 'off') return 'off';
    const n = Number(raw);
    if (!/^\s*\d+\s*$/.test(raw) || n > 65535) throw invalid(given, portOrOff.form);
    return n;
  },
};
