/**
 * The agents this deployment serves. Workers host them; gateways list them and reject unknown ids.
 * Add your own agents here (or build your own entry with `createWorker({ agents })`).
 */
import type { AgentDefinition } from './agent';
import { exampleAgent } from './example';

export const agents: AgentDefinition[] = [exampleAgent];
