/**
 * The seed's example processor: after a tool call read an `AGENTS.md` file, inject that file's instructions once as
 * `<system-reminder type="dynamic-agents-md" path="…">…</system-reminder>`.
 */
import { readFile } from 'node:fs/promises';
import { isAbsolute, normalize, relative, resolve } from 'node:path';
import type { Processor } from '../agent';
import type { StoredMessage } from '../../protocol/messages';

export interface AgentsMdReminderOptions {
  /** Paths in tool calls are resolved against this folder; files outside it are never read. */
  root: string;
  /** Which tool-call input field holds the path (default: `path`). */
  pathField?: string;
}

/** The newest `AGENTS.md` path that an assistant tool call asked for, relative to `root`. */
export function findAgentsMdPathFromToolCalls(
  messages: readonly StoredMessage[],
  pathField = 'path',
): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message.role !== 'assistant') continue;
    for (const part of [...message.content].reverse()) {
      if (part.type !== 'tool-call') continue;
      const path = (part.input as Record<string, unknown> | null)?.[pathField];
      if (typeof path === 'string' && /(^|\/)AGENTS\.md$/.test(path)) return path;
    }
  }
  return undefined;
}

/** Whether a reminder for `path` is already in the conversation (the signal's metadata says which file it carried). */
export function hasAlreadySentAgentsMdReminder(messages: readonly StoredMessage[], path: string): boolean {
  return messages.some((m) => m.role === 'user' && m.metadata?.agentsMdPath === path);
}

export function agentsMdReminderProcessor(options: AgentsMdReminderOptions): Processor {
  const root = resolve(options.root);
  return {
    id: 'agents-md-reminder',
    async processInputStep({ messageList, sendSignal }) {
      const messages = messageList.get.all.db();
      const path = findAgentsMdPathFromToolCalls(messages, options.pathField);
      if (!path || hasAlreadySentAgentsMdReminder(messages, path)) return;
      const file = resolve(root, normalize(path));
      const inside = relative(root, file);
      if (inside.startsWith('..') || isAbsolute(inside)) return; // never read outside the root
      let contents: string;
      try {
        contents = await readFile(file, 'utf8');
      } catch {
        return; // the tool call named a file that does not exist: nothing to remind
      }
      await sendSignal({
        type: 'reactive',
        contents,
        attributes: { type: 'dynamic-agents-md', path },
        metadata: { agentsMdPath: path },
      });
    },
  };
}
