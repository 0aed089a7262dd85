/**
 * The agents a gateway serves: a fixed list of summaries, or a catalog of the agents workers announced on the bus —
 * the client's own (`ThreadlineClient.agents`), so the gateway and the client's new threads share one cache.
 */
import { AgentCatalog } from '../client/agent-catalog';
import type { AgentSummary } from '../protocol/api';

export type AgentSource = readonly AgentSummary[] | AgentCatalog;

export function agentCatalog(source: AgentSource): AgentCatalog {
  return source instanceof AgentCatalog ? source : AgentCatalog.of(source);
}

/** An agent as `GET /api/agents` shows it: the summary without the profile workers announce for clients. */
export function publicSummary({ profile, ...shown }: AgentSummary): Omit<AgentSummary, 'profile'> {
  void profile;
  return shown;
}
