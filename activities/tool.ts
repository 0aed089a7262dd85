/**
 * One tool call, as its own activity: validated input, the agent's `execute`, the result published and returned.
 * Tool errors become error results the model can read; they do not fail the run.
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import type { EventBus } from '../bus/types';
import type { ToolCall, ToolResultPart } from '../protocol/messages';
import type { AgentRegistry } from '../agents/agent';
import { metrics, observePublishLag } from '../observability';
import { unknownAgent } from './step';

export interface ToolInput {
  threadKey: string;
  resourceId: string;
  threadId: string;
  runId: string;
  agentId: string;
  call: ToolCall;
  /** From `sendToolApproval({ resumeData })`, for a tool that required approval. */
  resumeData?: unknown;
}

export interface ToolDeps {
  agents: AgentRegistry;
  bus: EventBus;
}

export async function runTool(deps: ToolDeps, input: ToolInput): Promise<ToolResultPart> {
  const agent = deps.agents.get(input.agentId);
  if (!agent) throw unknownAgent(input.agentId);
  const { call } = input;
  const base = { type: 'tool-result' as const, toolCallId: call.toolCallId, toolName: call.toolName };
  let result: ToolResultPart;
  const tool = agent.tools?.[call.toolName];
  if (!tool) {
    result = { ...base, output: `Unknown tool "${call.toolName}".`, isError: true };
  } else {
    const parsed = tool.inputSchema.safeParse(call.input);
    if (!parsed.success) {
      result = { ...base, output: `Invalid input for ${call.toolName}: ${parsed.error.message}`, isError: true };
    } else {
      const ctx = Context.current();
      // Cancellation reaches an activity only through heartbeats: without them an abort never stops the tool.
      const heartbeat = setInterval(() => ctx.heartbeat(), 1_000);
      try {
        const output = await tool.execute(parsed.data, {
          resourceId: input.resourceId,
          threadId: input.threadId,
          runId: input.runId,
          toolCallId: call.toolCallId,
          abortSignal: ctx.cancellationSignal,
          ...(input.resumeData !== undefined ? { resumeData: input.resumeData } : {}),
        });
        result = { ...base, output: output ?? null };
      } catch (err) {
        result = { ...base, output: err instanceof Error ? err.message : String(err), isError: true };
      } finally {
        clearInterval(heartbeat);
      }
      // The workflow already gave this call its result when it cancelled it (an abort) or when it timed out: publish
      // no second one. (On worker shutdown the result above stands.)
      const gone = ctx.cancellationDetails;
      if (gone?.cancelRequested || gone?.timedOut || gone?.notFound) {
        metrics.toolCalls.inc({ agent: agent.id, tool: call.toolName, outcome: 'cancelled' });
        throw new CancelledFailure('The tool call was cancelled.');
      }
    }
  }
  // Unknown names come from the model: one label for all of them keeps the series bounded.
  const toolLabel = tool ? call.toolName : '(unknown)';
  metrics.toolCalls.inc({ agent: agent.id, tool: toolLabel, outcome: result.isError ? 'error' : 'ok' });
  // Keyed by the activity, not the call id: providers may repeat call ids, and a retried attempt reuses its key.
  const { activityId, workflowExecution } = Context.current().info;
  const event = {
    key: `tool:${workflowExecution?.runId}:${activityId}`,
    runId: input.runId,
    type: 'tool-result' as const,
    payload: result,
    at: Date.now(),
  };
  await deps.bus.publish(input.threadKey, [event]);
  observePublishLag('tool', [event]);
  return result;
}
