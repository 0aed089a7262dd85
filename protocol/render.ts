/**
 * How inputs reach the model: XML wrapping and escaping (behaviour §2.2 "Rendering"). Pure, sandbox-safe.
 */
import type { Attributes, Contents, FilePart, SignalType } from './schemas';

export const defaultTagNames: Record<SignalType, string> = {
  user: 'user',
  reactive: 'system-reminder',
  notification: 'notification',
  state: 'state',
};

/** `&`, `<`, `>` escaped: content can never open or close a tag. */
export function escapeXmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Text escaping plus `"`, for attribute values (always double-quoted). */
export function escapeXmlAttribute(value: string): string {
  return escapeXmlText(value).replace(/"/g, '&quot;');
}

/** Attributes with null/undefined values left out; insertion order kept. */
export function presentAttributes(attributes: Attributes | undefined): [string, string | number | boolean][] {
  if (!attributes) return [];
  const present: [string, string | number | boolean][] = [];
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined) present.push([name, value]);
  }
  return present;
}

/** `<tag a="1">contents</tag>`, or `<tag a="1" />` for empty contents. */
export function renderXml(tagName: string, attributes: Attributes | undefined, text: string): string {
  const attrs = presentAttributes(attributes)
    .map(([name, value]) => ` ${name}="${escapeXmlAttribute(String(value))}"`)
    .join('');
  if (text === '') return `<${tagName}${attrs} />`;
  return `<${tagName}${attrs}>${escapeXmlText(text)}</${tagName}>`;
}

/**
 * Branch attributes merged over the top-level ones: the branch wins on value, original keys keep their position,
 * new keys follow in the branch's order.
 */
export function mergeAttributes(base: Attributes | undefined, branch: Attributes | undefined): Attributes | undefined {
  if (!branch || Object.keys(branch).length === 0) return base;
  return { ...(base ?? {}), ...branch };
}

export interface RenderableInput {
  type: SignalType;
  tagName?: string;
  contents: Contents;
  attributes?: Attributes;
}

export type RenderedPart = { type: 'text'; text: string } | FilePart;

/**
 * The user-role content an input becomes. A plain user message (no attributes, no custom tag) stays as sent;
 * everything else is one XML wrapper around the joined text parts, with file parts passed through beside it.
 */
export function renderInput(input: RenderableInput): RenderedPart[] {
  const parts: RenderedPart[] =
    typeof input.contents === 'string' ? [{ type: 'text', text: input.contents }] : [...input.contents];
  const plain = input.type === 'user' && !input.tagName && presentAttributes(input.attributes).length === 0;
  if (plain) return parts.map((p) => (p.type === 'text' ? { type: 'text', text: neutralizeTags(p.text) } : p));
  const text = parts
    .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
  const files = parts.filter((p): p is FilePart => p.type === 'file');
  const tagName = input.tagName ?? defaultTagNames[input.type];
  const hasText = parts.some((p) => p.type === 'text');
  if (!hasText && files.length > 0) return files;
  return [{ type: 'text', text: renderXml(tagName, input.attributes, text) }, ...files];
}

/**
 * Plain user text stays as typed, except that a `<` which would start a tag (`<name`, `</name`, `<!`, `<?`) becomes
 * `&lt;`: signals reach the model as user-role XML, so a user must not be able to type one (`a < b` is untouched).
 */
export function neutralizeTags(text: string): string {
  return text.replace(/<(?=[/!?]|[A-Za-z_])/g, '&lt;');
}

/** The plain text of contents, for echoes and summaries. */
export function contentsText(contents: Contents): string {
  if (typeof contents === 'string') return contents;
  return contents
    .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}
