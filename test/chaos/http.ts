/**
 * Requests as a real integration sends them to a pair of gateways behind no load balancer: alternate between them,
 * and when the outcome is unknown (connection refused or reset, a timeout, a 5xx, a 429) send the same request again
 * (same input id, same Idempotency-Key) to the next gateway, until a deadline.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Rng } from './random';

/** One attempt waits this long for an answer before it counts as unknown. */
const ATTEMPT_TIMEOUT_MS = 60_000;

export type Outcome<T> =
  | { kind: 'ok'; body: T; attempts: number; gateway: number }
  | { kind: 'refused'; status: number; message: string; attempts: number }
  | { kind: 'unknown'; error: string; attempts: number };

export interface Gateways {
  urls: readonly string[];
  /** Spreads first attempts over the gateways. */
  next(): number;
}

export function gatewayRing(urls: readonly string[], rng: Rng): Gateways {
  return { urls, next: () => rng.int(0, urls.length - 1) };
}

export interface SendOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
  /** Stop retrying after this time (ms since the epoch); the outcome is then `unknown`. */
  deadline: number;
  /** Send at most once (aborts, which are not idempotent): a failed attempt is `unknown`. */
  once?: boolean;
  /** Called before every attempt after the first, for the figures. */
  onRetry?: () => void;
}

export async function send<T>(gateways: Gateways, path: string, opts: SendOptions): Promise<Outcome<T>> {
  let gateway = gateways.next();
  let lastError = '';
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) opts.onRetry?.();
    const url = `${gateways.urls[gateway]}${path}`;
    let wait = Math.min(5_000, 200 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random() / 2);
    try {
      const response = await fetch(url, {
        method: opts.method ?? 'POST',
        headers: { ...(opts.body !== undefined && { 'content-type': 'application/json' }), ...opts.headers },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      const text = await response.text();
      if (response.ok) return { kind: 'ok', body: JSON.parse(text) as T, attempts: attempt, gateway };
      const message = errorMessage(text);
      if (response.status < 500 && response.status !== 429 && response.status !== 408) {
        return { kind: 'refused', status: response.status, message, attempts: attempt };
      }
      lastError = `${response.status} ${message}`;
      const retryAfter = Number(response.headers.get('retry-after'));
      if (Number.isFinite(retryAfter) && retryAfter > 0) wait = Math.min(5_000, retryAfter * 1_000);
    } catch (err) {
      lastError = describe(err);
    }
    if (opts.once || Date.now() + wait > opts.deadline) return { kind: 'unknown', error: lastError, attempts: attempt };
    await sleep(wait);
    gateway = (gateway + 1) % gateways.urls.length;
  }
}

function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string; type?: string } };
    return `${body.error?.type ?? ''}: ${body.error?.message ?? text}`.slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}

function describe(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return `${e?.name ?? 'Error'}: ${e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err)}`;
}
