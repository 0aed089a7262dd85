/**
 * Every committed history replays against the current workflow code. A change that would break running threads
 * (a command added, removed or reordered without `patched()`) fails here.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { replaySinks } from '../../worker/replay-sinks';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'histories');
const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));

describe('replay of recorded histories', () => {
  it('has at least one recorded history', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s replays without nondeterminism', async (file) => {
    const history = historyFromJSON(JSON.parse(await readFile(join(dir, file), 'utf8')));
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: replaySinks },
      history,
      file,
    );
  });
});
