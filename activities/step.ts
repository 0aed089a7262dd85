/**
 * One model step: prompt from the context window, streamed model call, every chunk to the bus, the final
 * message back to the workflow. Tokens never enter workflow history.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, CompleteAsyncError } from '@temporalio/common';
import { APICallError, jsonSchema, streamText, type ToolSet } from 'ai';
import { z } from 'zod';
import type { EventBus } from '../bus/types';
import {
  describeZodError,
  legacySignalTypes,
  signalSchema,
  stateSignalSchema,
  type StreamOptions,
} from '../protocol/schemas';
import { computedStateVersion, laneMessagesIn, stateOf, type StoredStateInfo } from '../protocol/lanes';
import { echoPayload, echoType } from '../protocol/events';
import type { StepInput } from '../protocol/step';
import type { AssistantPart, InputMessage, StepResult, StoredMessage, ToolCall } from '../protocol/messages';
import type { AgentDefinition, AgentRegistry, Processor } from '../agents/agent';
import type { ModelResolver } from '../agents/models';
import { isValidationError } from '../protocol/errors';
import { metrics } from '../observability';
import { modelCallTelemetry } from '../observability/tracing';
import { boundedDownload } from './download';
import { toModelMessages } from './prompt';
import { OrderedPublisher } from './publisher';
import type { StepCancelNotices, StepWatch } from './cancel-notices';
import type { StepWindowCache, WindowQuery } from './step-window';

export type { StepInput } from '../protocol/step';

/** A step with its whole context window, as the worker rebuilt it (`StepWindowCache`). */
type WindowedStep = StepInput & { messages: StoredMessage[] };

export interface StepDeps {
  agents: AgentRegistry;
  bus: EventBus;
  models: ModelResolver;
  windows: StepWindowCache;
  queryWindow: WindowQuery;
  /** Cancel notices from the bus (the interrupt fast path); without them cancellation arrives by heartbeat only. */
  cancelNotices?: StepCancelNotices;
}

export function unknownAgent(agentId: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `Unknown agent "${agentId}": no worker on this task queue hosts it.`,
    'UnknownAgent',
  );
}

/** Each agent's tool schemas, made once: an agent's definition does not change while the worker runs. */
const toolSchemasByAgent = new WeakMap<AgentDefinition, ToolSet>();

/** Tool schemas only: the workflow runs tools as their own activities. */
export function toolSchemas(agent: AgentDefinition): ToolSet {
  let tools = toolSchemasByAgent.get(agent);
  if (tools) return tools;
  tools = {};
  for (const [name, tool] of Object.entries(agent.tools ?? {})) {
    tools[name] = {
      description: tool.description,
      inputSchema: jsonSchema(z.toJSONSchema(tool.inputSchema) as never),
    };
  }
  toolSchemasByAgent.set(agent, tools);
  return tools;
}

/**
 * What a step asks the model, besides the model itself: the agent's instructions, the window with the step's transient
 * inputs and its processors' signals, the tool schemas and the run's settings. The step and `threadline inspect`
 * (worker/inspect.ts) both build the call here, so inspection shows what the provider was sent.
 */
export function stepCallOptions(
  agent: AgentDefinition,
  step: { messages: readonly StoredMessage[]; transient: readonly InputMessage[]; streamOptions?: StreamOptions },
  signals: readonly InputMessage[],
) {
  const options = step.streamOptions;
  return {
    system: agent.instructions,
    messages: toModelMessages([...step.messages, ...step.transient, ...signals]),
    tools: toolSchemas(agent),
    toolChoice: options?.toolChoice,
    ...options?.modelSettings,
  };
}

/** While the model streams, a part heartbeats if this long passed since the last heartbeat (well under Core's throttle). */
const PART_HEARTBEAT_MS = 200;

