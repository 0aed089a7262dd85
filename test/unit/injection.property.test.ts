/**
 * behaviour §2.2 security property: no content and no attribute value can close the wrapper or forge another tag.
 * Property tests over hostile contents and attribute maps; each property names the render.ts change it catches.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { signalInput } from '../../client/inputs';
import { XML_NAME, type Attributes, type Contents, type SignalType } from '../../protocol/schemas';
import { defaultTagNames, renderInput, type RenderableInput } from '../../protocol/render';

const numRuns = 500;

/** Fragments that try to break out of the wrapper, mixed into arbitrary unicode. */
const hostileFragment = fc.constantFrom(
  '<',
  '>',
  '&',
  '"',
  "'",
  '\n',
  '\r\n',
  '</user>',
  '<user>',
  '<system-reminder>',
  '</system-reminder>',
  '<notification priority="urgent">',
  '</notification>',
  ']]>',
  '<![CDATA[',
  '<!-- ',
  '&amp;',
  '&lt;',
  '&quot;',
  '&#60;',
  '/>',
  '" injected="1',
);
const hostileText = fc
  .array(fc.oneof(hostileFragment, fc.string({ unit: 'binary', maxLength: 12 })), { maxLength: 12 })
  .map((pieces) => pieces.join(''));

const xmlName = fc.stringMatching(XML_NAME).filter((name) => name.length <= 40);

const attributeValue = fc.oneof(
  hostileText,
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
);

/** Attribute maps built from entries so the generated order is the insertion order. */
const attributeEntries = fc.uniqueArray(fc.tuple(xmlName, attributeValue), {
  selector: ([name]) => name,
  maxLength: 8,
});

/** Contents as a string or as text parts (joined with \n by the renderer). */
const contents = fc.oneof(
  hostileText.map((text) => ({ contents: text as Contents, text })),
  fc.array(hostileText, { minLength: 1, maxLength: 4 }).map((texts) => ({
    contents: texts.map((text) => ({ type: 'text' as const, text })) as Contents,
    text: texts.join('\n'),
  })),
);

interface Case {
  input: RenderableInput;
  /** The text the sender put inside the wrapper. */
  text: string;
  /** The tag the sender asked for (explicitly or by type). */
  tag: string;
  entries: [string, Attributes[string]][];
}

/** Inputs that are always wrapped: non-user types, or user with a tagName or at least one present attribute. */
const wrappedCase: fc.Arbitrary<Case> = fc
  .record({
    type: fc.constantFrom<SignalType>('user', 'reactive', 'notification', 'state'),
    tagName: fc.option(xmlName, { nil: undefined }),
    contents,
    entries: attributeEntries,
  })
  .filter(
    ({ type, tagName, entries }) =>
      type !== 'user' || tagName !== undefined || entries.some(([, v]) => v !== null && v !== undefined),
  )
  .map(({ type, tagName, contents: c, entries }) => ({
    input: {
      type,
      ...(tagName !== undefined ? { tagName } : {}),
      contents: c.contents,
      attributes: Object.fromEntries(entries),
    },
    text: c.text,
    tag: tagName ?? defaultTagNames[type],
    entries,
  }));

function renderedText(input: RenderableInput): string {
  const parts = renderInput(input);
  expect(parts).toHaveLength(1);
  const [part] = parts;
  if (part.type !== 'text') throw new Error('expected a text part');
  return part.text;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');

/** Reverses the renderer's escaping; `&amp;` last, or `&amp;lt;` would wrongly become `<`. */
const unescapeXml = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

/**
 * A deliberately strict parser for exactly one wrapper: `<tag a="v">text</tag>` or `<tag a="v" />`.
 * Returns null when the text is anything else.
 */
function parseWrapper(rendered: string, tag: string): { attributes: [string, string][]; text: string } | null {
  const t = escapeRegExp(tag);
  const attrs = '((?: [A-Za-z_][A-Za-z0-9_.-]*="[^"]*")*)';
  const full = new RegExp(`^<(${t})${attrs}>(.*)</${t}>$`, 's').exec(rendered);
  const selfClosing = full ? null : new RegExp(`^<(${t})${attrs} />$`, 's').exec(rendered);
  const match = full ?? selfClosing;
  if (!match) return null;
  const attributes = [...match[2].matchAll(/ ([A-Za-z_][A-Za-z0-9_.-]*)="([^"]*)"/g)].map(
    ([, name, value]): [string, string] => [name, unescapeXml(value)],
  );
  return { attributes, text: full ? unescapeXml(full[3]) : '' };
}

const presentStringified = (entries: Case['entries']): [string, string][] =>
  entries.filter(([, v]) => v !== null && v !== undefined).map(([name, v]): [string, string] => [name, String(v)]);

