/**
 * What a new workflow context costs: Temporal evaluates every module of the workflow bundle once per workflow (each
 * new thread, each thread evicted from the worker's cache and replayed), so module top-level code is paid per thread.
 *
 * - `replay`: one committed history replayed as many different workflows through one replay worker; each sample is the
 *   interval between two replay results (one workflow: a fresh context, its modules evaluated, the history applied).
 *   The current bundle and the pre-validate.ts bundle (bench/workflows-with-zod.ts: zod and the schemas loaded too)
 *   are measured in alternating rounds of the same run.
 * - `moduleEvaluation`: a validation module alone (esbuild bundle) evaluated in fresh `vm` contexts.
 *
 * `npx tsx bench/workflow-context.ts [--quick]` prints JSON; `benchWorkflowContext()` is the same for the bench runner.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type LogEntry } from '@temporalio/worker';
import { build } from 'esbuild';
import { workflowsPath } from '../worker/index';
import { replaySinks } from '../worker/replay-sinks';
import { summarize, type Summary } from './stats';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const historyPath = here('../test/replay/histories/thread-notifications.json');

/** Workflow entries compared by replay. */
const bundles = {
  current: workflowsPath,
  withZod: here('./workflows-with-zod.ts'),
} as const;
type BundleName = keyof typeof bundles;

/** Validation modules compared by evaluation alone (a missing one is skipped). */
const modules = {
  zodSchemas: here('../protocol/schemas.ts'),
  validator: here('../protocol/validate.ts'),
} as const;

/** A string only zod's code contains: its base schema class name. */
const ZOD_MARKER = '"$ZodType"';

export interface WorkflowContextOptions {
  /** Alternating rounds; each round replays `workflowsPerRound` workflows per bundle after `warmupPerRound`. */
  rounds: number;
  workflowsPerRound: number;
  warmupPerRound: number;
  /** Fresh `vm` contexts per validation module (after `evaluationWarmup`). */
  evaluations: number;
  evaluationWarmup: number;
}

export interface BundleFigures {
  entry: string;
  bytes: number;
  containsZod: boolean;
  /** Milliseconds per replayed workflow. */
  perWorkflow: Summary;
}

export interface ModuleFigures {
  path: string;
  bytes: number;
  /** Milliseconds per evaluation in a fresh context. */
  evaluation: Summary;
}

export interface WorkflowContextResult {
  history: string;
  options: WorkflowContextOptions;
  replay: Record<BundleName, BundleFigures>;
  /** Current minus withZod, and current / withZod, of the replay medians and p99s. */
  replayDifference: { p50Ms: number; p50Ratio: number; p99Ms: number; p99Ratio: number };
  moduleEvaluation: Partial<Record<keyof typeof modules, ModuleFigures>>;
}

export const quickWorkflowContextOptions: WorkflowContextOptions = {
  rounds: 2,
  workflowsPerRound: 40,
  warmupPerRound: 5,
  evaluations: 100,
  evaluationWarmup: 10,
};

export const fullWorkflowContextOptions: WorkflowContextOptions = {
  rounds: 4,
  workflowsPerRound: 100,
  warmupPerRound: 10,
  evaluations: 400,
  evaluationWarmup: 20,
};