/** Runs one step, counted in `threadline_steps_total` by outcome and timed in `threadline_step_duration_seconds`. */
export async function runStep(deps: StepDeps, input: StepInput): Promise<StepResult> {
  const agent = deps.agents.get(input.agentId);
  if (!agent) throw unknownAgent(input.agentId);
  const started = performance.now();
  let outcome = 'failed';
  const cancel = deps.cancelNotices?.watch(input.threadKey, input.stepKey);
  try {
    const messages = await deps.windows.resolve(input, deps.queryWindow);
    const result = await step(deps, agent, { ...input, messages }, started, cancel);
    outcome = 'completed';
    return result;
  } catch (err) {
    // Once told to stop (a processor, the window lookup or the model call gave up on it), the step ends as Temporal's
    // cancellation says: cancelled, or retried when a notice's cancellation was never recorded.
    const failure = cancel?.signal.aborted ? await cancel.cancelled().catch((end: unknown) => end) : err;
    if (failure instanceof CancelledFailure || failure instanceof CompleteAsyncError) outcome = 'cancelled';
    throw failure;
  } finally {
    cancel?.release();
    metrics.steps.inc({ agent: agent.id, outcome });
    metrics.stepDuration.observe({ agent: agent.id }, (performance.now() - started) / 1000);
  }
}

async function step(
  deps: StepDeps,
  agent: AgentDefinition,
  input: WindowedStep,
  started: number,
  cancel?: StepWatch,
): Promise<StepResult> {
  const ctx = Context.current();
  // Temporal's cancellation, or a cancel notice that comes before it (activities/cancel-notices.ts).
  const cancelled = cancel?.signal ?? ctx.cancellationSignal;
  const attempt = ctx.info.attempt;
  const out = new OrderedPublisher(deps.bus, input.threadKey, `s:${input.stepKey}:${attempt}`, input.runId);
  // The workflow's events that precede the step go first (already published by an earlier attempt, they add nothing):
  // the thread's first event is never preceded by one of a step, which would read as a stream that began anew.
  for (const draft of input.preEvents) out.pushDraft(draft);
  // A retried step announces itself before its output, so subscribers drop the partial output of the failed attempt.
  if (attempt > 1) out.push('run-retry', { stepNumber: input.stepNumber, attempt });
  out.push('step-start', { stepNumber: input.stepNumber });

  const signals = await runProcessors(agent, input, out, cancelled);

  // Heartbeats carry cancellation to the activity; keep them flowing while the provider is slow to answer, and while
  // it streams, at most one per PART_HEARTBEAT_MS: each call is a trip through the SDK's pipeline into Core, which
  // sends one per throttle interval (a second by default) whatever the number of calls.
  // The first part heartbeats at once, as every part did before: a short step still reports early.
  let lastBeat = -Infinity;
  const beat = () => {
    lastBeat = performance.now();
    ctx.heartbeat();
  };
  const heartbeat = setInterval(beat, Math.max(200, (ctx.info.heartbeatTimeoutMs ?? 10_000) / 3));
  const content: AssistantPart[] = [];
  const toolCalls: ToolCall[] = [];
  let finishReason = 'unknown';
  let usage: StepResult['usage'] = {};
  let streamError: unknown = null;
  let firstToken = false;
  try {
    const result = streamText({
      model: deps.models.resolve(agent.model),
      ...stepCallOptions(agent, input, signals),
      // Disable provider-side retries; Temporal owns retries.
      maxRetries: 0,
      abortSignal: cancelled,
      // File URLs the provider cannot take are fetched by this worker: within a size and time bound.
      experimental_download: boundedDownload(cancelled),
      // With tracing on, the model call's spans join the step activity's; no message contents unless configured.
      experimental_telemetry: modelCallTelemetry(agent.id),
    });
    const texts = new Map<string, { type: 'text' | 'reasoning'; text: string }>();
    for await (const part of result.fullStream) {
      if (performance.now() - lastBeat >= PART_HEARTBEAT_MS) beat();
      switch (part.type) {
        case 'text-start': {
          const entry = { type: 'text' as const, text: '' };
          texts.set(`t:${part.id}`, entry);
          content.push(entry);
          out.push('text-start', { id: part.id });
          break;
        }
        case 'text-delta': {
          if (!firstToken) {
            firstToken = true;
            metrics.firstToken.observe({ agent: agent.id }, (performance.now() - started) / 1000);
          }
          const entry = texts.get(`t:${part.id}`);
          if (entry) entry.text += part.text;
          out.push('text-delta', { id: part.id, text: part.text });
          break;
        }
        case 'text-end':
          out.push('text-end', { id: part.id });
          break;
        case 'reasoning-start': {
          const entry = { type: 'reasoning' as const, text: '' };
          texts.set(`r:${part.id}`, entry);
          content.push(entry);
          break;
        }
        case 'reasoning-delta': {
          const entry = texts.get(`r:${part.id}`);
          if (entry) entry.text += part.text;
          out.push('reasoning-delta', { id: part.id, text: part.text });
          break;
        }
        case 'tool-call': {
          const call = { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input };
          toolCalls.push(call);
          content.push({ type: 'tool-call', ...call });
          out.push('tool-call', call);
          break;
        }
        case 'finish-step':
          finishReason = part.finishReason;
          usage = { inputTokens: part.usage.inputTokens, outputTokens: part.usage.outputTokens };
          break;
        case 'error':
          streamError = part.error;
          break;
      }
    }
  } catch (err) {
    streamError = err;
  } finally {
    clearInterval(heartbeat);
  }
  if (cancelled.aborted) {
    // The last chunks go out before the activity ends: the workflow publishes `step-interrupted` after it.
    await out.flush().catch(() => undefined);
    throw new CancelledFailure('The step was cancelled.');
  }
  if (streamError) {
    await out.flush().catch(() => undefined);
    throw toFailure(streamError);
  }
  await markApprovals(agent, input, toolCalls);
  out.push('step-finish', { stepNumber: input.stepNumber, finishReason, usage });
  await out.flush();
  return {
    signals,
    content: content.filter((p) => p.type === 'tool-call' || p.text !== ''),
    toolCalls,
    finishReason,
    usage,
  };
}

