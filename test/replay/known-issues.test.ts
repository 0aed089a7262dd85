/**
 * Histories that do not replay, for a cause outside Threadline's workflow code (docs/operations.md, "Known issue: an
 * update and an activity result split differently live and on replay"). Each must keep failing the same way: the
 * day one replays, the SDK changed, and the history moves to `histories/`, where every history must replay.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { replaySinks } from '../../worker/replay-sinks';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'known-issues');

describe('replay of histories with a known SDK-level divergence', () => {
  // Chaos run seed 1414, thread t49: live, the worker answered the workflow task of events 93-94 with [upsert, schedule
  // publishEvents, accept update, complete update]; replay delivers the update and runStep's result in one activation
  // (update first), so the thread accepts the input before it sees the step's result and schedules another step.
  it('chaos-1414 t49: the update accepted after the step result replays in the same activation', async () => {
    const file = 'update-split-chaos-1414-t49.json';
    const history = historyFromJSON(JSON.parse(await readFile(join(dir, file), 'utf8')));
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: replaySinks },
        history,
        file,
      ),
    ).rejects.toThrow(
      /TMPRL1100.*Update machine does not handle this event: HistoryEvent\(id: 96, UpsertWorkflowSearchAttributes\)/,
    );
  });
});
