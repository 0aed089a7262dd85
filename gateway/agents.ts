/**
 * The agents a gateway serves, as plain summaries: a fixed list, or a source the gateway asks (workers announce
 * theirs on the bus). A source is asked at most once a second, and again at once for an id it did not know, so an
 * agent a worker announced after the gateway started is found on its first request.
 */
import type { AgentSummary } from '../protocol/api';

export type AgentSource = readonly AgentSummary[] | (() => Promise<readonly AgentSummary[]>);

const REFRESH_MS = 1_000;

export class AgentDirectory {
  private cached: readonly AgentSummary[] = [];
  private fetchedAt = -Infinity;
  private pending: Promise<readonly AgentSummary[]> | null = null;

  constructor(private readonly source: AgentSource) {
    if (typeof source !== 'function') this.cached = source;
  }

  async list(): Promise<readonly AgentSummary[]> {
    if (typeof this.source !== 'function') return this.cached;
    if (Date.now() - this.fetchedAt < REFRESH_MS) return this.cached;
    return this.refresh();
  }

  async has(id: string): Promise<boolean> {
    if ((await this.list()).some((a) => a.id === id)) return true;
    if (typeof this.source !== 'function') return false;
    return (await this.refresh()).some((a) => a.id === id);
  }

  private refresh(): Promise<readonly AgentSummary[]> {
    const source = this.source as () => Promise<readonly AgentSummary[]>;
    this.pending ??= source()
      .then((agents) => {
        this.cached = agents;
        this.fetchedAt = Date.now();
        return agents;
      })
      .finally(() => (this.pending = null));
    return this.pending;
  }
}

/** An agent as `GET /api/agents` shows it: the summary without the profile workers announce for clients. */
export function publicSummary({ profile, ...shown }: AgentSummary): Omit<AgentSummary, 'profile'> {
  void profile;
  return shown;
}
