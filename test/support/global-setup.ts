/**
 * One real Temporal dev server for the whole test run (built from the Go module proxy on first use), and one
 * workflow bundle that every test worker reuses. `THREADLINE_TEST_TEMPORAL=production` runs the production
 * Temporal server on PostgreSQL instead (test/support/production-temporal.ts); `TEMPORAL_ADDRESS` uses a running one.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../worker/dev-server';
import { locateTemporalCli } from '../../worker/temporal-cli';
import { threadBundleOptions } from '../../worker/index';
import { registerSearchAttributes } from '../../client/search-attributes';
import { locateTemporalServer } from '../../worker/temporal-server';
import { startProductionTemporal, type ProductionTemporal } from './production-temporal';

let server: DevServer | ProductionTemporal | null = null;

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
    temporalCliPath: string;
  }
}

export async function setup(project: TestProject): Promise<void> {
  const cliPath = await locateTemporalCli({ log: (line) => console.log(line) });
  let address = process.env.TEMPORAL_ADDRESS;
  const temporal = process.env.THREADLINE_TEST_TEMPORAL || 'dev';
  if (temporal !== 'dev' && temporal !== 'production') {
    throw new Error(`THREADLINE_TEST_TEMPORAL is "${temporal}": use "dev" (the default) or "production".`);
  }
  if (!address && temporal === 'production') {
    const binaries = await locateTemporalServer({ log: (line) => console.log(line) });
    server = await startProductionTemporal({ binaries, cliPath, log: (line) => console.warn(line) });
    address = server.address;
  } else if (!address) {
    // It registers Threadline's search attributes itself.
    server = await startDevServer({ cliPath, port: 0, headless: true });
    address = server.address;
  } else {
    const connection = await Connection.connect({ address });
    try {
      await registerSearchAttributes(connection, 'default');
    } finally {
      await connection.close();
    }
  }
  const { code } = await bundleWorkflowCode({ ...threadBundleOptions, logger: quietLogger });
  const dir = await mkdtemp(join(tmpdir(), 'threadline-bundle-'));
  const bundlePath = join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, code);
  project.provide('temporalAddress', address);
  project.provide('workflowBundlePath', bundlePath);
  project.provide('temporalCliPath', cliPath);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };
