/**
 * Percentiles for latency samples (nearest-rank: the p-th percentile is a value that was actually measured), and a
 * least-squares line for a figure that should grow linearly (or not at all) with a count.
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

/** A least-squares line through (xs, ys): its slope and the slope's standard error (needs 3 points or more for one). */
export interface LinearFit {
  slope: number;
  standardError: number;
}

export function linearFit(xs: readonly number[], ys: readonly number[]): LinearFit {
  const n = xs.length;
  if (n !== ys.length || n < 2)
    throw new Error(`A line needs two points or more, as many xs as ys (${n}, ${ys.length}).`);
  const mean = (v: readonly number[]) => v.reduce((a, b) => a + b, 0) / n;
  const [mx, my] = [mean(xs), mean(ys)];
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  if (sxx === 0) throw new Error('A line needs two different xs.');
  const slope = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / sxx;
  if (n === 2) return { slope, standardError: NaN };
  const residuals = xs.reduce((a, x, i) => a + (ys[i]! - my - slope * (x - mx)) ** 2, 0);
  return { slope, standardError: Math.sqrt(residuals / (n - 2) / sxx) };
}

/** `p50 / p90 / p99` of `samples`, one decimal each: a cell of the A/B drivers' tables. */
export function percentilesCell(samples: readonly number[]): string {
  const s = summarize(samples);
  return `${s.p50.toFixed(1)} / ${s.p90.toFixed(1)} / ${s.p99.toFixed(1)}`;
}

/**
 * An A/B driver's rounds: `warmup + rounds` times, each side once, the side that goes first alternating, so that
 * neither has the machine's better moments to itself. `counted` is false during the warm-up.
 */
export async function interleavedRounds<S>(
  sides: readonly S[],
  { rounds, warmup }: { rounds: number; warmup: number },
  round: (side: S, counted: boolean) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < warmup + rounds; i++) {
    for (const side of i % 2 === 0 ? sides : [...sides].reverse()) await round(side, i >= warmup);
  }
}
