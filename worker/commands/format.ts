/** How the operator commands print: JSON for `--json`, aligned columns and short lines for people. */
import type { AssistantPart, StoredMessage } from '../../protocol/messages';
import type { Contents } from '../../protocol/schemas';
import { UsageError } from './command';

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** Columns padded to their widest cell (the last one not padded). */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

export function time(at: number | Date | undefined): string {
  return at === undefined ? '—' : new Date(at).toISOString();
}

/** One line of at most `max` characters. */
export function oneLine(text: string, max = 100): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function contentsText(contents: Contents): string {
  return typeof contents === 'string'
    ? contents
    : contents.map((part) => (part.type === 'text' ? part.text : `[file ${part.filename ?? part.mediaType}]`)).join('');
}

/** A stored message as one line: who, what kind, and its text. */
export function messageLine(message: StoredMessage): string {
  const head = `${time(message.at)}  ${message.id}`;
  switch (message.role) {
    case 'user': {
      const kind = message.tagName ?? message.type;
      return `${head}  user (${kind})  ${oneLine(contentsText(message.contents))}`;
    }
    case 'assistant':
      return `${head}  assistant  ${oneLine(message.content.map(assistantPartText).join(' '))}`;
    case 'tool':
      return `${head}  tool  ${oneLine(message.content.map((r) => `${r.toolName} → ${JSON.stringify(r.output)}`).join('; '))}`;
  }
}

function assistantPartText(part: AssistantPart): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'reasoning':
      return `(reasoning) ${part.text}`;
    case 'tool-call':
      return `[calls ${part.toolName}(${JSON.stringify(part.input)}) as ${part.toolCallId}]`;
  }
}

/** A `--limit` value: a whole number from 1 to `max` (undefined when not given). */
export function limitOption(value: unknown, max: number): number | undefined {
  if (value === undefined) return undefined;
  const limit = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || limit < 1 || limit > max) {
    throw new UsageError(`--limit must be a whole number from 1 to ${max}, got "${String(value)}".`);
  }
  return limit;
}

/** A repeatable, comma-separated option (`--status new,seen` or `--status new --status seen`) as a list. */
export function listOption(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const items = (Array.isArray(value) ? value : [value]).flatMap((v) => String(v).split(','));
  return items.map((item) => item.trim()).filter(Boolean);
}
