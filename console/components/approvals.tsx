/**
 * Tool calls the active run is parked on (behaviour §2.4): approve, optionally with resume data for the tool, or
 * decline with a reason the model reads. Shown above the composer, where the person talking to the thread looks.
 */
import { useState } from 'preact/hooks';
import type { ThreadView } from '../../protocol/views';
import { describeError } from '../api';
import { useApp } from '../context';
import { oneLine, pretty, time } from '../format';
import type { ThreadSession } from '../thread-session';
import { ErrorText } from './controls';

type Approval = NonNullable<ThreadView['activeRun']>['approvals'][number];

export function Approvals({ session, view }: { session: ThreadSession; view: ThreadView | null | undefined }) {
  const run = view?.activeRun;
  const waiting = run?.approvals.filter((a) => a.status === 'waiting') ?? [];
  if (!run || waiting.length === 0) return null;
  return (
    <section class="approvals" aria-label="Tool calls awaiting approval">
      {waiting.map((approval) => (
        <ApprovalCard key={approval.toolCallId} session={session} agentId={run.agentId} approval={approval} />
      ))}
    </section>
  );
}

function ApprovalCard({ session, agentId, approval }: { session: ThreadSession; agentId: string; approval: Approval }) {
  const { api } = useApp();
  const [reason, setReason] = useState('');
  const [resumeData, setResumeData] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const id = approval.toolCallId.replace(/[^A-Za-z0-9_-]/g, '_');

  const decide = async (approved: boolean) => {
    let resume: unknown;
    if (approved && resumeData.trim()) {
      try {
        resume = JSON.parse(resumeData);
      } catch {
        return setError('Resume data must be JSON, e.g. {"confirmed": true} or "text".');
      }
    }
    setBusy(true);
    setError(null);
    try {
      await api.http.agent(agentId).sendToolApproval({
        ...session.target,
        toolCallId: approval.toolCallId,
        approved,
        ...(resume !== undefined ? { resumeData: resume } : {}),
        ...(!approved && reason.trim() ? { declineReason: reason.trim() } : {}),
      });
      session.refreshView(0);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="approval card" data-tool-call={approval.toolCallId}>
      <p>
        <strong>
          <code>{approval.toolName}</code> waits for approval
        </strong>{' '}
        <span class="muted">
          requested {time(approval.requestedAt)}
          {approval.expiresAt ? `, expires ${time(approval.expiresAt)}` : ''}
        </span>
      </p>
      <details>
        <summary>
          Arguments <code>{oneLine(approval.args, 60)}</code>
        </summary>
        <pre>{pretty(approval.args)}</pre>
      </details>
      <div class="row">
        <div class="field grow">
          <label for={`resume-${id}`}>Resume data (JSON, optional)</label>
          <input
            id={`resume-${id}`}
            value={resumeData}
            spellcheck={false}
            onInput={(e) => setResumeData(e.currentTarget.value)}
          />
        </div>
        <div class="field grow">
          <label for={`reason-${id}`}>Decline reason (optional)</label>
          <input id={`reason-${id}`} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        </div>
      </div>
      <div class="row">
        <button type="button" class="primary" disabled={busy} onClick={() => void decide(true)}>
          Approve
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => void decide(false)}>
          Decline
        </button>
      </div>
      <ErrorText error={error} />
    </div>
  );
}
