/**
 * Inspections and forks replay a thread's history on a replay worker of their own (worker/inspect.ts). Each replay
 * worker parses its bundle's source map into the `source-map` package's WebAssembly memory and the SDK never frees
 * it; with the full map every replay leaked about 5.6 MiB (issue #14, "Found from outside" 5: the gateway-and-worker
 * process grew by 60 MiB per 1,000 fuzzed requests, docs/limits.md). The inspection bundle carries an empty map:
 * replaying over and over leaves the process's memory outside the V8 heap where it was.
 */
import { readFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { ChainExecution } from '../../client/history-chain';
import { workflowsPath } from '../../worker/index';
import { replayExecution, withEmptySourceMap } from '../../worker/inspect';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const REPLAYS = 8;
/** Well under one leaked source map (5.6 MiB each before the fix), well over the noise of a collected heap. */
const BOUND_BYTES = 3 * 2 ** 20;

describe('inspection replays', () => {
  it('keep the memory outside the V8 heap flat, replay after replay', async () => {
    const history = JSON.parse(
      await readFile(new URL('../replay/histories/settle-conversation.json', import.meta.url), 'utf8'),
    ) as ChainExecution['history'];
    const execution: ChainExecution = { runId: 'inspection-memory', eventCount: history.events.length, history };
    // The first replay bundles the code and warms up: measured from after it.
    expect((await replayExecution(workflowsPath, execution)).length).toBeGreaterThan(0);
    gc();
    const before = process.memoryUsage().external;
    for (let i = 0; i < REPLAYS; i++) await replayExecution(workflowsPath, execution);
    gc();
    const grown = process.memoryUsage().external - before;
    expect(grown, `external memory grew by ${(grown / 2 ** 20).toFixed(1)} MiB over ${REPLAYS} replays`).toBeLessThan(
      BOUND_BYTES,
    );
  }, 300_000);

  it('an empty source map keeps the bundle and its file name', () => {
    const map = { version: 3, file: '/tmp/workflow-bundle.js', sources: ['a.ts'], names: [], mappings: 'AAAA' };
    const code = `var x = 1;\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}`;
    const stripped = withEmptySourceMap(code);
    expect(stripped.startsWith('var x = 1;\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,')).toBe(
      true,
    );
    const kept = JSON.parse(Buffer.from(stripped.slice(stripped.indexOf('base64,') + 7), 'base64').toString());
    expect(kept).toEqual({ version: 3, file: '/tmp/workflow-bundle.js', sources: [], names: [], mappings: '' });
    expect(() => withEmptySourceMap('var x = 1;')).toThrow(/no inline source map/);
  });
});
