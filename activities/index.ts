/**
 * Every side effect of a thread. `createActivities(deps)` closes over the bus, the agents and the model settings,
 * so tests inject a model server URL, an in-process or Redis bus.
 */
import { Context } from '@temporalio/activity';
import type { EventBus } from '../bus/types';
import type { EventDraft } from '../protocol/events';
import { agentProfile, type AgentRegistry, type DecideContext } from '../agents/agent';
import { decideNotifications } from './notifications';
import type { NotificationInput } from '../protocol/schemas';
import type { ConfiguredDecision } from '../protocol/agent-profile';
import type { AgentProfile } from '../protocol/agent-profile';
import type { ModelResolver } from '../agents/models';
import { observePublishLag } from '../observability';
import { runStep, type StepDeps, type StepInput } from './step';
import { queryWorkflowWindow, StepWindowCache } from './step-window';
import { runTool, type ToolInput } from './tool';
import type { StepCancelNotices } from './cancel-notices';

export interface ActivityDeps {
  agents: AgentRegistry;
  bus: EventBus;
  models: ModelResolver;
  /** Cancel notices heard on the bus, so an interrupt stops a running step at once (default: none, heartbeats only). */
  cancelNotices?: StepCancelNotices;
  /** The windows of the threads' latest steps (default: a cache with the default limits). */
  windows?: StepWindowCache;
}

export const createActivities = (deps: ActivityDeps) => {
  const stepDeps = {
    ...deps,
    windows: deps.windows ?? new StepWindowCache(),
    // The worker's own client (the activity context's): a miss asks the thread's workflow.
    queryWindow: queryWorkflowWindow(() => Context.current().client),
  };
  return activitiesOf(deps, stepDeps);
};

const activitiesOf = (deps: ActivityDeps, stepDeps: StepDeps) => ({
  runStep: (input: StepInput) => runStep(stepDeps, input),
  runTool: (input: ToolInput) => runTool(deps, input),
  /** The agent's plain-data profile for the workflow (window, owned lanes); `null` when no worker here hosts it. */
  async describeAgent(agentId: string): Promise<AgentProfile | null> {
    const agent = deps.agents.get(agentId);
    return agent ? agentProfile(agent) : null;
  },
  /** The agent's `notifications.deliveryPolicy.decide()` for each notification of a send (null: no opinion). */
  decideNotifications: (
    agentId: string,
    notifications: NotificationInput[],
    context: DecideContext,
  ): Promise<(ConfiguredDecision | null)[]> => decideNotifications(deps.agents, agentId, notifications, context),
  /** Notification records that left a thread's inbox: kept by the bus, so they stay retrievable. */
  async archiveNotifications(threadKey: string, records: object[]): Promise<void> {
    await deps.bus.archive(threadKey, records as Record<string, unknown>[]);
  },
  /** Workflow-decided events (run start/finish, echoes of persisted inputs, queue changes). Idempotent by key. */
  async publishEvents(threadKey: string, events: EventDraft[]): Promise<void> {
    await deps.bus.publish(threadKey, events);
    // `at` is the workflow's time of the decision: the lag includes scheduling this activity.
    observePublishLag('workflow', events);
  },
});

export {
  AgentRegistry,
  defineAgent,
  type AgentDefinition,
  type AgentTool,
  type ComputeStateSignalArgs,
  type ComputedStateSignal,
  type Processor,
  type ToolContext,
} from '../agents/agent';
export { ModelResolver, demoModel, defaultModelName, type ModelSettings } from '../agents/models';
export type { StepInput } from './step';
export type { ToolInput } from './tool';
