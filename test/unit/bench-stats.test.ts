/**
 * The bench's statistics (bench/stats.ts): nearest-rank percentiles, and the least-squares line that target 9 reads
 * as a worker's RSS per evicted thread.
 */
import { describe, expect, it } from 'vitest';
import { linearFit, percentile, summarize } from '../../bench/stats';

describe('percentiles', () => {
  it('answers a value that was measured (nearest rank)', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(sorted, 50)).toBe(5);
    expect(percentile(sorted, 99)).toBe(10);
    expect(summarize([3, 1, 2])).toMatchObject({ n: 3, p50: 2, min: 1, max: 3, mean: 2 });
  });
});

describe('linearFit', () => {
  it('finds the slope of points on a line, with no error', () => {
    const fit = linearFit(
      [1_000, 4_000, 7_000, 10_000],
      [5e8, 5e8 + 3_000 * 800, 5e8 + 6_000 * 800, 5e8 + 9_000 * 800],
    );
    expect(fit.slope).toBeCloseTo(800, 9);
    expect(fit.standardError).toBeCloseTo(0, 6);
  });

  it('spreads one noisy measurement over every point, and says how far to trust the slope', () => {
    // A flat series with one measurement 20 MiB high: one stage's difference would read ±6,990 bytes per thread.
    const xs = [1_000, 4_000, 7_000, 10_000];
    const ys = [400e6, 400e6 + 20 * 2 ** 20, 400e6, 400e6];
    const fit = linearFit(xs, ys);
    expect(Math.abs(fit.slope)).toBeLessThan(1_500);
    expect(fit.standardError).toBeGreaterThan(Math.abs(fit.slope));
  });

  it('has no standard error from two points, and refuses fewer or a vertical line', () => {
    expect(linearFit([0, 10], [0, 5])).toEqual({ slope: 0.5, standardError: NaN });
    expect(() => linearFit([1], [1])).toThrow(/two points/);
    expect(() => linearFit([1, 2], [1])).toThrow(/as many xs as ys/);
    expect(() => linearFit([3, 3, 3], [1, 2, 3])).toThrow(/two different xs/);
  });
});
