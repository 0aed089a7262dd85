/**
 * Percentiles for latency samples (nearest-rank: the p-th percentile is a value that was actually measured).
 */

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of ascending `sorted`, `p` in (0, 100]. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    min: round(sorted[0] ?? NaN),
    max: round(sorted[sorted.length - 1] ?? NaN),
    mean: round(sorted.reduce((sum, x) => sum + x, 0) / sorted.length),
  };
}

/** One summary per named field of the samples, e.g. the segments of a latency. */
export function summarizeEach<N extends string>(names: readonly N[], samples: Record<N, number>[]): Record<N, Summary> {
  return Object.fromEntries(names.map((name) => [name, summarize(samples.map((s) => s[name]))])) as Record<N, Summary>;
}