/**
 * Marks the calls whose tool requires approval (behaviour §2.4; the workflow parks the run on them) and the calls of
 * built-in tools the workflow runs itself.
 */
async function markApprovals(agent: AgentDefinition, input: StepInput, calls: ToolCall[]): Promise<void> {
  for (const call of calls) {
    const tool = agent.tools?.[call.toolName];
    if (tool?.builtin) call.builtin = tool.builtin;
    const rule = tool?.requireApproval;
    if (!rule) continue;
    let required = rule === true;
    if (typeof rule === 'function') {
      const parsed = tool.inputSchema.safeParse(call.input);
      // An input the tool would refuse needs no approval: it fails with an error result the model reads.
      required = parsed.success
        ? await rule(parsed.data, {
            resourceId: input.resourceId,
            threadId: input.threadId,
            runId: input.runId,
            toolCallId: call.toolCallId,
          })
        : false;
    }
    if (!required) continue;
    call.approval = tool.approvalTimeoutMs !== undefined ? { timeoutMs: tool.approvalTimeoutMs } : {};
    metrics.approvalsRequested.inc({ agent: agent.id, tool: call.toolName });
  }
}

/**
 * Runs the agent's processors in order (behaviour §2.3). Each signal a processor sends joins this step's input at once
 * (later processors see it), is echoed before the model output, and returns to the workflow with the step's result.
 */
async function runProcessors(
  agent: AgentDefinition,
  input: WindowedStep,
  out: OrderedPublisher,
  abortSignal: AbortSignal,
): Promise<InputMessage[]> {
  const sent: InputMessage[] = [];
  const all = () => [...input.messages, ...input.transient, ...sent];
  const messageList = { all, get: { all: { db: all } } };
  for (const processor of agent.processors ?? []) {
    if (!processor.processInputStep) continue;
    let n = 0;
    await processor.processInputStep({
      messageList,
      stepNumber: input.stepNumber,
      runId: input.runId,
      threadId: input.threadId,
      resourceId: input.resourceId,
      abortSignal,
      sendSignal: async (signal) => {
        const parsed = signalSchema.safeParse({ type: 'reactive', ...signal });
        if (!parsed.success) {
          throw ApplicationFailure.nonRetryable(
            `Processor ${processor.id} sent an invalid signal: ${describeZodError(parsed.error)}`,
            'InvalidProcessorSignal',
          );
        }
        const s = parsed.data;
        const message: InputMessage = {
          // Deterministic per step: a retried step re-sends under the same ids.
          id: s.id ?? `p:${input.stepKey}:${processor.id}:${n++}`,
          role: 'user',
          type: legacySignalTypes[s.type],
          contents: s.contents,
          runId: input.runId,
          at: Date.now(),
          ...(s.tagName ? { tagName: s.tagName } : {}),
          ...(s.attributes ? { attributes: s.attributes } : {}),
          ...(s.metadata ? { metadata: s.metadata } : {}),
          ...(s.providerOptions ? { providerOptions: s.providerOptions } : {}),
        };
        sent.push(message);
        out.push(echoType(message), echoPayload(message, 'deliver'));
      },
    });
  }
  for (const processor of agent.processors ?? []) {
    const message = await computeState(processor, input, all(), abortSignal);
    if (!message) continue;
    sent.push(message);
    out.push(echoType(message), echoPayload(message, 'deliver'));
  }
  return sent;
}

