/**
 * A thread event as both SSE routes send it: the event unchanged, plus the fields Mastra's chunks carry under other
 * names, so a front end written for `@mastra/client-js` reads Threadline's stream (docs/mastra-compat.md, G3).
 * Additive only: every field of `ThreadEvent` keeps its name, place and value.
 *
 * @example
 * toWireEvent({ id: '7', threadKey, runId: 'r1', type: 'tool-call', at, payload: { toolCallId, toolName, input } })
 * // → { ...event, from: 'AGENT', payload: { toolCallId, toolName, input, args: input } }
 */
import type { ThreadEvent } from '../protocol/events';

/** A thread event with Mastra's aliases: `from` on every event, `data` on input echoes. */
export type WireEvent = ThreadEvent & { from: 'AGENT'; data?: Record<string, unknown> };

type Payload = Record<string, unknown>;

/** Threadline's `finish` reasons as Mastra's `stepResult.reason`; a run out of steps stopped mid tool loop. */
const FINISH_REASONS: Record<string, string> = { stop: 'stop', error: 'error', 'max-steps': 'tool-calls' };

/** Adds Mastra's field names beside Threadline's. Pure: the same event always gives the same wire event. */
export function toWireEvent(event: ThreadEvent): WireEvent {
  const wire: WireEvent = { ...event, from: 'AGENT' };
  if (!isRecord(event.payload)) return wire;
  const payload = event.payload;
  switch (event.type) {
    case 'data-user-message':
    case 'data-signal':
      // Mastra reads an input echo from `data`, with an ISO `createdAt`.
      wire.data = { ...payload, createdAt: new Date(event.at).toISOString() };
      break;
    case 'tool-call':
      wire.payload = { ...payload, args: payload.input };
      break;
    case 'tool-call-approval':
      // Threadline tools declare no resume schema: resumeData is passed to the tool as sent.
      wire.payload = { ...payload, resumeSchema: payload.resumeSchema ?? '{}' };
      break;
    case 'tool-result':
      wire.payload = { ...payload, result: payload.output };
      break;
    case 'step-finish':
      wire.payload = {
        ...payload,
        stepResult: { reason: payload.finishReason },
        output: { usage: withTotal(payload.usage) },
      };
      break;
    case 'finish':
      // The run's token usage is not on the event (each step-finish carries its own): an empty usage, not zeros.
      wire.payload = {
        ...payload,
        stepResult: { reason: FINISH_REASONS[String(payload.reason)] ?? String(payload.reason) },
        output: { usage: withTotal(payload.usage) },
      };
      break;
    case 'error':
      wire.payload = { ...payload, error: payload.message };
      break;
  }
  return wire;
}

function isRecord(value: unknown): value is Payload {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Usage with `totalTokens` where both counts are known, as the AI SDK reports it; `{}` when unknown. */
function withTotal(usage: unknown): Payload {
  if (!isRecord(usage)) return {};
  const { inputTokens, outputTokens } = usage;
  if (typeof inputTokens === 'number' && typeof outputTokens === 'number' && usage.totalTokens === undefined) {
    return { ...usage, totalTokens: inputTokens + outputTokens };
  }
  return { ...usage };
}
