/**
 * The stored conversation: inputs, assistant steps and tool results, bounded by `maxStoredMessages` and
 * `maxStoredBytes`, and the window of it the model sees.
 */
import type {
  ContextWindowConfig,
  InputMessage,
  StoredMessage,
  ToolMessage,
  ToolResultPart,
} from '../../protocol/messages';
import type { StepPlan } from '../../protocol/step';
import type { ThreadConfig } from '../../protocol/thread-config';
import type { PendingInput, ThreadClock, ThreadSnapshot } from './snapshot';

export class Conversation {
  constructor(
    private readonly s: ThreadSnapshot,
    private readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
  ) {}

  get messages(): readonly StoredMessage[] {
    return this.s.messages;
  }

  /** Stores a message; beyond `maxStoredMessages` or `maxStoredBytes` the oldest leave (never the newest). */
  append(message: StoredMessage): void {
    const messages = this.s.messages;
    this.storedBytes ??= messages.reduce((sum, m) => sum + jsonSize(m), 0);
    messages.push(message);
    this.storedBytes += jsonSize(message);
    let excess = Math.max(0, messages.length - this.config.maxStoredMessages);
    let bytes = this.storedBytes;
    for (let i = 0; i < excess; i++) bytes -= jsonSize(messages[i]);
    while (bytes > this.config.maxStoredBytes && excess < messages.length - 1) bytes -= jsonSize(messages[excess++]);
    if (excess > 0) messages.splice(0, excess);
    this.storedBytes = bytes;
  }

  /** The stored messages' size as JSON, counted once per execution and then kept up to date. */
  private storedBytes: number | undefined;

  /** Stores an accepted input as its own turn. */
  store(accepted: PendingInput, runId: string | undefined): InputMessage {
    const message = toInputMessage(accepted, runId);
    this.append(message);
    return message;
  }

  recordToolResults(plan: Pick<StepPlan, 'stepKey' | 'runId'>, results: ToolResultPart[]): void {
    if (results.length === 0) return;
    const message: ToolMessage = {
      id: `t:${plan.stepKey}`,
      role: 'tool',
      runId: plan.runId,
      content: results,
      at: this.clock.now(),
    };
    this.append(message);
  }
}

/**
 * Each stored message's size as JSON, measured once: a stored message is never changed, and every step measures its
 * window (`selectWindow`), so a long thread's workflow task would otherwise re-serialize it each time. Keyed by the
 * message object, so it leaves with the message; a replay measures the same objects in the same order. The SDK's
 * reusable context shares this map among the worker's workflows: harmless, as each key is one execution's own object
 * and its size depends on nothing else.
 */
const jsonSizes = new WeakMap<StoredMessage, number>();

function jsonSize(message: StoredMessage): number {
  let size = jsonSizes.get(message);
  if (size === undefined) {
    size = JSON.stringify(message).length;
    jsonSizes.set(message, size);
  }
  return size;
}

/** An accepted input as the conversation stores it. */
export function toInputMessage(accepted: PendingInput, runId: string | undefined): InputMessage {
  const { input } = accepted;
  const message: InputMessage = {
    id: input.id,
    role: 'user',
    type: input.type,
    contents: input.contents,
    at: accepted.acceptedAt,
  };
  if (input.tagName !== undefined) message.tagName = input.tagName;
  if (input.attributes !== undefined) message.attributes = input.attributes;
  if (input.metadata !== undefined) message.metadata = input.metadata;
  if (input.providerOptions !== undefined) message.providerOptions = input.providerOptions;
  if (runId !== undefined) message.runId = runId;
  return message;
}

/**
 * The newest messages within the window's count and byte budget. Never starts on a tool result (its tool call
 * would be missing, which providers reject).
 */
export function selectWindow(messages: readonly StoredMessage[], window: ContextWindowConfig): StoredMessage[] {
  let start = Math.max(0, messages.length - window.maxMessages);
  let bytes = 0;
  for (let i = messages.length - 1; i >= start; i--) {
    bytes += jsonSize(messages[i]);
    if (bytes > window.maxBytes && i < messages.length - 1) {
      start = i + 1;
      break;
    }
  }
  while (start < messages.length && messages[start].role === 'tool') start++;
  return messages.slice(start);
}
