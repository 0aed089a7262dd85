/**
 * What a gateway needs to know about an agent: plain data, announced by workers on the bus, so that gateways list
 * and check agents without loading their code or a model provider, and clients start threads with the agent's
 * profile in hand.
 */
import type { AgentSummary } from '../protocol/api';
import { agentProfile, type AgentDefinition } from './agent';
import { defaultModelName, type ModelSettings } from './models';

export function summarizeAgent(agent: AgentDefinition, models: ModelSettings = {}): AgentSummary {
  return {
    id: agent.id,
    name: agent.name ?? agent.id,
    description: agent.description ?? '',
    instructions: agent.instructions,
    modelId: typeof agent.model === 'object' ? agent.model.modelId : (agent.model ?? defaultModelName(models)),
    tools: Object.fromEntries(
      Object.entries(agent.tools ?? {}).map(([name, t]) => [name, { id: name, description: t.description }]),
    ),
    profile: agentProfile(agent),
  };
}

export function summarizeAgents(agents: readonly AgentDefinition[], models: ModelSettings = {}): AgentSummary[] {
  return agents.map((agent) => summarizeAgent(agent, models));
}
