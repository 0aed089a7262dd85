/**
 * Step windows travel as changes (protocol/step.ts `StepWindow`): the workflow's `StepWindows` and the worker's
 * `StepWindowCache` must together rebuild exactly the window the workflow planned, whatever order steps, retries,
 * workers and wider windows come in.
 */
import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../../protocol/messages';
import type { StepInput, StepWindow } from '../../../protocol/step';
import { StepWindows } from '../../../workflows/state/step-window';
import { StepWindowCache } from '../../../activities/step-window';
import { selectWindow } from '../../../workflows/state/conversation';

const message = (i: number): StoredMessage => ({
  id: `m${i}`,
  role: 'user',
  type: 'user',
  contents: [{ type: 'text', text: `message ${i} `.repeat(1 + (i % 5)) }],
  at: i,
});

const input = (threadKey: string, stepKey: string, window: StepWindow): StepInput => ({
  threadKey,
  resourceId: 'r',
  threadId: 't',
  runId: 'run',
  agentId: 'a',
  stepNumber: 1,
  stepKey,
  transient: [],
  preEvents: [],
  window,
});

const noQuery = () => Promise.reject(new Error('the cache should have had it'));

describe('StepWindows → StepWindowCache', () => {
  it('sends the first window whole and each later one as what changed, and the worker rebuilds every one', async () => {
    const windows = new StepWindows();
    const cache = new StepWindowCache();
    const stored: StoredMessage[] = [];
    let sentBytes = 0;
    for (let step = 1; step <= 300; step++) {
      stored.push(message(2 * step), message(2 * step + 1));
      // A window of 40 messages within 2 KB: it slides by count and by bytes.
      const planned = selectWindow(stored, { maxMessages: 40, maxBytes: 2_048 });
      const sent = windows.send(`${step}`, planned);
      if (step === 1) expect(sent).toHaveProperty('full');
      else {
        expect(sent).toHaveProperty('base', `${step - 1}`);
        sentBytes = JSON.stringify(sent).length;
        expect(sentBytes).toBeLessThan(400); // two new messages, whatever the length of the conversation
      }
      expect(await cache.resolve(input('k', `${step}`, sent), noQuery)).toEqual(planned);
      // Only the new messages are measured on a slide; the budget still counts the window's whole JSON.
      expect(cache.size.bytes).toBe(planned.reduce((sum, m) => sum + JSON.stringify(m).length, 0));
    }
    expect(cache.stats).toEqual({ hits: 299, misses: 0 });
  });

  it('sends a window whole when it is not the previous one slid forward (a wider window of another agent)', () => {
    const windows = new StepWindows();
    const stored = Array.from({ length: 20 }, (_, i) => message(i));
    windows.send('1', stored.slice(15));
    expect(windows.send('2', stored.slice(5))).toEqual({ full: stored.slice(5) });
    // Nothing of the previous window left, every message newer: a change that keeps none.
    expect(windows.send('3', stored.slice(5, 5))).toEqual({ base: '2', keep: 0, tail: [] });
    const later = [...stored, message(20), message(21)];
    windows.send('4', stored.slice(10, 12));
    expect(windows.send('5', later.slice(20))).toEqual({ base: '4', keep: 0, tail: later.slice(20) });
  });

  it('answers the window of the step in flight only', () => {
    const windows = new StepWindows();
    const stored = [message(1), message(2)];
    windows.send('7', stored);
    expect(windows.windowOf('7')).toEqual(stored);
    expect(windows.windowOf('6')).toBeNull();
  });

  it('asks the workflow on a miss: a cold worker, another worker ran the previous step, an evicted entry', async () => {
    const stored = Array.from({ length: 10 }, (_, i) => message(i));
    const asked: string[] = [];
    const query = (threadKey: string, stepKey: string) => {
      asked.push(`${threadKey}@${stepKey}`);
      return Promise.resolve(stored.slice(0, 8));
    };
    const cache = new StepWindowCache({ maxThreads: 1, maxBytes: 1_000_000 });
    const change: StepWindow = { base: '1', keep: 7, tail: [stored[7]] };
    expect(await cache.resolve(input('a', '2', change), query)).toEqual(stored.slice(0, 8));
    // A retried attempt of the same step on this worker uses what the first attempt rebuilt.
    expect(await cache.resolve(input('a', '2', change), query)).toEqual(stored.slice(0, 8));
    // One thread fits: b evicts a, so a's next step asks again.
    await cache.resolve(input('b', '1', { full: stored }), query);
    await cache.resolve(input('a', '3', { base: '2', keep: 8, tail: [] }), query);
    expect(asked).toEqual(['a@2', 'a@3']);
    expect(cache.size.threads).toBe(1);
  });

  it('keeps its windows within the byte bound and takes a pre-window input (whole messages) as it is', async () => {
    const big = Array.from({ length: 50 }, (_, i) => message(i));
    const bytes = JSON.stringify(big).length;
    const cache = new StepWindowCache({ maxThreads: 100, maxBytes: bytes * 2 });
    for (let t = 0; t < 5; t++) await cache.resolve(input(`t${t}`, '1', { full: big }), noQuery);
    expect(cache.size.threads).toBe(2);
    expect(cache.size.bytes).toBeLessThanOrEqual(bytes * 2);
    const legacy = { ...input('old', '1', { full: [] }), window: undefined, messages: big };
    expect(await cache.resolve(legacy, noQuery)).toBe(big);
  });
});
