/**
 * The JSON schemas of an agent's tools, made per step (as the step did) or once per agent (as it does now), A/B in one
 * run: CPU time per step's worth of schemas for an agent with three tools of ordinary size.
 *
 *   npx tsx bench/ab-tool-schemas.ts
 */
import { jsonSchema, type ToolSet } from 'ai';
import { z } from 'zod';
import { defineAgent } from '../agents/agent';
import { toolSchemas } from '../activities/step';

const tool = (description: string, inputSchema: z.ZodType) => ({ description, inputSchema, execute: () => 'ok' });
const agent = defineAgent({
  id: 'tools',
  instructions: 'Three tools.',
  model: 'openai/bench',
  tools: {
    search: tool('Searches.', z.object({ query: z.string().min(1), limit: z.number().int().max(50).optional() })),
    fetchPage: tool(
      'Fetches a page.',
      z.object({ url: z.url(), headers: z.record(z.string(), z.string()).optional() }),
    ),
    createIssue: tool(
      'Creates an issue.',
      z.object({
        title: z.string(),
        body: z.string(),
        labels: z.array(z.enum(['bug', 'feature', 'question'])).default([]),
        assignee: z.object({ login: z.string(), team: z.string().optional() }).optional(),
      }),
    ),
  },
});

function perStep(): ToolSet {
  const tools: ToolSet = {};
  for (const [name, t] of Object.entries(agent.tools ?? {})) {
    tools[name] = { description: t.description, inputSchema: jsonSchema(z.toJSONSchema(t.inputSchema) as never) };
  }
  return tools;
}

const n = 2_000;
const results: Record<string, number[]> = { 'per step': [], 'once per agent': [] };
for (let round = 0; round < 9; round++) {
  const order: [string, () => ToolSet][] = [
    ['per step', perStep],
    ['once per agent', () => toolSchemas(agent)],
  ];
  if (round % 2 === 1) order.reverse();
  for (const [name, make] of order) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < n; i++) make();
    const used = process.cpuUsage(cpu);
    if (round > 0) results[name].push((used.user + used.system) / n);
  }
}
for (const [name, xs] of Object.entries(results)) {
  xs.sort((a, b) => a - b);
  process.stdout.write(`${name}: CPU µs per step, median of ${xs.length} runs of ${n}: ${xs[4].toFixed(2)}\n`);
}
