/**
 * The agents that test worker processes host and test gateway processes accept, by id: one table, so that a worker
 * and a gateway started with the same `THREADLINE_TEST_AGENTS` agree on what exists.
 *
 * Tools run inside the worker process, so a test cannot count their calls in memory. With `THREADLINE_TEST_TOOL_LOG`
 * set, every tool call appends one JSON line to that file (`O_APPEND`: lines from several processes never mix), and
 * the test reads it with {@link readToolLog}.
 */
import { appendFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { defineAgent, type AgentDefinition, type ToolContext } from '../../agents/agent';
import { testAgent } from './harness';

/** One tool call, as the worker process that ran it recorded it. */
export interface ToolLogEntry {
  toolName: string;
  input: unknown;
  toolCallId: string;
  resourceId: string;
  threadId: string;
  resumeData?: unknown;
  /** The worker process that ran the call. */
  pid: number;
  at: number;
}

function logToolCall(toolName: string, input: unknown, context: ToolContext): void {
  const path = process.env.THREADLINE_TEST_TOOL_LOG;
  if (!path) return;
  const entry: ToolLogEntry = {
    toolName,
    input,
    toolCallId: context.toolCallId,
    resourceId: context.resourceId,
    threadId: context.threadId,
    ...(context.resumeData !== undefined ? { resumeData: context.resumeData } : {}),
    pid: process.pid,
    at: Date.now(),
  };
  appendFileSync(path, `${JSON.stringify(entry)}\n`);
}

/** The tool calls recorded in `path` so far, oldest first (none when the file does not exist yet). */
export async function readToolLog(path: string): Promise<ToolLogEntry[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ToolLogEntry);
}

/** Administers repositories; deleting one waits for a human's approval (behaviour §2.4). */
export const adminAgent = defineAgent({
  id: 'admin',
  instructions: 'You administer repositories.',
  model: 'openai/test-model',
  tools: {
    deleteRepo: {
      description: 'Deletes a repository.',
      inputSchema: z.object({ repo: z.string() }),
      requireApproval: true,
      execute: (input: { repo: string }, context: ToolContext) => {
        logToolCall('deleteRepo', input, context);
        return `deleted ${input.repo}`;
      },
    },
  },
});

/** Every test agent, by id. */
export const testAgents: Readonly<Record<string, AgentDefinition>> = {
  [testAgent.id]: testAgent,
  [adminAgent.id]: adminAgent,
};

/**
 * The agents named by `THREADLINE_TEST_AGENTS` (comma-separated ids; default `tester`).
 *
 * @example
 * // THREADLINE_TEST_AGENTS=tester,admin
 * createWorker({ agents: testAgentsFromEnv(), ... });
 */
export function testAgentsFromEnv(value = process.env.THREADLINE_TEST_AGENTS): AgentDefinition[] {
  const ids = (value || testAgent.id)
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  return ids.map((id) => {
    const agent = testAgents[id];
    if (!agent) {
      throw new Error(
        `Unknown test agent "${id}" in THREADLINE_TEST_AGENTS. Known: ${Object.keys(testAgents).join(', ')}; ` +
          'add new ones to test/support/test-agents.ts.',
      );
    }
    return agent;
  });
}
