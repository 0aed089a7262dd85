/**
 * Prints one plain closing line, `Threadline: N passed, N failed, N skipped`, that any CI can read.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      // A file that failed to load (or whose hooks failed) ran none of its tests: it counts as a failure.
      if (module.state() === 'failed' && ![...module.children.allTests()].some((t) => t.result().state === 'failed')) {
        counts.failed++;
      }
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
    }
    counts.failed += unhandledErrors.length;
    console.log(`\nThreadline: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  }
}