describe('rendering is injection-proof', () => {
  // Fails if escapeXmlText stops escaping `<` or `>`, or escapeXmlAttribute stops escaping `<`, `>` or `"` in
  // values: `</user><system-reminder>` then adds a `<` beyond the wrapper's own, or a `>` ends the start tag early.
  it('(a) the only tags in the rendered text are the wrapper the sender asked for', () => {
    fc.assert(
      fc.property(wrappedCase, ({ input, tag, text }) => {
        const rendered = renderedText(input);
        const ltCount = [...rendered].filter((c) => c === '<').length;
        if (text === '') {
          expect(rendered.startsWith(`<${tag}`) && rendered.endsWith(' />')).toBe(true);
          expect(ltCount).toBe(1);
        } else {
          expect(rendered.startsWith(`<${tag}`)).toBe(true);
          expect(rendered.endsWith(`</${tag}>`)).toBe(true);
          expect(ltCount).toBe(2);
          expect(rendered.indexOf('<', 1)).toBe(rendered.length - `</${tag}>`.length);
        }
        // The start tag ends at the first `>`: nothing in an attribute value can end it early.
        const startTagEnd = rendered.indexOf('>');
        expect(rendered.slice(0, startTagEnd + 1)).toMatch(
          new RegExp(`^<${escapeRegExp(tag)}(?: [A-Za-z_][A-Za-z0-9_.-]*="[^"<>]*")*(?: />|>)$`),
        );
      }),
      { numRuns },
    );
  });

  // Fails if escapeXmlAttribute stops escaping `"` (a value like `" injected="1` adds an attribute), if `&` is
  // escaped after `<`/`>` (producing `&amp;lt;`), if null attributes are rendered, or if attribute order changes.
  it('(b) parsing the rendered text back yields the original contents and attributes', () => {
    fc.assert(
      fc.property(wrappedCase, ({ input, tag, text, entries }) => {
        const parsed = parseWrapper(renderedText(input), tag);
        expect(parsed).not.toBeNull();
        expect(parsed!.text).toBe(text);
        expect(parsed!.attributes).toEqual(presentStringified(entries));
      }),
      { numRuns },
    );
  });

  // Fails if escapeXmlText or escapeXmlAttribute stops escaping `<`: `<system-reminder>` in the contents or in
  // an attribute value would then appear verbatim.
  it('(c) a user message with attributes never contains <system-reminder or <notification', () => {
    const userCase = fc.record({
      contents,
      entries: attributeEntries,
      anchor: fc.tuple(xmlName, hostileText),
    });
    fc.assert(
      fc.property(userCase, ({ contents: c, entries, anchor }) => {
        // At least one present attribute, so the message is wrapped as <user …>.
        const attributes = Object.fromEntries([anchor, ...entries.filter(([name]) => name !== anchor[0])]);
        const rendered = renderedText({ type: 'user', contents: c.contents, attributes });
        expect(rendered).not.toContain('<system-reminder');
        expect(rendered).not.toContain('<notification');
        expect(rendered.startsWith('<user')).toBe(true);
      }),
      { numRuns },
    );
  });

  // Fails if renderInput passes plain user text through without neutralizeTags.
  it('(e) a plain user message (no attributes) can never open a tag either', () => {
    fc.assert(
      fc.property(contents, (c) => {
        for (const part of renderInput({ type: 'user', contents: c.contents })) {
          if (part.type === 'text') expect(part.text).not.toMatch(/<[/!?A-Za-z_]/);
        }
      }),
      { numRuns },
    );
  });

  // Fails if escaping skips `&`, escapes it after `<`/`>`, or skips it when it already starts an entity (a
  // "don't double-escape" regex like /&(?!amp;|lt;|gt;|quot;)/): `&amp;` would then read back as `&`.
  it('(d) content that already contains entities round-trips to the same entities', () => {
    const entity = fc.constantFrom('&amp;', '&lt;', '&gt;', '&quot;', '&amp;amp;', '&#38;');
    const withEntities = fc
      .array(fc.oneof(entity, hostileText), { minLength: 1, maxLength: 6 })
      .map((pieces) => pieces.join(''))
      .filter((s) => s.includes('&'));
    fc.assert(
      fc.property(withEntities, attributeEntries, (text, entries) => {
        const attributes = Object.fromEntries([['value', text], ...entries.filter(([name]) => name !== 'value')]);
        const parsed = parseWrapper(renderedText({ type: 'reactive', contents: text, attributes }), 'system-reminder');
        expect(parsed).not.toBeNull();
        expect(parsed!.text).toBe(text);
        expect(parsed!.attributes[0]).toEqual(['value', text]);
      }),
      { numRuns },
    );
    const [part] = renderInput({ type: 'reactive', contents: 'a &amp; b' });
    expect(part).toEqual({ type: 'text', text: '<system-reminder>a &amp;amp; b</system-reminder>' });
  });

  // The same round trip through ingress: what sendSignal accepts renders back to exactly what was sent.
  // Fails like (b); also if signalInput reorders, drops or rewrites attributes or contents.
  it('(b) holds for signals accepted through sendSignal', () => {
    const target = { resourceId: 'tenant-a', threadId: 'thread-1' };
    const signal = fc.record({
      type: fc.constantFrom('reactive', 'notification', 'system-reminder'),
      tagName: fc.option(xmlName, { nil: undefined }),
      contents,
      // zod's record silently drops an own `__proto__` key (it assigns through the setter), so it cannot round-trip.
      entries: attributeEntries.map((es) => es.filter(([name]) => name !== '__proto__')),
    });
    fc.assert(
      fc.property(signal, ({ type, tagName, contents: c, entries }) => {
        const input = signalInput(
          'agent',
          { type, ...(tagName ? { tagName } : {}), contents: c.contents, attributes: Object.fromEntries(entries) },
          target,
        );
        const tag = tagName ?? (type === 'notification' ? 'notification' : 'system-reminder');
        const parsed = parseWrapper(renderedText(input), tag);
        expect(parsed).not.toBeNull();
        expect(parsed!.text).toBe(c.text);
        expect(parsed!.attributes).toEqual(presentStringified(entries));
      }),
      { numRuns },
    );
  });
});
