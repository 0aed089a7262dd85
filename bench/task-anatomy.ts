/**
 * What one workflow task costs the worker, counted: for each activation of a Threadline thread and of the
 * bare-Temporal floor's workflow (bench/floor/), the rounds of condition checks the SDK runs and the promises the
 * workflow code creates. Each round is a call into the workflow's vm context, and the SDK makes every such call with
 * a timeout, for which Node starts (and joins) a watchdog thread; each promise made in workflow code runs the SDK's
 * promise hook, which takes a stack and maps it through the bundle's source map. Those two counts are what a task
 * costs beyond the SDK's own fixed work (docs/performance.md, "A workflow task's cost").
 *
 * Workflows run in this thread (`debugMode`), so the SDK's classes can be observed from here; the counts are the same
 * as on a worker thread, the times are not, and none are printed. The last table times a call into a vm context with
 * and without a timeout, in this process.
 *
 *   npx tsx bench/task-anatomy.ts [--rounds=20]
 */
import { randomUUID } from 'node:crypto';
import { arg } from './args';
import { performance } from 'node:perf_hooks';
import { promiseHooks } from 'node:v8';
import vm from 'node:vm';
import { BaseVMWorkflow } from '@temporalio/worker/lib/workflow/vm-shared';
import { startBenchEnv, watchTurn } from './env';
import { settled } from './floor/latency';
import { settledHistory } from './history';

const rounds = Number(arg('rounds', '20'));

interface Activation {
  workflow: string;
  jobs: string;
  rounds: number;
  promises: number;
}

/** The activation being counted (activations run one at a time up to their conclusion; the SDK awaits only after). */
let current: Activation | null = null;
const seen: Activation[] = [];
let counting = false;

type Activate = (this: BaseVMWorkflow, activation: { jobs?: object[] | null }) => Promise<unknown>;
interface Observed {
  activate: Activate;
  tryUnblockConditionsAndMicrotasks(this: BaseVMWorkflow): void;
}
const proto = BaseVMWorkflow.prototype as unknown as Observed;
const activate = proto.activate;
proto.activate = function (activation) {
  const jobs = (activation.jobs ?? [])
    .map((job) => Object.keys(job).find((k) => (job as Record<string, unknown>)[k] != null) ?? '?')
    .join('+');
  const workflow = (this as unknown as { activator: { info: { workflowType: string } } }).activator.info.workflowType;
  const entry: Activation = { workflow, jobs, rounds: 0, promises: 0 };
  current = entry;
  const done = activate.call(this, activation);
  // Everything up to the conclusion ran synchronously in the call above.
  current = null;
  if (counting && !jobs.includes('queryWorkflow')) seen.push(entry);
  return done;
};
// The SDK's loop: call into the context to unblock conditions until a round unblocks none.
proto.tryUnblockConditionsAndMicrotasks = function () {
  const module = (this as unknown as { workflowModule: { tryUnblockConditions(): number } }).workflowModule;
  for (;;) {
    if (current) current.rounds += 1;
    if (module.tryUnblockConditions() === 0) break;
  }
};
// A promise made in the workflow's context has that context's `Promise` as its constructor.
promiseHooks.onInit((promise) => {
  if (current && promise.constructor !== Promise) current.promises += 1;
});

const env = await startBenchEnv({ worker: { debugMode: true } });
try {
  for (let i = 0; i < rounds + 2; i++) {
    counting = i >= 2;
    await threadlineTurns();
    await floorTurns();
  }
} finally {
  await env.close();
}

/** A new thread's first turn, then its next turn once idle: the same turns as bench (a). */
async function threadlineTurns(): Promise<void> {
  const target = { resourceId: 'bench', threadId: `anatomy-${randomUUID()}` };
  for (const text of ['first', 'second']) {
    const sub = env.agent.subscribeToThread(target);
    const turn = watchTurn(sub.stream);
    await env.agent.sendMessage(text, target);
    await turn;
    sub.unsubscribe();
    await settledHistory(env, target);
  }
}

/** The floor's new workflow (update-with-start) and its idle wake (update), each running one activity. */
async function floorTurns(): Promise<void> {
  const id = `anatomy-floor-${randomUUID()}`;
  for (const send of [
    (input: { marker: string; activities: number }) => env.floor.updateWithStart(id, input),
    (input: { marker: string; activities: number }) => env.floor.update(id, input),
  ]) {
    const marker = randomUUID();
    const ran = env.floor.probe.when(marker, 0, 'started');
    await send({ marker, activities: 1 });
    await ran;
    await settled(env.floor, id);
    env.floor.probe.forget(marker, 1);
  }
}

const groups = new Map<string, Activation[]>();
for (const a of seen) {
  const key = `${a.workflow}|${a.jobs}|${a.rounds}|${a.promises}`;
  groups.set(key, [...(groups.get(key) ?? []), a]);
}
console.log(
  `${rounds} rounds: a new thread and its next turn (Threadline), a new workflow and its next input (floor)\n`,
);
console.log('| workflow | activation jobs | activations | rounds of condition checks | promises |');
console.log('| --- | --- | ---: | ---: | ---: |');
for (const [key, list] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
  const [workflow, jobs, r, p] = key.split('|');
  console.log(`| ${workflow} | ${jobs} | ${list.length} | ${r} | ${p} |`);
}

// One call into a vm context, as the SDK makes it (with a timeout) and without.
const context = vm.createContext({ n: 0 });
const script = new vm.Script('n += 1');
const perCall = (options: vm.RunningScriptOptions): number => {
  const calls = 5_000;
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) script.runInContext(context, options);
  return ((performance.now() - t0) / calls) * 1000;
};
perCall({});
perCall({ timeout: 5_000 });
console.log('\n| call into a vm context | µs per call |\n| --- | ---: |');
console.log(`| without a timeout | ${perCall({}).toFixed(1)} |`);
console.log(`| with a timeout (the SDK's \`isolateExecutionTimeout\`) | ${perCall({ timeout: 5_000 }).toFixed(1)} |`);
process.exit(0);
