/**
 * The worker's step-window cache (activities/step-window.ts) on a sliding window: CPU per step as the conversation's
 * window grows. Each step's input carries two new messages and what to keep of the window before; the cache rebuilds
 * the window and keeps it within its byte budget. This runs on the step's path before its model request.
 *
 *   npx tsx bench/window-cache.ts
 */
import { StepWindowCache } from '../activities/step-window';
import type { StoredMessage } from '../protocol/messages';
import type { StepInput, StepWindow } from '../protocol/step';

const STEPS = 200;
const ROUNDS = 7;

const message = (i: number): StoredMessage => ({
  id: `m${i}`,
  role: 'user',
  type: 'user',
  contents: [{ type: 'text', text: `message ${i} `.repeat(20) }],
  at: i,
});

/** A step of one thread; only its key and its window change from step to step. */
const step: Omit<StepInput, 'stepKey' | 'window'> = {
  threadKey: 'bench',
  resourceId: 'r',
  threadId: 't',
  runId: 'run',
  agentId: 'a',
  stepNumber: 1,
  transient: [],
  preEvents: [],
};
const input = (stepKey: string, window: StepWindow): StepInput => ({ ...step, stepKey, window });

const miss = () => Promise.reject(new Error('every step should hit the cache'));

process.stdout.write(
  `µs per step, median of ${ROUNDS} rounds of ${STEPS} steps\n\n| window | µs per step |\n| ---: | ---: |\n`,
);
for (const size of [50, 500, 2_000]) {
  const perStep: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cache = new StepWindowCache();
    await cache.resolve(input('0', { full: Array.from({ length: size }, (_, i) => message(i)) }), miss);
    const t0 = performance.now();
    for (let step = 1; step <= STEPS; step++) {
      const tail = [message(size + 2 * step), message(size + 2 * step + 1)];
      await cache.resolve(input(`${step}`, { base: `${step - 1}`, keep: size - 2, tail }), miss);
    }
    perStep.push(((performance.now() - t0) / STEPS) * 1000);
  }
  perStep.sort((a, b) => a - b);
  process.stdout.write(`| ${size} messages | ${perStep[ROUNDS >> 1].toFixed(1)} |\n`);
}
