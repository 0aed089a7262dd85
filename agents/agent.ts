/**
 * Agent definitions: what a worker hosts. Agents are worker-side code (instructions, model, tools); threads name
 * them by id, so a thread can be served by several agents over time.
 */
import type { LanguageModel } from 'ai';
import type { z } from 'zod';
import { XML_NAME } from '../protocol/schemas';
import type { SignalInput, StateMode } from '../protocol/schemas';
import type { AgentProfile } from '../protocol/agent-profile';
import type { ConfiguredDecision, DeliveryPolicyConfig } from '../protocol/agent-profile';
export type { ConfiguredDecision };
import type { DeliveryAction, NotificationInput } from '../protocol/schemas';
import type { LaneTracking } from '../protocol/lanes';
import type { ContextWindowConfig, InputMessage, StoredMessage } from '../protocol/messages';

export interface ToolContext {
  resourceId: string;
  threadId: string;
  runId: string;
  toolCallId: string;
  /** Aborted when the run is aborted or the worker shuts down. */
  abortSignal: AbortSignal;
  /** What the approver passed with `sendToolApproval({ resumeData })`, for a tool that required approval. */
  resumeData?: unknown;
}

/** Where a tool call's approval is decided: the call's input and its thread. */
export interface ApprovalContext {
  resourceId: string;
  threadId: string;
  runId: string;
  toolCallId: string;
}

/** What a `decide()` callback sees besides the notification: the thread, and its state read from the workflow. */
export interface DecideContext {
  resourceId: string;
  threadId: string;
  threadState: 'active' | 'idle';
}

/** A `decide()` answer: an action, or an object whose `deliverAt`/`summaryAt` are Dates or epoch milliseconds. */
export type DecideResult =
  | DeliveryAction
  | { action: DeliveryAction; deliverAt?: Date | number; summaryAt?: Date | number; reason?: string }
  | null
  | undefined;

/** `defineAgent({ notifications })` (behaviour §4.2). */
export interface AgentNotifications {
  deliveryPolicy?: DeliveryPolicyConfig & {
    /** First in precedence; return nothing to fall through to `sources`, `priorities`, `default`, built-in. */
    decide?(input: NotificationInput, context: DecideContext): DecideResult | Promise<DecideResult>;
  };
  /** When summaries go out: milliseconds, or `'30 seconds'`, `'1 minute'`, `'2 hours'` (default `'1 minute'`). */
  digestWindow?: number | string;
}

export interface AgentTool<I = unknown, O = unknown> {
  description: string;
  inputSchema: z.ZodType<I>;
  execute(input: I, context: ToolContext): O | Promise<O>;
  /**
   * The run parks until a human approves or declines the call (behaviour §2.4): `true`, or a predicate on the call's
   * input (e.g. only for protected branches).
   */
  requireApproval?: boolean | ((input: I, context: ApprovalContext) => boolean | Promise<boolean>);
  /** How long a call waits for approval before it is declined (default: the thread's `approvalTimeoutMs`, or forever). */
  approvalTimeoutMs?: number;
  /** Set by `createNotificationInboxTool()`: the workflow runs this tool on the thread's own state. */
  builtin?: 'notification-inbox';
}

/** The conversation a processor sees: the step's context window, with every input's metadata. */
export interface MessageList {
  all(): readonly StoredMessage[];
  /** Mastra-compatible accessor: `messageList.get.all.db()`. */
  get: { all: { db(): readonly StoredMessage[] } };
}

export interface ProcessInputStepArgs {
  messageList: MessageList;
  /** Adds a signal (default type `reactive`, tag `system-reminder`) to this step's input, stored and echoed in order. */
  sendSignal(signal: Omit<SignalInput, 'type'> & { type?: SignalInput['type'] }): Promise<void>;
  stepNumber: number;
  runId: string;
  threadId: string;
  resourceId: string;
  abortSignal: AbortSignal;
}

/** What `computeStateSignal` gets (behaviour §3.2), once per model step after `processInputStep`. */
export interface ComputeStateSignalArgs {
  stepNumber: number;
  runId: string;
  threadId: string;
  resourceId: string;
  /** This lane's state signals inside the context window the model will see, oldest first. */
  activeStateSignals: readonly InputMessage[];
  /** The lane's latest snapshot: from the window, or from the thread's lane record when the window lost it. */
  lastSnapshot?: InputMessage;
  /** Deltas accepted after `lastSnapshot`, oldest first. */
  deltasSinceSnapshot: readonly InputMessage[];
  /** The lane's tracking (`currentCacheKey`, `currentMode`, `version`, ...), or undefined for a new lane. */
  tracking?: LaneTracking;
  contextWindow: { hasSnapshot: boolean };
  abortSignal: AbortSignal;
}

/** A state to emit: deduped like `sendStateSignal` (same cacheKey and mode → nothing), re-emitted if it left the window. */
export interface ComputedStateSignal {
  mode: StateMode;
  cacheKey: string;
  contents: SignalInput['contents'];
  value?: unknown;
  delta?: unknown;
  tagName?: string;
  attributes?: SignalInput['attributes'];
}