export async function benchWorkflowContext(
  options: WorkflowContextOptions = fullWorkflowContextOptions,
  progress: (line: string) => void = () => undefined,
): Promise<WorkflowContextResult> {
  const history = historyFromJSON(JSON.parse(await readFile(historyPath, 'utf8')));
  const code = {} as Record<BundleName, string>;
  for (const name of Object.keys(bundles) as BundleName[]) {
    progress(`bundling ${name}…`);
    ({ code: code[name] } = await bundleWorkflowCode({ workflowsPath: bundles[name], logger: quietLogger }));
  }

  const samples: Record<BundleName, number[]> = { current: [], withZod: [] };
  for (let round = 0; round < options.rounds; round++) {
    // Alternate which bundle goes first, so drift of a noisy machine spreads over both.
    const order: BundleName[] = round % 2 === 0 ? ['withZod', 'current'] : ['current', 'withZod'];
    for (const name of order) {
      progress(`round ${round + 1}/${options.rounds}: replaying ${name}…`);
      const times = await replayMany(code[name], history, options.warmupPerRound + options.workflowsPerRound);
      samples[name].push(...times.slice(options.warmupPerRound));
    }
  }
  const replay = Object.fromEntries(
    (Object.keys(bundles) as BundleName[]).map((name) => [
      name,
      {
        entry: bundles[name],
        bytes: code[name].length,
        containsZod: code[name].includes(ZOD_MARKER),
        perWorkflow: summarize(samples[name]),
      },
    ]),
  ) as Record<BundleName, BundleFigures>;

  progress('evaluating validation modules in fresh vm contexts…');
  const moduleEvaluation = await evaluateModules(options);

  const round = (x: number) => Math.round(x * 100) / 100;
  const [now, before] = [replay.current.perWorkflow, replay.withZod.perWorkflow];
  return {
    history: historyPath,
    options,
    replay,
    replayDifference: {
      p50Ms: round(now.p50 - before.p50),
      p50Ratio: round(now.p50 / before.p50),
      p99Ms: round(now.p99 - before.p99),
      p99Ratio: round(now.p99 / before.p99),
    },
    moduleEvaluation,
  };
}

/** Replays `history` as `count` workflows w0…wN through one replay worker; milliseconds between results. */
async function replayMany(code: string, history: ReturnType<typeof historyFromJSON>, count: number): Promise<number[]> {
  async function* histories() {
    for (let i = 0; i < count; i++) yield { workflowId: `w${i}`, history };
  }
  const times: number[] = [];
  let last = performance.now();
  for await (const result of Worker.runReplayHistories({ workflowBundle: { code }, sinks: replaySinks }, histories())) {
    if (result.error) throw result.error;
    const now = performance.now();
    times.push(now - last);
    last = now;
  }
  return times;
}

/** Each validation module bundled alone, evaluated in fresh contexts, modules interleaved sample by sample. */
async function evaluateModules(
  options: WorkflowContextOptions,
): Promise<Partial<Record<keyof typeof modules, ModuleFigures>>> {
  const present = (Object.keys(modules) as (keyof typeof modules)[]).filter((name) => existsSync(modules[name]));
  const scripts = await Promise.all(
    present.map(async (name) => {
      const { outputFiles } = await build({
        entryPoints: [modules[name]],
        bundle: true,
        write: false,
        format: 'iife',
        globalName: 'validation',
        platform: 'neutral',
        mainFields: ['module', 'main'],
        logLevel: 'silent',
      });
      const text = outputFiles[0].text;
      return { name, bytes: text.length, script: new vm.Script(text, { filename: `${name}.js` }) };
    }),
  );
  const times = new Map(present.map((name) => [name, [] as number[]]));
  for (let i = 0; i < options.evaluationWarmup + options.evaluations; i++) {
    for (const { name, script } of scripts) {
      const context = vm.createContext({});
      const start = performance.now();
      script.runInContext(context);
      const elapsed = performance.now() - start;
      if (i >= options.evaluationWarmup) times.get(name)!.push(elapsed);
    }
  }
  return Object.fromEntries(
    scripts.map(({ name, bytes }) => [name, { path: modules[name], bytes, evaluation: summarize(times.get(name)!) }]),
  );
}

const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error };

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // Warnings and errors only, on stderr: stdout is the JSON.
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry: LogEntry) => process.stderr.write(`${entry.level} ${entry.message}\n`)),
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
  });
  const quick = process.argv.includes('--quick');
  const result = await benchWorkflowContext(quick ? quickWorkflowContextOptions : fullWorkflowContextOptions, (line) =>
    process.stderr.write(`workflow-context: ${line}\n`),
  );
  process.stdout.write(`${JSON.stringify({ quick, ...result }, null, 2)}\n`);
}
