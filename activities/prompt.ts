/**
 * The prompt of one step: the agent's instructions and the thread's context window as AI SDK model messages.
 */
import type { ModelMessage } from 'ai';
import { renderInput } from '../protocol/render';
import type { InputMessage, StoredMessage } from '../protocol/messages';

function inputToModelMessage(message: InputMessage): ModelMessage {
  const content = renderInput(message).map((part) =>
    part.type === 'text'
      ? { type: 'text' as const, text: part.text }
      : {
          type: 'file' as const,
          data: part.data ?? new URL(part.url!),
          mediaType: part.mediaType,
          ...(part.filename ? { filename: part.filename } : {}),
        },
  );
  return message.providerOptions
    ? { role: 'user', content, providerOptions: message.providerOptions as never }
    : { role: 'user', content };
}

export function toModelMessages(messages: readonly StoredMessage[]): ModelMessage[] {
  return messages.map((message): ModelMessage => {
    switch (message.role) {
      case 'user':
        return inputToModelMessage(message);
      case 'assistant':
        return {
          role: 'assistant',
          content: message.content.map((part) =>
            part.type === 'tool-call'
              ? { type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input }
              : { type: part.type, text: part.text },
          ),
        };
      case 'tool':
        return {
          role: 'tool',
          content: message.content.map((part) => ({
            type: 'tool-result',
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            output: part.isError
              ? { type: 'error-text', value: String(part.output) }
              : { type: 'json', value: (part.output ?? null) as never },
          })),
        };
    }
  });
}
