import { defineConfig } from 'vitest/config';

/**
 * Two speeds. `unit`: pure tests in parallel, no server (`npm run test:unit`, seconds). `integration`: everything
 * that needs the Temporal dev server, Redis, HTTP gateways or child processes (`npm run test:integration`). `npm test`
 * runs both, unit first, and the summary reporter prints one line for the whole run.
 */
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 20_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**'],
          // One dev server and one workflow bundle for the project, started only when one of its files runs.
          globalSetup: ['test/support/global-setup.ts'],
          // Every test takes the model replies it scripts (a leftover would answer the next test's run).
          setupFiles: ['test/support/scripted-replies.ts'],
          // Files one after another, after the unit tests, so kill/restart tests own the machine's two cores.
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          testTimeout: 90_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
