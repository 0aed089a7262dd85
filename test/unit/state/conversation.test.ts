import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../../protocol/messages';
import { resolveThreadConfig } from '../../../protocol/thread-config';
import { emptySnapshot, selectWindow, toInputMessage } from '../../../workflows/state';
import { Conversation } from '../../../workflows/state/conversation';
import { fakeClock, input } from './support';

const user = (id: string, contents = id): StoredMessage => ({ id, role: 'user', type: 'user', contents, at: 0 });
const assistant = (id: string): StoredMessage => ({
  id,
  role: 'assistant',
  runId: 'r',
  stepNumber: 1,
  content: [],
  at: 0,
});
const tool = (id: string): StoredMessage => ({ id, role: 'tool', runId: 'r', content: [], at: 0 });
const ids = (messages: readonly StoredMessage[]) => messages.map((m) => m.id);

describe('selectWindow', () => {
  it('keeps everything that fits', () => {
    expect(ids(selectWindow([user('a'), user('b')], { maxMessages: 10, maxBytes: 1e9 }))).toEqual(['a', 'b']);
    expect(selectWindow([], { maxMessages: 10, maxBytes: 1e9 })).toEqual([]);
  });

  it('drops the oldest messages beyond the byte budget, counting from the newest', () => {
    const all = [user('a', 'x'.repeat(200)), user('b', 'y'.repeat(200)), user('c', 'z'.repeat(200))];
    const one = JSON.stringify(all[0]).length;
    expect(ids(selectWindow(all, { maxMessages: 10, maxBytes: 2 * one + 10 }))).toEqual(['b', 'c']);
  });

  it('skips tool results left at the start by the byte budget too', () => {
    const all = [user('u', 'x'.repeat(500)), assistant('a'), tool('t'), user('v')];
    const tail = JSON.stringify(all.slice(2)).length;
    expect(ids(selectWindow(all, { maxMessages: 10, maxBytes: tail }))).toEqual(['v']);
  });

  it('measures each message once and chooses as a fresh measure would, window after window', () => {
    const all: StoredMessage[] = [];
    for (let i = 0; i < 200; i++) {
      all.push(user(`m${i}`, 'w'.repeat((i * 37) % 300)));
      for (const window of [
        { maxMessages: 40, maxBytes: 4_000 },
        { maxMessages: 100, maxBytes: 512 * 1024 },
      ]) {
        // Copies are new objects, measured afresh: the sizes kept for the originals must give the same window.
        expect(ids(selectWindow(all, window))).toEqual(ids(selectWindow(structuredClone(all), window)));
      }
    }
  });
});

describe('toInputMessage', () => {
  it('stores the input as a user turn with only the optional fields it has', () => {
    expect(toInputMessage({ input: input('m1'), acceptedAt: 7 }, undefined)).toEqual({
      id: 'm1',
      role: 'user',
      type: 'user',
      contents: 'm1',
      at: 7,
    });
    const full = input('m2', {
      type: 'reactive',
      tagName: 'ci',
      attributes: { a: 1 },
      metadata: { m: true },
      providerOptions: { openai: { x: 1 } },
    });
    expect(toInputMessage({ input: full, acceptedAt: 8 }, 'run-1')).toEqual({
      id: 'm2',
      role: 'user',
      type: 'reactive',
      tagName: 'ci',
      contents: 'm2',
      attributes: { a: 1 },
      metadata: { m: true },
      providerOptions: { openai: { x: 1 } },
      runId: 'run-1',
      at: 8,
    });
  });
});

describe('Conversation', () => {
  const conversation = (maxStoredMessages: number) =>
    new Conversation(emptySnapshot('r', 't'), resolveThreadConfig({ maxStoredMessages }), fakeClock());

  it('keeps at most maxStoredMessages, dropping the oldest', () => {
    const c = conversation(2);
    for (const id of ['a', 'b', 'c']) c.append(user(id));
    expect(ids(c.messages)).toEqual(['b', 'c']);
  });

  it('keeps the stored messages within maxStoredBytes, dropping the oldest, never the newest', () => {
    const text = (n: number) => 'x'.repeat(n);
    const sized = (id: string, n: number) => ({ ...user(id), contents: text(n) });
    const one = JSON.stringify(sized('a', 1_000)).length;
    const c = new Conversation(emptySnapshot('r', 't'), resolveThreadConfig({ maxStoredBytes: one * 3 }), fakeClock());
    for (const id of ['a', 'b', 'c', 'd']) c.append(sized(id, 1_000));
    expect(ids(c.messages)).toEqual(['b', 'c', 'd']);
    // A message bigger than the whole budget stays alone: the newest always stays.
    c.append(sized('e', 5_000));
    expect(ids(c.messages)).toEqual(['e']);
    c.append(sized('f', 10));
    expect(ids(c.messages)).toEqual(['f']);
    // A conversation restored from a snapshot (continue-as-new) counts what it carries.
    const snapshot = { ...emptySnapshot('r', 't'), messages: [sized('a', 1_000), sized('b', 1_000)] };
    const restored = new Conversation(snapshot, resolveThreadConfig({ maxStoredBytes: one * 2 }), fakeClock());
    restored.append(sized('c', 1_000));
    expect(ids(restored.messages)).toEqual(['b', 'c']);
  });

  it("stores a step's tool results as one tool message, and nothing when there are none", () => {
    const c = conversation(10);
    c.recordToolResults({ stepKey: '3', runId: 'run-1' }, []);
    expect(c.messages).toEqual([]);
    const result = { type: 'tool-result' as const, toolCallId: 'c1', toolName: 'x', output: 1 };
    c.recordToolResults({ stepKey: '3', runId: 'run-1' }, [result]);
    expect(c.messages).toEqual([{ id: 't:3', role: 'tool', runId: 'run-1', content: [result], at: 1_000 }]);
  });
});
