/**
 * Runs waiting behind the active one, in order, each cancellable while it has not started.
 */
import { useState } from 'preact/hooks';
import type { ThreadView } from '../../protocol/views';
import { describeError } from '../api';
import { useApp } from '../context';
import type { ThreadSession } from '../thread-session';

export function QueuePanel({ session, view }: { session: ThreadSession; view: ThreadView | null | undefined }) {
  const { api } = useApp();
  const [message, setMessage] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const queue = view?.queue ?? [];

  const cancel = async (entry: ThreadView['queue'][number]) => {
    try {
      const { cancelledSignalIds } = await api.http
        .agent(entry.agentId)
        .cancelQueuedMessages({ ...session.target, signalIds: entry.inputIds });
      setMessage({
        tone: 'ok',
        text: cancelledSignalIds.length
          ? `Cancelled ${cancelledSignalIds.length} queued input(s).`
          : 'Nothing cancelled: the run had already started.',
      });
      session.refreshView(0);
    } catch (err) {
      setMessage({ tone: 'error', text: describeError(err) });
    }
  };

  return (
    <div class="panel-body">
      {queue.length === 0 ? <p class="muted">Nothing is queued.</p> : null}
      <ol class="list">
        {queue.map((entry, i) => (
          <li key={entry.runId} class="card" data-queued-run={entry.runId}>
            <p>
              <strong>#{i + 1}</strong> for <code>{entry.agentId}</code>{' '}
              <span class="muted small">
                run <code>{entry.runId}</code>
              </span>
            </p>
            <ul>
              {entry.inputIds.map((id) => (
                <li key={id}>{session.sent.get(id) ?? <code class="muted">{id}</code>}</li>
              ))}
            </ul>
            <button type="button" onClick={() => void cancel(entry)}>
              Cancel
            </button>
          </li>
        ))}
      </ol>
      <p class={message?.tone === 'error' ? 'error' : 'muted'} role="status">
        {message?.text ?? ''}
      </p>
    </div>
  );
}
