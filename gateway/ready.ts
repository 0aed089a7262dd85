/**
 * Readiness (`GET /ready`): whether this gateway can serve thread requests now. It asks Temporal to describe the
 * gateway's namespace and, with a Redis bus, Redis to answer a PING, each within a short deadline and both at once.
 * Liveness is `/health`, which asks nothing of anyone: a gateway whose Redis is down is alive, not ready.
 */
import type { ThreadlineClient } from '../client/connect';

export interface ReadinessCheck {
  name: 'temporal' | 'redis';
  ok: boolean;
  durationMs: number;
  /** Why it failed. */
  error?: string;
}

export interface Readiness {
  ready: boolean;
  checks: ReadinessCheck[];
}

/** Each check's deadline: a probe that waits longer than its caller's timeout tells nothing. */
export const READINESS_TIMEOUT_MS = 2_000;

export async function checkReadiness(client: ThreadlineClient, timeoutMs = READINESS_TIMEOUT_MS): Promise<Readiness> {
  const { temporal, bus } = client;
  const checks = [
    timed('temporal', timeoutMs, () =>
      temporal.connection.withDeadline(Date.now() + timeoutMs, () =>
        temporal.workflowService.describeNamespace({ namespace: temporal.options.namespace }),
      ),
    ),
  ];
  if (bus.ping) checks.push(timed('redis', timeoutMs, () => bus.ping!()));
  const results = await Promise.all(checks);
  return { ready: results.every((check) => check.ok), checks: results };
}

async function timed(
  name: ReadinessCheck['name'],
  timeoutMs: number,
  check: () => Promise<unknown>,
): Promise<ReadinessCheck> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([check(), deadline]);
    return { name, ok: true, durationMs: elapsed(started) };
  } catch (err) {
    return { name, ok: false, durationMs: elapsed(started), error: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

const elapsed = (started: number) => Math.round(performance.now() - started);
