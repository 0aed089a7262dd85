/**
 * What `threadStateQuery` answers: the thread as applications see it, derived from its snapshot.
 */
import { laneView } from '../../protocol/lanes';
import type { ThreadView } from '../../protocol/views';
import { inboxCounts } from '../inbox';
import { isParked } from './approvals';
import type { ThreadSnapshot } from './snapshot';

export function threadView(s: Readonly<ThreadSnapshot>): ThreadView {
  const { run } = s;
  return {
    resourceId: s.resourceId,
    threadId: s.threadId,
    status: run ? 'active' : 'idle',
    activeRun: run
      ? {
          runId: run.runId,
          agentId: run.agentId,
          stepNumber: run.stepNumber,
          pendingInputs: run.pending.length,
          status: isParked(run) ? 'awaiting-approval' : 'running',
          approvals: (run.toolWait?.calls ?? [])
            .filter((c) => c.approval)
            .map((c) => ({
              toolCallId: c.call.toolCallId,
              toolName: c.call.toolName,
              args: c.call.input,
              status: c.approval!.status,
              requestedAt: c.approval!.requestedAt,
              ...(c.approval!.expiresAt !== undefined ? { expiresAt: c.approval!.expiresAt } : {}),
            })),
        }
      : null,
    queue: s.queue.map((q) => ({
      runId: q.runId,
      agentId: q.agentId,
      inputIds: q.inputs.map((i) => i.input.id),
    })),
    messageCount: s.messages.length,
    runsCompleted: s.runsCompleted,
    lanes: Object.entries(s.lanes).map(([id, lane]) => laneView(id, lane)),
    inbox: inboxCounts(s.inbox),
  };
}
