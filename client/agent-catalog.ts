/**
 * The agents workers announced on the bus (`AgentSummary`, with the profile a new thread starts with), cached for one
 * process: the client reads profiles from it and the gateway lists and checks agents with it, so both ask the bus at
 * most once per `maxAgeMs` between them. An id the catalog does not know makes it ask again at once, so an agent a
 * worker announced a moment ago is found on its first request.
 */
import type { AgentProfile } from '../protocol/agent-profile';
import type { AgentSummary } from '../protocol/api';

export class AgentCatalog {
  private agents: readonly AgentSummary[] = [];
  private loadedAt = Number.NEGATIVE_INFINITY;
  /** When the source was last asked, answered or not: profile lookups do not retry a failing source more often. */
  private askedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<readonly AgentSummary[]> | null = null;
  private firstLoad: Promise<unknown> | null = null;

  /** A catalog of a fixed list, never refreshed (tests, benchmarks, a gateway given its agents). */
  static of(agents: readonly AgentSummary[]): AgentCatalog {
    const catalog = new AgentCatalog(() => Promise.resolve(agents), Number.POSITIVE_INFINITY);
    catalog.agents = agents;
    catalog.loadedAt = 0;
    catalog.firstLoad = Promise.resolve();
    return catalog;
  }

  /** `maxAgeMs`: how old the known agents may be before a lookup asks `source` again. */
  constructor(
    private readonly source: () => Promise<readonly AgentSummary[]>,
    private readonly maxAgeMs = 1_000,
  ) {}

  /** Every announced agent; rejects when the source fails and nothing fresh is known. */
  async list(): Promise<readonly AgentSummary[]> {
    return this.fresh() ? this.agents : this.refresh();
  }

  /** Whether an agent with this id is announced, asking the source again for an id it does not know. */
  async has(id: string): Promise<boolean> {
    if ((await this.list()).some((a) => a.id === id)) return true;
    if (this.maxAgeMs === Number.POSITIVE_INFINITY) return false;
    return (await this.refresh()).some((a) => a.id === id);
  }

  /**
   * The agent's announced profile, or undefined (unknown agent, nothing announced, the bus unreachable: the workflow
   * then asks a worker). Waits only for the very first load; later ones happen in the background.
   */
  async profile(agentId: string): Promise<AgentProfile | undefined> {
    if (!this.fresh()) {
      if (this.loading || performance.now() - this.askedAt >= this.maxAgeMs) {
        const loading = this.refresh().catch(() => undefined);
        this.firstLoad ??= loading;
      }
      await this.firstLoad;
    }
    return this.agents.find((a) => a.id === agentId)?.profile;
  }

  private fresh(): boolean {
    return performance.now() - this.loadedAt < this.maxAgeMs;
  }

  private refresh(): Promise<readonly AgentSummary[]> {
    if (this.loading) return this.loading;
    this.askedAt = performance.now();
    this.loading = this.source()
      .then((agents) => {
        this.agents = agents;
        this.loadedAt = performance.now();
        return agents;
      })
      .finally(() => (this.loading = null));
    return this.loading;
  }
}
