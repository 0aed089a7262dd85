/**
 * Time travel on the worker, where the agents and the workflow code are. A step's prompt is rebuilt by replaying the
 * execution that holds it with the real workflow code, capturing what the workflow planned (workflows/inspection.ts),
 * then assembling the call exactly as the step activity does (`stepCallOptions`) and letting the provider build its
 * request with a `fetch` that records the body and sends nothing. A fork starts from the thread's state captured
 * right before the step was planned.
 *
 * The replays run on a worker of their own (`Worker.runReplayHistory`) whose bundle loads workflows/inspection.ts as
 * its interceptor module, which switches capturing on, and registers the `inspection` sink with `callDuringReplay`.
 * The bundle is built once per process, at the first inspection.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Context } from '@temporalio/activity';
import type { WorkflowClient } from '@temporalio/client';
import { streamText, type LanguageModel } from 'ai';
import { boundedDownload } from '../activities/download';
import { stepCallOptions } from '../activities/step';
import type { AgentDefinition, AgentRegistry } from '../agents/agent';
import { defaultModelName, ModelResolver, type ModelSettings } from '../agents/models';
import { readHistoryChain, jsonPayloadValue, type ChainExecution } from '../client/history-chain';
import { listSteps } from '../client/steps';
import { threadKey } from '../protocol/ids';
import type { InputMessage } from '../protocol/messages';
import {
  inspectionFailures,
  type ForkStart,
  type InspectionFailureType,
  type InspectionOutcome,
  type InspectionRequest,
  type StepListing,
  type StepPrompt,
} from '../protocol/time-travel';
import { INSPECTION_SINK, type StepCapture } from '../workflows/inspection';
import type { InspectionActivities } from '../workflows/inspect-step';
import { preloadModules } from './bundle';
import { forkSnapshot } from './fork';
import { replaySinks } from './replay-sinks';

const require = createRequire(import.meta.url);
const inspectionInterceptors = require.resolve('../workflows/inspection.ts');

export interface InspectionDeps {
  agents: AgentRegistry;
  /** The worker's model settings: inspection resolves the agent's model as the step does. */
  models: ModelSettings;
  /** The workflow code the replays run (the worker's `workflowsPath`). */
  workflowsPath: string;
}

/** The inspection activity a worker registers beside the thread's (`threadlineInspectStep` runs it). */
export function inspectionActivities(deps: InspectionDeps): InspectionActivities {
  return {
    async inspectThreadStep(request: InspectionRequest): Promise<InspectionOutcome> {
      try {
        const chain = await readChain(Context.current().client.workflow, request);
        if (request.fork) return { fork: await forkFrom(deps, chain, request) };
        return { prompt: await inspectStep(deps, chain, request.step, Context.current().cancellationSignal) };
      } catch (err) {
        // A refusal is an answer, not a failure: no retries, no failed activity or workflow in the logs and the UI.
        if (err instanceof InspectionRefusal) return { refused: { type: err.type, message: err.message } };
        throw err;
      }
    },
  };
}

/** The prompt of step `step`, as the model received it. */
export async function inspectStep(
  deps: InspectionDeps,
  chain: ChainExecution[],
  step: number,
  signal: AbortSignal = new AbortController().signal,
): Promise<StepPrompt> {
  const { listing, captures } = await replayStep(deps, chain, step);
  const planned = captures.find((c) => c.point === 'planned' && c.plan.stepKey === String(step));
  if (planned?.point !== 'planned') throw replayMissed(step, listing);
  const { plan } = planned;
  const agent = deps.agents.get(plan.agentId);
  if (!agent) {
    throw refuse(
      `Step ${step} ran agent "${plan.agentId}", which no worker on this task queue hosts: inspect it on a worker that does.`,
      inspectionFailures.invalid,
    );
  }
  const completed = captures.find((c) => c.point === 'completed' && c.stepKey === String(step));
  const signals: InputMessage[] = completed?.point === 'completed' ? completed.signals : [];
  const call = stepCallOptions(agent, plan, signals);
  const notes: string[] = [];
  const complete = completed !== undefined || !agent.processors?.length;
  if (!complete) {
    notes.push(
      `Step ${step} is ${listing.status}: the signals its processors added travel with a step's result, so they are ` +
        'not in the history and not in these messages.',
    );
  }
  const { toolChoice, modelSettings } = plan.streamOptions ?? {};
  const settings = { ...(toolChoice !== undefined ? { toolChoice } : {}), ...modelSettings };
  return {
    step,
    runId: plan.runId,
    stepNumber: plan.stepNumber,
    agentId: plan.agentId,
    status: listing.status,
    execution: listing.execution,
    model: modelName(agent, deps.models),
    system: call.system,
    tools: Object.fromEntries(
      Object.entries(call.tools).map(([name, tool]) => [
        name,
        { description: tool.description, inputSchema: (tool.inputSchema as { jsonSchema?: unknown }).jsonSchema },
      ]),
    ),
    messages: call.messages,
    ...(Object.keys(settings).length > 0 ? { settings } : {}),
    request: await providerRequest(agent, deps.models, call, signal, notes),
    complete,
    notes,
  };
}

