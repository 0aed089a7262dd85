/**
 * Shapes both clients share: the TypeScript client over Temporal and the fetch-only HTTP client.
 */
import type { IfActive, IfIdle } from './schemas';
import type { AgentProfile } from './agent-profile';

export interface SendTarget {
  resourceId: string;
  threadId: string;
  runId?: string;
  ifActive?: IfActive;
  ifIdle?: IfIdle;
}

export interface SubscribeOptions {
  /** Resume after this event id: every later event exactly once. */
  lastEventId?: string;
  /** Leave out `data-signal` echoes (non-user inputs). */
  hideSignals?: boolean;
}

/** An agent as `GET /api/agents` lists it: what a caller needs, none of the agent's code. */
export interface AgentSummary {
  id: string;
  name: string;
  description: string;
  instructions: string;
  modelId: string;
  tools: Record<string, { id: string; description?: string }>;
  /**
   * What a thread's workflow needs of the agent before its first step (window, owned lanes, notification policy):
   * clients pass it when they start a thread (`ThreadWorkflowArgs.profiles`), saving the workflow a round trip.
   */
  profile?: AgentProfile;
}
