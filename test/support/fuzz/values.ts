/**
 * Hostile values for the fuzzers (fast-check arbitraries): unicode edge cases, type-confused values, prototype
 * pollution keys, deep nesting and huge strings. Shared by the HTTP fuzzer (`./http.ts`) and the raw Temporal one
 * (`./payloads.ts`).
 *
 * Values are plain JSON data, except where a request needs bytes JSON cannot hold: `__proto__` keys are made with
 * `JSON.parse` (an object literal would set the prototype instead of adding the key), and nesting deeper than
 * `JSON.stringify` can write is sent as raw text (`Raw`).
 */
import fc from 'fast-check';

/** Strings every parser, encoder and store should survive. */
export const UNICODE_EDGES = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800', // lone high surrogate
  '\udfff', // lone low surrogate
  'a\udc00b',
  '\udbff\udbff',
  '😀', // 4-byte UTF-8, a surrogate pair in UTF-16
  '𝕏𝔶𝕫',
  '😀'.repeat(100),
  '\u202eevil\u202c', // right-to-left override
  'שלום עולם',
  'مرحبا',
  '\u200b\u200c\u200d\ufeff', // zero-width characters and a BOM
  'e\u0301\u0301\u0301', // combining marks
  '\uffff\ufffe',
  '\ufffd',
  '\r\n',
  '\n\nid: 1\ndata: forged\n\n', // an SSE frame injection
  '%00',
  '%ED%A0%80',
  '%',
  '../../etc/passwd',
  '..%2F..%2F',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  "') OR ('1'='1",
  '${jndi:ldap://127.0.0.1/x}',
  '{{7*7}}',
  '%s%s%n',
  '__proto__',
  'constructor',
  'prototype',
  'NaN',
  '1e400',
  '-0',
  'null',
  'true',
  '[]',
  '{}',
] as const;

export const unicodeEdge = fc.constantFrom(...UNICODE_EDGES);

/** Short strings: edge cases, arbitrary UTF-16 (lone surrogates included), or a mix. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: unicodeEdge },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.oneof(unicodeEdge, fc.string({ maxLength: 6 })), { minLength: 1, maxLength: 5 })
      .map((parts) => parts.join('')),
  },
);

/** Well-formed strings (no lone surrogate) for places that need one, like query strings and path segments. */
export const wellFormedHostileString = hostileString.map((s) => s.replace(/\p{Cs}/gu, '\ufffd'));

/** Values of every JSON type and the edges of each. */
export const typeConfused: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 1, '', [], {}, [[]], [null]),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  hostileString,
  fc.array(fc.oneof(fc.integer(), hostileString, fc.constant(null)), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.integer(), hostileString), { maxKeys: 3 }),
);

/** The JSON type of a value, as JSON Schema names it. */
export function jsonType(value: unknown): 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object' {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as 'boolean' | 'string' | 'object';
}

/** Objects that try to pollute a prototype when merged, copied or assigned key by key. */
export const PROTO_OBJECTS: readonly unknown[] = [
  JSON.parse('{"__proto__": {"polluted": "yes"}}'),
  JSON.parse('{"constructor": {"prototype": {"polluted": "yes"}}}'),
  JSON.parse('{"__proto__": {"__proto__": {"polluted": "yes"}}}'),
  JSON.parse('{"prototype": {"polluted": "yes"}, "__proto__": null}'),
  JSON.parse('{"a": {"__proto__": {"polluted": "yes"}}, "toString": "x", "hasOwnProperty": 1, "valueOf": null}'),
  JSON.parse('{"__proto__": []}'),
];

export const protoObject = fc.constantFrom(...PROTO_OBJECTS);

/** Keys that are dangerous as property names. */
export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__defineGetter__'];

/** Adds `key: value` as an own property, even for `__proto__` (which assignment would turn into a prototype). */
export function withOwnKey(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...object };
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/**
 * Text sent as the body as is (not JSON-encoded by the sender): bodies `JSON.stringify` cannot produce, like JSON
 * nested deeper than its recursion allows.
 */
export class Raw {
  constructor(readonly text: string) {}

  /** How a counterexample shows it: its size and start, not 100,000 brackets. */
  [fc.toStringMethod](): string {
    return `Raw(${this.text.length} chars: ${JSON.stringify(this.text.slice(0, 40))}${this.text.length > 40 ? '…' : ''})`;
  }
}

/** JSON nested `depth` levels: `[[[…]]]`, `{"a":{"a":…}}` or alternating. */
export function deepJson(depth: number, shape: 'array' | 'object' | 'mixed'): Raw {
  if (shape === 'array') return new Raw('['.repeat(depth) + ']'.repeat(depth));
  if (shape === 'object') return new Raw('{"a":'.repeat(depth) + '1' + '}'.repeat(depth));
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    open += i % 2 ? '[' : '{"k":';
    close = (i % 2 ? ']' : '}') + close;
  }
  return new Raw(open + '0' + close);
}

export const deepValue: fc.Arbitrary<Raw> = fc
  .tuple(
    fc.constantFrom(20, 100, 1_000, 5_000, 20_000, 100_000),
    fc.constantFrom<'array' | 'object' | 'mixed'>('array', 'object', 'mixed'),
  )
  .map(([depth, shape]) => deepJson(depth, shape));

/** A long string, from just under common limits to far over the body limit. */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(257, 1_025, 4_097, 16 * 1024 + 1, 300 * 1024, 700 * 1024),
    fc.constantFrom('x', 'é', '😀', '\u0000', '\ud800'),
  )
  .map(([length, unit]) => unit.repeat(Math.ceil(length / unit.length)));

/**
 * JSON text of `value`, where any `Raw` inside is spliced in as is. A lone surrogate is written as its `\uXXXX`
 * escape by `JSON.stringify` (well-formed JSON that parses back into the lone surrogate).
 */
export function toJsonText(value: unknown): string {
  const raws: Raw[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Raw) {
      raws.push(v);
      return `\u0000raw:${raws.length - 1}\u0000`;
    }
    return v;
  });
  if (text === undefined) return 'null';
  return text.replace(/"\\u0000raw:(\d+)\\u0000"/g, (_m, i: string) => raws[Number(i)].text);
}
