/**
 * What the scripted model answers during a chaos run: streamed replies of many chunks with delays (so runs are
 * mid-stream when processes die), and for the `admin` agent a tool call that needs approval whenever the newest
 * user turn asks for one. Tool call ids are unique for the whole run.
 */
import type { Responder } from '../support/model-server';
import type { Rng } from './random';

/** An input text that makes the admin agent's model call `deleteRepo` (which waits for approval). */
export const TOOL_MARKER = '[delete-repo]';

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];

export interface ChaosModel {
  responder: Responder;
  /** Requests answered so far. */
  requests(): number;
}

export function chaosModel(rng: Rng): ChaosModel {
  let requests = 0;
  let toolCalls = 0;
  const responder: Responder = (req) => {
    requests++;
    const messages = req.messages as { role: string; content: unknown }[];
    const system = messages.find((m) => m.role === 'system');
    const admin = textOf(system?.content).includes('administer');
    const last = messages[messages.length - 1];
    if (admin && last?.role === 'user' && textOf(last.content).includes(TOOL_MARKER)) {
      toolCalls++;
      return {
        text: 'Deleting it, once approved.',
        toolCalls: [{ id: `chaos_call_${toolCalls}`, name: 'deleteRepo', args: { repo: `repo-${toolCalls}` } }],
        chunkDelayMs: rng.int(20, 60),
      };
    }
    const chunks = Array.from({ length: rng.int(12, 30) }, () => `${rng.pick(WORDS)} `);
    return { text: chunks, chunkDelayMs: rng.int(30, 90), firstChunkDelayMs: rng.int(50, 300) };
  };
  return { responder, requests: () => requests };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('\n');
}