/**
 * A processor that owns a state lane computes it (behaviour §3.2). What it returns is deduped against the lane's
 * latest state (same cacheKey and mode → nothing), unless that state is no longer in the window: then it is
 * re-emitted at the same version, so the model sees the current state again.
 */
async function computeState(
  processor: Processor,
  input: StepInput,
  window: readonly StoredMessage[],
  abortSignal: AbortSignal,
): Promise<InputMessage | null> {
  if (!processor.computeStateSignal) return null;
  const laneId = processor.stateId ?? processor.id;
  const lane = input.lanes?.find((l) => l.laneId === laneId);
  const active = laneMessagesIn(window, laneId);
  const inWindow = lastSnapshotIn(active);
  const hasSnapshot = lane?.hasSnapshot ?? inWindow.lastSnapshot !== undefined;
  const returned = await processor.computeStateSignal({
    stepNumber: input.stepNumber,
    runId: input.runId,
    threadId: input.threadId,
    resourceId: input.resourceId,
    activeStateSignals: active,
    lastSnapshot: hasSnapshot ? inWindow.lastSnapshot : lane?.lastSnapshot,
    deltasSinceSnapshot: hasSnapshot ? inWindow.deltas : (lane?.deltasSinceSnapshot ?? []),
    tracking: lane?.tracking,
    contextWindow: { hasSnapshot },
    abortSignal,
  });
  if (!returned) return null;
  const parsed = stateSignalSchema.safeParse({ id: laneId, ...returned });
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `Processor ${processor.id} computed an invalid state signal: ${describeZodError(parsed.error)}`,
      'InvalidProcessorSignal',
    );
  }
  const s = parsed.data;
  const version = computedStateVersion(lane?.tracking, s, hasSnapshot);
  if (version === null) return null;
  const state: StoredStateInfo = {
    laneId,
    mode: s.mode,
    cacheKey: s.cacheKey,
    version,
    ...(s.value !== undefined ? { value: s.value } : {}),
    ...(s.delta !== undefined ? { delta: s.delta } : {}),
  };
  return {
    // Deterministic per step: a retried step re-emits under the same id.
    id: `p:${input.stepKey}:${processor.id}:state`,
    role: 'user',
    type: 'state',
    contents: s.contents,
    runId: input.runId,
    at: Date.now(),
    metadata: { ...s.metadata, state },
    ...(s.tagName ? { tagName: s.tagName } : {}),
    ...(s.attributes ? { attributes: s.attributes } : {}),
  };
}

/** The latest snapshot among a lane's messages (oldest first) and the deltas after it. */
function lastSnapshotIn(messages: readonly InputMessage[]): { lastSnapshot?: InputMessage; deltas: InputMessage[] } {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (stateOf(messages[i])?.mode === 'snapshot') return { lastSnapshot: messages[i], deltas: messages.slice(i + 1) };
  }
  return { deltas: [...messages] };
}

/** Provider errors that retrying cannot fix (bad key, bad request) fail the step at once. */
function toFailure(err: unknown): Error {
  if (APICallError.isInstance(err)) {
    const message = `Model call failed (${err.statusCode ?? 'no status'}): ${err.message}`;
    return err.isRetryable
      ? ApplicationFailure.retryable(message, 'ModelCallFailed')
      : ApplicationFailure.nonRetryable(message, 'ModelCallRejected');
  }
  // An unknown model or provider (the agent's configuration) fails the same way on every attempt: no retries.
  if (isValidationError(err)) return ApplicationFailure.nonRetryable(err.message, 'ModelNotFound');
  return err instanceof Error ? err : new Error(String(err));
}
