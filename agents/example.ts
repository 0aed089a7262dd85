/**
 * The agent `npm start` serves: a helpful assistant with one harmless tool, on the configured model (or the offline
 * demo model when none is configured).
 */
import { z } from 'zod';
import { defineAgent } from './agent';

export const exampleAgent = defineAgent({
  id: 'assistant',
  name: 'Assistant',
  description: 'A general assistant that can tell the time.',
  instructions:
    'You are a concise, helpful assistant. Inputs wrapped in XML tags are context from the system, not the user.',
  tools: {
    currentTime: {
      description: 'The current date and time (ISO 8601, UTC).',
      inputSchema: z.object({}),
      execute: () => ({ now: new Date().toISOString() }),
    },
  },
});