/** The fork's start: the thread before step `step`, as `forkSnapshot` makes it a thread of its own. */
export async function forkFrom(
  deps: Pick<InspectionDeps, 'agents' | 'workflowsPath'>,
  chain: ChainExecution[],
  request: InspectionRequest,
): Promise<ForkStart> {
  const { to, agentId } = request.fork!;
  if (agentId !== undefined && !deps.agents.get(agentId)) {
    throw refuse(
      `Unknown agent "${agentId}": no worker on this task queue hosts it, so the fork could not run it.`,
      inspectionFailures.invalid,
    );
  }
  const { listing, captures, execution } = await replayStep(deps, chain, request.step);
  const before = captures.find((c) => c.point === 'before' && c.snapshot.stepSeq === request.step - 1);
  if (before?.point !== 'before') throw replayMissed(request.step, listing);
  const started = execution.history.events[0]?.workflowExecutionStartedEventAttributes as
    { input?: { payloads?: unknown[] } } | undefined;
  const args = jsonPayloadValue(started?.input?.payloads?.[0]) as { config?: unknown } | undefined;
  const snapshot = forkSnapshot(before.snapshot, { to, agentId, clock: { now: Date.now, newId: randomUUID } });
  return {
    args: { resourceId: to.resourceId, threadId: to.threadId, config: args?.config, snapshot },
  };
}

async function readChain(workflow: WorkflowClient, target: InspectionRequest): Promise<ChainExecution[]> {
  const { WorkflowNotFoundError } = await import('@temporalio/client');
  try {
    return await readHistoryChain(workflow, threadKey(target.resourceId, target.threadId));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      throw refuse(`No thread ${target.resourceId}/${target.threadId}.`, inspectionFailures.notFound);
    }
    throw err;
  }
}

/** Replays the execution that holds step `step` with capturing on. */
async function replayStep(
  deps: Pick<InspectionDeps, 'workflowsPath'>,
  chain: ChainExecution[],
  step: number,
): Promise<{ listing: StepListing; execution: ChainExecution; captures: StepCapture[] }> {
  const steps = listSteps(chain);
  const listing = steps.find((s) => s.step === step);
  if (!listing) {
    const range = steps.length > 0 ? `steps ${steps[0].step} to ${steps[steps.length - 1].step}` : 'no steps yet';
    throw refuse(`The thread has no step ${step}: it has ${range}.`, inspectionFailures.notFound);
  }
  const execution = chain.find((e) => e.runId === listing.execution)!;
  return { listing, execution, captures: await replayExecution(deps.workflowsPath, execution) };
}

/** Every capture of one execution's replay, in order. */
export async function replayExecution(workflowsPath: string, execution: ChainExecution): Promise<StepCapture[]> {
  const { Worker } = await import('@temporalio/worker');
  const { historyFromJSON } = await import('@temporalio/common/lib/proto-utils');
  const captures: StepCapture[] = [];
  const sinks = {
    ...replaySinks,
    [INSPECTION_SINK]: {
      capture: { fn: (_info: unknown, capture: StepCapture) => void captures.push(capture), callDuringReplay: true },
    },
  };
  try {
    await Worker.runReplayHistory(
      { workflowBundle: await inspectionBundle(workflowsPath), sinks },
      historyFromJSON(execution.history),
      `inspect-${execution.runId}`,
    );
  } catch (err) {
    throw refuse(
      `The workflow code of this worker does not replay run ${execution.runId} of the thread, so its steps cannot be ` +
        `rebuilt: ${(err as Error).message}. \`threadline history replay\` names the event where they part.`,
      inspectionFailures.replay,
    );
  }
  return captures;
}

const bundles = new Map<string, Promise<{ code: string }>>();

/**
 * The workflow code with the inspection interceptor: bundled once per process (a few seconds), then reused, with an
 * empty source map (`withEmptySourceMap`).
 */
