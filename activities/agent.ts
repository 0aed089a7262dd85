/**
 * Agent definitions: what a worker hosts. Agents are worker-side code (instructions, model, tools); threads name
 * them by id, so a thread can be served by several agents over time.
 */
import type { LanguageModel } from 'ai';
import type { z } from 'zod';
import { XML_NAME } from '../client/schemas';
import type { ContextWindowConfig } from '../workflows/messages';

export interface ToolContext {
  resourceId: string;
  threadId: string;
  runId: string;
  toolCallId: string;
  /** Aborted when the run is aborted or the worker shuts down. */
  abortSignal: AbortSignal;
}

export interface AgentTool<I = unknown, O = unknown> {
  description: string;
  inputSchema: z.ZodType<I>;
  execute(input: I, context: ToolContext): O | Promise<O>;
}

export interface AgentDefinition {
  id: string;
  name?: string;
  description?: string;
  instructions: string;
  /** `provider/model` (e.g. `openai/gpt-4o-mini`), `demo`, or an AI SDK model. Default: the `MODEL` setting. */
  model?: string | LanguageModel;
  tools?: Record<string, AgentTool<any, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
  contextWindow?: Partial<ContextWindowConfig>;
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
