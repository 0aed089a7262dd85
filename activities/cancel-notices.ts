/**
 * The fast path of an interrupt or abort: a cancel notice over the bus stops the step's model call at once, and the
 * step still ends only on Temporal's cancellation.
 *
 * Why: Temporal tells a running activity that it was cancelled only in the response to one of its heartbeats, and the
 * worker throttles those to one a second (worker/index.ts), so an interrupt reached the provider request about a
 * second late. The workflow still decides: it cancels the step's activity as before and, through a sink
 * (workflows/sinks.ts), has its worker send a `step-cancel` notice on the bus, which every worker hears (the one
 * running the step may be another process). That worker aborts the model call, and then asks the server whether the
 * cancellation is recorded (a heartbeat of its own, not throttled): only then does it report the activity cancelled.
 * A notice whose cancellation never gets recorded (the workflow task that decided it was lost) fails the attempt
 * retryably after a bound, so Temporal runs the step again.
 */
import { Context } from '@temporalio/activity';
import { ActivityCancelledError, ActivityNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, CompleteAsyncError } from '@temporalio/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlNotice, EventBus } from '../bus/types';
import { logger } from '../observability';

/** A running step, as `StepCancelNotices.watch` registered it. */
export interface StepWatch {
  /** Aborts on Temporal's cancellation or on a notice naming this step, whichever comes first. */
  readonly signal: AbortSignal;
  /** Stops watching (the step ended). */
  release(): void;
  /**
   * Ends a step whose `signal` aborted, after its last events went out: as cancelled once the server recorded the
   * cancellation, or retryably when it did not within the bound. Never resolves; every call rejects the same way.
   */
  cancelled(): Promise<never>;
}

/** The steps this worker runs, by thread and step, so that a notice reaches the one it names. */
export class StepCancelNotices {
  private readonly running = new Map<string, Set<AbortController>>();
  private readonly listening: Promise<(() => Promise<void>) | null>;

  constructor(bus: EventBus) {
    this.listening = bus
      .onNotice((notice) => this.heard(notice))
      .catch((err: Error) => {
        logger('worker').warn(
          { err },
          'Listening for cancel notices failed: interrupts reach steps by heartbeat only.',
        );
        return null;
      });
  }

  /** Resolves once notices are heard (or listening failed, which only costs time). */
  async ready(): Promise<void> {
    await this.listening;
  }

  /** Watches the step the current activity runs, until `release()`. */
  watch(threadKey: string, stepKey: string): StepWatch {
    const ctx = Context.current();
    const key = stepId(ctx.info.namespace, threadKey, stepKey);
    const noticed = new AbortController();
    let ending: Promise<never> | undefined;
    const watchers = this.running.get(key) ?? new Set();
    this.running.set(key, watchers.add(noticed));
    return {
      signal: AbortSignal.any([ctx.cancellationSignal, noticed.signal]),
      release: () => {
        watchers.delete(noticed);
        if (watchers.size === 0 && this.running.get(key) === watchers) this.running.delete(key);
      },
      cancelled: () => (ending ??= awaitCancellation(ctx)),
    };
  }

  async close(): Promise<void> {
    await (
      await this.listening
    )?.();
  }

  private heard(notice: ControlNotice): void {
    if (notice.type !== 'step-cancel') return;
    // A step that is not running here (another worker's, or one that already ended) has nothing to stop.
    const watchers = this.running.get(stepId(notice.namespace, notice.threadKey, notice.stepKey));
    for (const noticed of watchers ?? []) noticed.abort(new CancelledFailure('The workflow cancelled the step.'));
  }
}

function stepId(namespace: string, threadKey: string, stepKey: string): string {
  return JSON.stringify([namespace, threadKey, stepKey]);
}

/**
 * Waits for Temporal's cancellation of the current activity. The SDK hears it in a heartbeat response, throttled to
 * one a second; asking the server directly (the worker's client: RecordActivityTaskHeartbeat with this task's token)
 * learns it as soon as the workflow task that decided it completed, and then this reports the cancellation itself
 * (RespondActivityTaskCanceled, the same history event the SDK would write) and ends the activity without a result
 * (`CompleteAsyncError`: the SDK reports nothing more). Throwing a `CancelledFailure` instead would not do: the SDK
 * reports a cancellation only once it heard of it itself, else a failure, which the server does not retry once the
 * cancellation is recorded but hands to the workflow as an error, so the run would end with `error`.
 *
 * The notice may arrive before the deciding workflow task reached the server (the sink runs just before the worker
 * sends it), hence the short retries. A cancellation that is not recorded within the heartbeat timeout was never
 * decided for good: the attempt fails retryably and the step runs again.
 */
async function awaitCancellation(ctx: Context): Promise<never> {
  const withinMs = ctx.info.heartbeatTimeoutMs || 10_000;
  const deadline = performance.now() + withinMs;
  const { taskToken } = ctx.info;
  let client = workerClient(ctx);
  let recorded = false;
  for (let pauseMs = 5; ; pauseMs = Math.min(pauseMs * 2, 200)) {
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure('The step was cancelled.');
    ctx.heartbeat();
    try {
      await client?.activity.heartbeat(taskToken);
    } catch (err) {
      if (err instanceof ActivityCancelledError) {
        recorded = true;
        try {
          await client!.activity.reportCancellation(taskToken);
          throw new CompleteAsyncError();
        } catch (reportErr) {
          if (reportErr instanceof CompleteAsyncError) throw reportErr;
          // Recorded but not reported: the SDK's own heartbeats bring the cancellation within a throttle interval.
          client = null;
        }
      }
      // The server no longer knows this attempt (timed out, workflow closed): there is nothing left to report.
      if (err instanceof ActivityNotFoundError) throw new CompleteAsyncError();
      // Paused, reset or unreachable: the SDK's own heartbeats deliver what happens next.
    }
    if (!recorded && performance.now() >= deadline) {
      throw ApplicationFailure.retryable(
        `A cancel notice stopped the step, but the workflow's cancellation was not recorded within ${withinMs} ms: ` +
          'the attempt fails so the step runs again.',
        'StepCancelNotRecorded',
      );
    }
    await sleep(pauseMs, undefined, { signal: ctx.cancellationSignal }).catch(() => undefined);
  }
}

/** The worker's client, or null where there is none (a mock activity environment): then only heartbeats tell. */
function workerClient(ctx: Context): Client | null {
  try {
    return ctx.client;
  } catch {
    return null;
  }
}
