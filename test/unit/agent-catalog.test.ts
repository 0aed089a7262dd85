/**
 * The agent catalog one process shares between its client (profiles for new threads) and its gateway (listing and
 * checking agents): the bus is asked at most once per max age, at once for an unknown id, and a failing bus costs a
 * profile lookup nothing but the profile.
 */
import { describe, expect, it } from 'vitest';
import { AgentCatalog } from '../../client/agent-catalog';
import type { AgentSummary } from '../../protocol/api';

const summary = (id: string, instructions = `be ${id}`): AgentSummary => ({
  id,
  name: id,
  description: '',
  instructions,
  modelId: 'test-model',
  tools: {},
  profile: { agentId: id, ownedLanes: [instructions] },
});

function countingSource(answers: (() => readonly AgentSummary[])[]) {
  let calls = 0;
  const source = async () => {
    const answer = answers[Math.min(calls, answers.length - 1)]!;
    calls += 1;
    return answer();
  };
  return { source, calls: () => calls };
}

describe('AgentCatalog', () => {
  it('asks the source once for concurrent lookups and not again while fresh', async () => {
    const { source, calls } = countingSource([() => [summary('a')]]);
    const catalog = new AgentCatalog(source, 60_000);
    const [list, has, profile] = await Promise.all([catalog.list(), catalog.has('a'), catalog.profile('a')]);
    expect(list.map((a) => a.id)).toEqual(['a']);
    expect(has).toBe(true);
    expect(profile).toEqual({ agentId: 'a', ownedLanes: ['be a'] });
    expect(await catalog.list()).toBe(list);
    expect(calls()).toBe(1);
  });

  it('asks again at once for an id it does not know, finding an agent announced since', async () => {
    const { source, calls } = countingSource([() => [summary('a')], () => [summary('a'), summary('b')]]);
    const catalog = new AgentCatalog(source, 60_000);
    expect(await catalog.has('a')).toBe(true);
    expect(await catalog.has('b')).toBe(true);
    expect(await catalog.has('c')).toBe(false);
    expect(calls()).toBe(3);
  });

  it('refreshes after its max age', async () => {
    const { source, calls } = countingSource([() => [summary('a', 'old')], () => [summary('a', 'new')]]);
    const catalog = new AgentCatalog(source, 0);
    expect((await catalog.list())[0]!.instructions).toBe('old');
    expect((await catalog.list())[0]!.instructions).toBe('new');
    expect(calls()).toBe(2);
  });

  it('answers no profile when the source fails, and lists reject with its error', async () => {
    const catalog = new AgentCatalog(() => Promise.reject(new Error('bus down')), 60_000);
    expect(await catalog.profile('a')).toBeUndefined();
    await expect(catalog.list()).rejects.toThrow('bus down');
  });

  it('does not ask a failing source again on every profile lookup', async () => {
    let calls = 0;
    const catalog = new AgentCatalog(() => {
      calls += 1;
      return Promise.reject(new Error('bus down'));
    }, 60_000);
    for (let i = 0; i < 5; i++) expect(await catalog.profile('a')).toBeUndefined();
    expect(calls).toBe(1);
  });

  it('serves a fixed list without a source', async () => {
    const catalog = AgentCatalog.of([summary('a')]);
    expect(await catalog.has('a')).toBe(true);
    expect(await catalog.has('b')).toBe(false);
    expect(await catalog.profile('a')).toEqual({ agentId: 'a', ownedLanes: ['be a'] });
  });
});