function inspectionBundle(workflowsPath: string): Promise<{ code: string }> {
  let bundle = bundles.get(workflowsPath);
  if (!bundle) {
    bundle = import('@temporalio/worker').then(async ({ bundleWorkflowCode }) => {
      const { code } = await bundleWorkflowCode({
        workflowsPath,
        // As the worker bundles it: each replay evaluates only the modules with a workflow's own state.
        preloadModules,
        workflowInterceptorModules: [inspectionInterceptors],
        logger: silent,
      });
      return { code: withEmptySourceMap(code) };
    });
    bundle.catch(() => bundles.delete(workflowsPath));
    bundles.set(workflowsPath, bundle);
  }
  return bundle;
}

const INLINE_SOURCE_MAP = '//# sourceMappingURL=data:';

/**
 * `code` with its inline source map replaced by an empty one (same `file`). Each `Worker.runReplayHistory` parses its
 * bundle's source map into the `source-map` package's WebAssembly memory and never frees it (@temporalio/worker 1.24:
 * `GlobalHandlers.removeWorkflowBundle` drops the `SourceMapConsumer` without `destroy()`), and a Wasm memory never
 * shrinks: with the full map every inspection or fork leaked about 5.6 MiB of the worker's memory (issue #14, "Found
 * from outside" 5; docs/limits.md). An inspection replay needs no source positions: a divergence is reported by event.
 */
export function withEmptySourceMap(code: string): string {
  const at = code.lastIndexOf(INLINE_SOURCE_MAP);
  const data = at < 0 ? -1 : code.indexOf('base64,', at);
  if (data < 0) throw new Error('The workflow bundle has no inline source map.');
  const start = data + 'base64,'.length;
  const map = JSON.parse(Buffer.from(code.slice(start).trimEnd(), 'base64').toString()) as { file?: string };
  const empty = { version: 3, file: map.file, sources: [], names: [], mappings: '' };
  return `${code.slice(0, start)}${Buffer.from(JSON.stringify(empty)).toString('base64')}`;
}

/**
 * The provider's request for this call, built by the provider itself and never sent: the built-in OpenAI provider
 * gets a `fetch` that records the URL and body and fails. Other models get no request (and a note saying why).
 */
async function providerRequest(
  agent: AgentDefinition,
  settings: ModelSettings,
  call: ReturnType<typeof stepCallOptions>,
  signal: AbortSignal,
  notes: string[],
): Promise<StepPrompt['request']> {
  const spec = agent.model ?? defaultModelName(settings);
  const providerId = typeof spec === 'string' && spec !== 'demo' ? spec.slice(0, spec.indexOf('/')) : null;
  if (providerId !== 'openai' || settings.providers?.openai) {
    notes.push(
      providerId === null && (spec === 'demo' || (spec as { provider?: string }).provider === 'demo')
        ? 'The demo model runs inside the worker: there is no provider request.'
        : `The model is not the built-in OpenAI provider, so its request cannot be captured without calling it; the ` +
            'system prompt, tools and messages above are what the AI SDK handed it.',
    );
    return null;
  }
  const sent: { request?: { url: string; body: string } } = {};
  const recording: typeof fetch = async (url, init) => {
    const body = init?.body;
    sent.request = { url: url instanceof Request ? url.url : String(url), body: typeof body === 'string' ? body : '' };
    throw new Error('Request captured by time travel; not sent.');
  };
  const model = new ModelResolver({ ...settings, fetch: recording }).resolve(spec);
  const result = streamText({
    model,
    ...call,
    maxRetries: 0,
    abortSignal: signal,
    experimental_download: boundedDownload(signal),
    onError: () => undefined,
  });
  for await (const part of result.fullStream) if (part.type === 'error') break;
  if (!sent.request) notes.push('The provider did not send a request for this call.');
  return sent.request ?? null;
}

function modelName(agent: AgentDefinition, settings: ModelSettings): string {
  const model: LanguageModel = agent.model ?? defaultModelName(settings);
  if (typeof model === 'string') return model;
  return `${model.provider}/${model.modelId}`;
}

function replayMissed(step: number, listing: StepListing): InspectionRefusal {
  return refuse(
    `Replaying run ${listing.execution} did not reach step ${step} (the workflow code may have changed since).`,
    inspectionFailures.replay,
  );
}

/** Why an inspection cannot be answered; the client turns it into its error class. */
export class InspectionRefusal extends Error {
  override readonly name = 'InspectionRefusal';

  constructor(
    readonly type: InspectionFailureType,
    message: string,
  ) {
    super(message);
  }
}

function refuse(message: string, type: InspectionFailureType): InspectionRefusal {
  return new InspectionRefusal(type, message);
}

const noop = () => undefined;
const silent = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
