/** The bench's one agent, shared by the bench process and the worker processes it starts. */
import { defineAgent } from '../agents/agent';

export const benchAgent = defineAgent({
  id: 'bench',
  instructions: 'You are a benchmark agent.',
  model: 'openai/bench',
});
