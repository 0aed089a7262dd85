/**
 * A Server-Sent Events reader over a `fetch` body, for browsers and Node alike (no EventSource: it cannot POST, send
 * headers or resume from an id the caller chooses).
 */

/** One dispatched message: the fields of one block of lines ended by a blank line. */
export interface SseMessage {
  /** The block's own `id:` field, if it had one. */
  id?: string;
  event?: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
  retry?: number;
}

/** A message, or a comment line such as `: keep-alive` (its text after the colon and one optional space). */
export type SseItem = { kind: 'message'; message: SseMessage } | { kind: 'comment'; text: string };

/**
 * Parses an SSE body by the WHATWG rules: lines end with CRLF, LF or CR; a blank line dispatches; a leading colon
 * makes a comment; one space after a field's colon is dropped; a block without `data:` dispatches nothing; fields
 * may come in any order. Cancels the body when the caller stops reading.
 */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseItem> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  let fields: { id?: string; event?: string; data: string[]; retry?: number } = { data: [] };
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/\r\n|\r|\n/);
        if (end < 0) break;
        // A CR at the very end of the buffer may be the first half of a CRLF: wait for more input.
        if (buffer[end] === '\r' && end === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          if (fields.data.length > 0) {
            const message: SseMessage = { data: fields.data.join('\n') };
            if (fields.id !== undefined) message.id = fields.id;
            if (fields.event !== undefined) message.event = fields.event;
            if (fields.retry !== undefined) message.retry = fields.retry;
            yield { kind: 'message', message };
          }
          fields = { data: [] };
          continue;
        }
        if (line.startsWith(':')) {
          yield { kind: 'comment', text: stripSpace(line.slice(1)) };
          continue;
        }
        const colon = line.indexOf(':');
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : stripSpace(line.slice(colon + 1));
        if (name === 'data') fields.data.push(value);
        else if (name === 'id' && !value.includes('\0')) fields.id = value;
        else if (name === 'event') fields.event = value;
        else if (name === 'retry' && /^\d+$/.test(value)) fields.retry = Number(value);
      }
      // An unterminated last block is dropped, as a browser does: it may be cut mid-event.
      if (done) {
        finished = true;
        return;
      }
    }
  } finally {
    // Stopped early (the caller broke out, or unsubscribed): close the connection instead of leaving it open.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

function stripSpace(value: string): string {
  return value.startsWith(' ') ? value.slice(1) : value;
}
