/**
 * The thread at a glance: status, the active run (agent, step, inputs waiting for it), abort, counts, and the link
 * to its workflow in the Temporal UI.
 */
import { useState } from 'preact/hooks';
import { threadKey } from '../../protocol/ids';
import type { ThreadView } from '../../protocol/views';
import { describeError } from '../api';
import { temporalWorkflowUrl } from '../config';
import { useApp } from '../context';
import type { ThreadSession } from '../thread-session';
import { StatusBadge } from './status-badge';

export function RunPanel({ session, view }: { session: ThreadSession; view: ThreadView | null | undefined }) {
  const { api, config } = useApp();
  const [clear, setClear] = useState(false);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const run = view?.activeRun ?? null;
  const workflowId = threadKey(session.target.resourceId, session.target.threadId);

  const abort = async () => {
    if (!run) return;
    setBusy(true);
    try {
      const answer = await api.http
        .agent(run.agentId)
        .abortThread({ ...session.target, ...(clear ? { clearPendingSignals: true } : {}) });
      setResult({
        tone: 'ok',
        text: answer.aborted
          ? `Aborted run ${answer.runId ?? ''}${answer.clearedSignalIds.length ? `; cleared ${answer.clearedSignalIds.length} input(s)` : ''}.`
          : 'Nothing to abort: no run was active.',
      });
      session.refreshView(0);
    } catch (err) {
      setResult({ tone: 'error', text: describeError(err) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="panel-body">
      {view === undefined ? <p class="muted">Loading…</p> : null}
      {view === null ? <p class="muted">This thread has no workflow yet: send it a message to start it.</p> : null}
      {view ? (
        <dl class="facts">
          <dt>Status</dt>
          <dd>
            <StatusBadge status={run ? run.status : 'idle'} />
          </dd>
          <dt>Active run</dt>
          <dd>{run ? <code>{run.runId}</code> : 'none'}</dd>
          {run ? (
            <>
              <dt>Agent</dt>
              <dd>{run.agentId}</dd>
              <dt>Step</dt>
              <dd>{run.stepNumber}</dd>
              <dt>Inputs waiting for it</dt>
              <dd>{run.pendingInputs}</dd>
            </>
          ) : null}
          <dt>Messages</dt>
          <dd>{view.messageCount}</dd>
          <dt>Runs completed</dt>
          <dd>{view.runsCompleted}</dd>
          <dt>Queued runs</dt>
          <dd>{view.queue.length}</dd>
        </dl>
      ) : null}
      <p>
        <a href={temporalWorkflowUrl(config, workflowId)} target="_blank" rel="noreferrer noopener">
          Workflow in the Temporal UI ↗
        </a>{' '}
        <code class="muted small">{workflowId}</code>
      </p>
      <div class="stack">
        <label class="inline">
          <input type="checkbox" checked={clear} onChange={(e) => setClear(e.currentTarget.checked)} /> also drop queued
          runs and inputs waiting for this run
        </label>
        <div>
          <button type="button" class="danger" disabled={!run || busy} onClick={() => void abort()}>
            Abort run
          </button>
        </div>
        <p class={result?.tone === 'error' ? 'error' : 'muted'} role="status">
          {result?.text ?? ''}
        </p>
      </div>
    </div>
  );
}
