import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // One dev server for the run; files one after another so kill/restart tests own the machine's two cores.
    fileParallelism: false,
    testTimeout: 90_000,
    hookTimeout: 180_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
