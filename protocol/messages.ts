/**
 * What a thread stores: its conversation (inputs, assistant steps, tool results). Plain JSON, carried across
 * continue-as-new, passed to the step activity as the context window.
 */
import type { Attributes, Contents, SignalType } from './schemas';

export interface InputMessage {
  id: string;
  role: 'user';
  type: SignalType;
  tagName?: string;
  contents: Contents;
  attributes?: Attributes;
  metadata?: Record<string, unknown>;
  providerOptions?: Record<string, Record<string, unknown>>;
  runId?: string;
  at: number;
}

export type AssistantPart =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };

export interface AssistantMessage {
  id: string;
  role: 'assistant';
  runId: string;
  stepNumber: number;
  content: AssistantPart[];
  at: number;
}

export interface ToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: unknown;
  isError?: boolean;
}

export interface ToolMessage {
  id: string;
  role: 'tool';
  runId: string;
  content: ToolResultPart[];
  at: number;
}

export type StoredMessage = InputMessage | AssistantMessage | ToolMessage;

export interface ToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** Set by the step when the tool requires approval (behaviour §2.4): the run parks until a human decides. */
  approval?: { timeoutMs?: number };
  /** A tool the workflow itself runs on thread state (the notification inbox), not an activity. */
  builtin?: 'notification-inbox';
}

export interface StepUsage {
  inputTokens?: number;
  outputTokens?: number;
}

/** What one model step returns to the workflow: the final message only, never the token stream. */
export interface StepResult {
  /** Signals processors added to this step's input (stored before the step's message). */
  signals?: InputMessage[];
  content: AssistantPart[];
  toolCalls: ToolCall[];
  finishReason: string;
  usage: StepUsage;
}

export interface ContextWindowConfig {
  /** At most this many stored messages reach the model. */
  maxMessages: number;
  /** At most this many bytes of stored messages (JSON) reach the model; the newest message always does. */
  maxBytes: number;
}