/**
 * Worker-side code that runs once per model step, before the model is called (behaviour §2.3). It may do I/O; what it
 * sends is recorded durably with the step's result. It is responsible for not sending the same context twice.
 */
export interface Processor {
  id: string;
  processInputStep?(args: ProcessInputStepArgs): unknown;
  /** The lane `computeStateSignal` owns (default: the processor's `id`). */
  stateId?: string;
  computeStateSignal?(
    args: ComputeStateSignalArgs,
  ): ComputedStateSignal | undefined | void | Promise<ComputedStateSignal | undefined | void>;
}

export interface AgentDefinition {
  id: string;
  name?: string;
  description?: string;
  instructions: string;
  /** `provider/model` (e.g. `openai/gpt-4o-mini`), `demo`, or an AI SDK model. Default: the `MODEL` setting. */
  model?: string | LanguageModel;
  tools?: Record<string, AgentTool<any, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The window the model sees: the last `maxMessages` stored messages within `maxBytes` (the thread's default otherwise). */
  contextWindow?: Partial<ContextWindowConfig>;
  processors?: Processor[];
  notifications?: AgentNotifications;
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|seconds?|m|minutes?|h|hours?)$/i;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `1500`, `'30 seconds'`, `'1 minute'`, `'2 hours'` → milliseconds. */
export function parseDuration(value: number | string, what: string): number {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  const match = typeof value === 'string' ? DURATION.exec(value.trim()) : null;
  if (!match)
    throw new Error(`${what} must be milliseconds or a duration such as '1 minute', got ${JSON.stringify(value)}.`);
  const unit = match[2].toLowerCase();
  const key = unit.startsWith('ms') || unit.startsWith('milli') ? 'ms' : unit[0];
  return Number(match[1]) * UNIT_MS[key];
}

/** The plain data the thread workflow needs about an agent. */
export function agentProfile(agent: AgentDefinition): AgentProfile {
  const profile: AgentProfile = {
    agentId: agent.id,
    ownedLanes: (agent.processors ?? []).filter((p) => p.computeStateSignal).map((p) => p.stateId ?? p.id),
  };
  if (agent.contextWindow) profile.contextWindow = agent.contextWindow;
  const n = agent.notifications;
  if (n) {
    const { decide, ...policy } = n.deliveryPolicy ?? {};
    profile.notifications = { hasDecide: decide !== undefined };
    if (Object.keys(policy).length > 0) profile.notifications.deliveryPolicy = policy;
    if (n.digestWindow !== undefined)
      profile.notifications.digestWindowMs = parseDuration(
        n.digestWindow,
        `Agent ${agent.id}: notifications.digestWindow`,
      );
  }
  return profile;
}

const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Declares an agent.
 * @example defineAgent({ id: 'support', instructions: 'Help the user.', model: 'openai/gpt-4o-mini' })
 */
export function defineAgent(definition: AgentDefinition): AgentDefinition {
  if (!AGENT_ID.test(definition.id)) {
    throw new Error(
      `Invalid agent id: "${definition.id}". Use letters, digits, _ . - and start with a letter or digit.`,
    );
  }
  const processorIds = new Set<string>();
  const lanes = new Set<string>();
  for (const processor of definition.processors ?? []) {
    if (processorIds.has(processor.id))
      throw new Error(`Two processors of agent ${definition.id} share the id "${processor.id}".`);
    processorIds.add(processor.id);
    if (!processor.computeStateSignal) continue;
    const lane = processor.stateId ?? processor.id;
    if (lanes.has(lane)) throw new Error(`Two processors of agent ${definition.id} own the state lane "${lane}".`);
    lanes.add(lane);
  }
  if (definition.notifications?.digestWindow !== undefined) {
    parseDuration(definition.notifications.digestWindow, `Agent ${definition.id}: notifications.digestWindow`);
  }
  const window = definition.contextWindow;
  for (const key of ['maxMessages', 'maxBytes'] as const) {
    const value = window?.[key];
    if (value !== undefined && (!Number.isInteger(value) || value < 1))
      throw new Error(`Agent ${definition.id}: contextWindow.${key} must be a whole number ≥ 1, got ${value}.`);
  }
  for (const name of Object.keys(definition.tools ?? {})) {
    if (!XML_NAME.test(name)) throw new Error(`Invalid tool name "${name}" on agent ${definition.id}.`);
  }
  return definition;
}

/** Agents by id; a duplicate id is a configuration error. */
export class AgentRegistry {
  private readonly agents = new Map<string, AgentDefinition>();

  constructor(agents: AgentDefinition[]) {
    for (const agent of agents) {
      if (this.agents.has(agent.id)) throw new Error(`Two agents share the id "${agent.id}".`);
      this.agents.set(agent.id, agent);
    }
  }

  get(id: string): AgentDefinition | undefined {
    return this.agents.get(id);
  }

  list(): AgentDefinition[] {
    return [...this.agents.values()];
  }
}
