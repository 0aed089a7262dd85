/**
 * The floor's ingest: inputs that only get recorded (no activity), sent by one client keeping a fixed number in
 * flight, round-robin over the workflows (input i to workflow i mod n), at most 8 in flight per workflow as
 * Threadline's client allows itself (Temporal admits 10 in-flight updates per workflow). Accepted: the call returned
 * (update: completed; signal: accepted by the server). Handled: from the workflows' histories afterwards, the workflow
 * task that ran the workflow code with the input completed (an update's acceptance is that task; a signal's is the
 * first task after it). Every input is checked to be in history exactly once.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { wallClock } from '../env';
import { summarize, type Summary } from '../stats';
import { historyChain, inputEvents, mapLimit } from '../temporal-helpers';
import type { FloorWorld } from './world';

export interface FloorIngestOptions {
  label: string;
  via: 'update-with-start' | 'signal-with-start';
  workflows: number;
  inputs: number;
  concurrency: number;
  /** Each workflow continues as new after this many inputs (0: never). */
  continueAsNewAfter?: number;
  /** No send starts after this long (those in flight finish). */
  maxSeconds: number;
}

export interface FloorIngestCase {
  label: string;
  via: FloorIngestOptions['via'];
  workflows: number;
  planned: number;
  sent: number;
  failed: number;
  concurrency: number;
  continueAsNewAfter: number;
  /** First call → last return. */
  durationMs: number;
  acceptedPerSecond: number;
  /** Inputs handled (history) per second, first call → the last input's handling task completed. */
  handledPerSecond: number;
  acceptLatency: Summary;
  executions: number;
  /** Every history event of every execution, per accepted input. */
  eventsPerInput: number;
  /** Every accepted input in history exactly once, nothing else. */
  exactlyOnce: boolean;
  problems: string[];
}

const perWorkflowInFlight = 8;

export async function floorIngest(floor: FloorWorld, options: FloorIngestOptions): Promise<FloorIngestCase> {
  const tag = randomUUID().slice(0, 8);
  const ids = Array.from({ length: options.workflows }, (_, k) => `floor-ingest-${tag}-${k}`);
  const continueAsNewAfter = options.continueAsNewAfter ?? 0;
  const send =
    options.via === 'update-with-start'
      ? (id: string, marker: string) => floor.updateWithStart(id, { marker, activities: 0 }, continueAsNewAfter)
      : (id: string, marker: string) => floor.signalWithStart(id, { marker, activities: 0 }, continueAsNewAfter);
  const inFlight = new Map<string, number>();
  const freed = new Map<string, (() => void)[]>();
  const acquire = async (id: string) => {
    while ((inFlight.get(id) ?? 0) >= perWorkflowInFlight) {
      await new Promise<void>((resolve) => freed.set(id, [...(freed.get(id) ?? []), resolve]));
    }
    inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
  };
  const release = (id: string) => {
    inFlight.set(id, inFlight.get(id)! - 1);
    freed.get(id)?.shift()?.();
  };

  const records: { marker: string; workflow: number; start: number; end: number; error?: string }[] = [];
  const deadline = performance.now() + options.maxSeconds * 1000;
  let next = 0;
  const sender = async () => {
    for (let i = next++; i < options.inputs && performance.now() < deadline; i = next++) {
      const workflow = i % options.workflows;
      const record = { marker: `${tag}-${i}`, workflow, start: NaN, end: NaN, error: undefined as string | undefined };
      records.push(record);
      await acquire(ids[workflow]);
      record.start = performance.now();
      try {
        await send(ids[workflow], record.marker);
      } catch (err) {
        record.error = (err as Error).message;
      } finally {
        record.end = performance.now();
        release(ids[workflow]);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, sender));

  const ok = records.filter((r) => !r.error);
  const firstStart = Math.min(...records.map((r) => r.start));
  const lastEnd = Math.max(...records.map((r) => r.end));
  const durationMs = lastEnd - firstStart;
  const problems: string[] = [];
  const failed = records.length - ok.length;
  if (failed > 0) problems.push(`${failed} sends failed, e.g. ${records.find((r) => r.error)!.error}`);

  // A workflow no send reached (the time budget ran out first) does not exist. A signal is in history once accepted,
  // but handled only once a workflow task has run with it: read again until every one has been.
  const reached = [...new Set(ok.map((r) => r.workflow))].map((k) => ids[k]);
  const deadlineHandled = Date.now() + 60_000;
  let chains = await mapLimit(reached, 32, (id) => historyChain(floor.client.workflow, id));
  let inputs = chains.flat().flatMap((execution) => inputEvents(execution.events));
  while (inputs.some((input) => Number.isNaN(input.handledAt)) && Date.now() < deadlineHandled) {
    await sleep(250);
    chains = await mapLimit(reached, 32, (id) => historyChain(floor.client.workflow, id));
    inputs = chains.flat().flatMap((execution) => inputEvents(execution.events));
  }
  const events = chains.flat().reduce((sum, execution) => sum + execution.events.length, 0);
  const seen = new Map<string, number>();
  for (const input of inputs) if (input.id) seen.set(input.id, (seen.get(input.id) ?? 0) + 1);
  const handled = inputs.filter((input) => Number.isFinite(input.handledAt));
  const lastHandled = Math.max(...handled.map((input) => input.handledAt));
  if (handled.length < inputs.length) problems.push(`${inputs.length - handled.length} inputs never handled`);
  const missing = ok.filter((r) => !seen.has(r.marker)).length;
  const repeated = ok.filter((r) => (seen.get(r.marker) ?? 0) > 1).length;
  const markers = new Set(records.map((r) => r.marker));
  const strangers = [...seen.keys()].filter((marker) => !markers.has(marker)).length;
  if (missing > 0 || repeated > 0 || strangers > 0) {
    problems.push(
      `${missing} accepted inputs not in history, ${repeated} in it more than once, ${strangers} inputs nobody sent`,
    );
  }
  const handledMs = lastHandled - wallClock(firstStart);
  return {
    label: options.label,
    via: options.via,
    workflows: options.workflows,
    planned: options.inputs,
    sent: records.length,
    failed,
    concurrency: options.concurrency,
    continueAsNewAfter,
    durationMs: round(durationMs),
    acceptedPerSecond: round((ok.length / durationMs) * 1000),
    handledPerSecond: round((handled.length / handledMs) * 1000),
    acceptLatency: summarize(ok.map((r) => r.end - r.start)),
    executions: chains.reduce((sum, chain) => sum + chain.length, 0),
    eventsPerInput: round(events / Math.max(1, ok.length)),
    exactlyOnce: missing === 0 && repeated === 0 && strangers === 0,
    problems,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;
