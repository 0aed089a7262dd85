/**
 * The agents' profiles as workers announced them on the bus (`AgentSummary.profile`), so a client starting a thread
 * hands the workflow what it would otherwise ask a worker for before its first step (a workflow task and an activity
 * round trip). Kept fresh in the background: a lookup waits only for the very first load.
 */
import type { AgentProfile } from '../protocol/agent-profile';
import type { AgentSummary } from '../protocol/api';

export class AgentProfiles {
  private byId = new Map<string, AgentProfile>();
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | null = null;
  private first: Promise<void> | null = null;

  /** `maxAgeMs`: how old the known profiles may be before a lookup refreshes them (in the background). */
  constructor(
    private readonly source: () => Promise<readonly AgentSummary[]>,
    private readonly maxAgeMs = 5_000,
  ) {}

  /** The agent's announced profile, or undefined (unknown agent, nothing announced, the bus unreachable). */
  async get(agentId: string): Promise<AgentProfile | undefined> {
    if (performance.now() - this.loadedAt > this.maxAgeMs) {
      const loading = this.refresh();
      this.first ??= loading;
      await this.first;
    }
    return this.byId.get(agentId);
  }

  private refresh(): Promise<void> {
    this.loading ??= this.source()
      .then(
        (agents) => {
          this.byId = new Map(agents.flatMap((a) => (a.profile ? [[a.id, a.profile] as const] : [])));
        },
        () => undefined, // the workflow asks a worker instead
      )
      .finally(() => {
        this.loadedAt = performance.now();
        this.loading = null;
      });
    return this.loading;
  }
}
