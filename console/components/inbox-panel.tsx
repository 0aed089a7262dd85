/**
 * The thread's notification inbox (behaviour §4): filtered by status, priority, source and text, newest first; each
 * record can be marked seen, dismissed or archived. Records that left the inbox beyond its bound are one switch away.
 */
import { useEffect, useState } from 'preact/hooks';
import type { NotificationRecord } from '../../protocol/views';
import { notificationPriorities, notificationStatuses } from '../../protocol/vocabulary';
import { describeError } from '../api';
import { useApp } from '../context';
import { pretty, time } from '../format';
import { useStore } from '../store';
import type { ThreadSession } from '../thread-session';
import { ErrorText, Options } from './controls';

const OPEN = ['pending', 'delivered'];

export function InboxPanel({ session }: { session: ThreadSession }) {
  const { api } = useApp();
  const changed = useStore(session.inboxChanged);
  const [statuses, setStatuses] = useState<string[]>(['pending', 'delivered', 'seen']);
  const [priority, setPriority] = useState('');
  const [source, setSource] = useState('');
  const [q, setQ] = useState('');
  const [archived, setArchived] = useState(false);
  const [records, setRecords] = useState<NotificationRecord[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);

  useEffect(() => {
    let live = true;
    const load = archived
      ? api.http.listArchivedNotifications(session.target, { limit: 50 }).then((page) => page.notifications)
      : api.http
          .listNotifications(session.target, {
            ...(statuses.length ? { status: statuses as NotificationRecord['status'][] } : {}),
            ...(priority ? { priority: priority as NotificationRecord['priority'] } : {}),
            ...(source.trim() ? { source: source.trim() } : {}),
            ...(q.trim() ? { q: q.trim() } : {}),
            limit: 50,
          })
          .then((page) => page?.notifications ?? []);
    load
      .then((list) => {
        if (!live) return;
        setRecords(list);
        setError(null);
      })
      .catch((err: unknown) => live && setError(describeError(err)));
    return () => {
      live = false;
    };
  }, [api, session, changed, reload, archived, statuses.join(','), priority, source, q]);

  const change = async (record: NotificationRecord, action: 'seen' | 'dismiss' | 'archive') => {
    try {
      if (action === 'seen') await api.http.markNotificationSeen(session.target, record.id);
      if (action === 'dismiss') await api.http.dismissNotification(session.target, record.id);
      if (action === 'archive') await api.http.archiveNotification(session.target, record.id);
      setReload((n) => n + 1);
      session.refreshView(0);
    } catch (err) {
      setError(describeError(err));
    }
  };

  const toggle = (status: string) =>
    setStatuses(statuses.includes(status) ? statuses.filter((s) => s !== status) : [...statuses, status]);

  return (
    <div class="panel-body">
      <form class="stack" aria-label="Filter notifications" onSubmit={(e) => e.preventDefault()}>
        <fieldset class="row wrap" disabled={archived}>
          <legend>Status</legend>
          {notificationStatuses.map((s) => (
            <label class="inline" key={s}>
              <input type="checkbox" checked={statuses.includes(s)} onChange={() => toggle(s)} /> {s}
            </label>
          ))}
        </fieldset>
        <div class="row">
          <div class="field">
            <label for="inbox-priority">Priority</label>
            <select
              id="inbox-priority"
              value={priority}
              disabled={archived}
              onChange={(e) => setPriority(e.currentTarget.value)}
            >
              <Options values={notificationPriorities} blank="any" />
            </select>
          </div>
          <div class="field">
            <label for="inbox-source">Source</label>
            <input
              id="inbox-source"
              value={source}
              disabled={archived}
              onChange={(e) => setSource(e.currentTarget.value)}
            />
          </div>
          <div class="field grow">
            <label for="inbox-q">Text</label>
            <input
              id="inbox-q"
              type="search"
              value={q}
              disabled={archived}
              onChange={(e) => setQ(e.currentTarget.value)}
            />
          </div>
        </div>
        <label class="inline">
          <input type="checkbox" checked={archived} onChange={(e) => setArchived(e.currentTarget.checked)} /> show
          records that left the inbox (archive)
        </label>
      </form>
      <ErrorText error={error} />
      {records?.length === 0 ? <p class="muted">No notifications match.</p> : null}
      <ul class="list">
        {(records ?? []).map((r) => (
          <li key={r.id} class={`card notification priority-${r.priority}`} data-notification={r.id}>
            <p>
              <span class={`badge priority-${r.priority}`}>{r.priority}</span>{' '}
              <span class={`badge ${OPEN.includes(r.status) ? 'open' : ''}`}>{r.status}</span>{' '}
              <strong>{r.summary}</strong>
            </p>
            <p class="small muted">
              {r.source} · {r.kind} · {time(r.createdAt)}
              {r.coalescedCount > 1 ? ` · ×${r.coalescedCount}` : ''}
              {r.deliveryReason ? ` · ${r.deliveryReason}` : ''}
            </p>
            {r.payload !== undefined ? (
              <details>
                <summary>Payload</summary>
                <pre>{pretty(r.payload)}</pre>
              </details>
            ) : null}
            {!archived ? (
              <div class="row">
                {r.status === 'pending' || r.status === 'delivered' ? (
                  <button type="button" onClick={() => void change(r, 'seen')}>
                    Mark seen
                  </button>
                ) : null}
                {r.status !== 'dismissed' && r.status !== 'archived' ? (
                  <button type="button" onClick={() => void change(r, 'dismiss')}>
                    Dismiss
                  </button>
                ) : null}
                {r.status !== 'archived' ? (
                  <button type="button" onClick={() => void change(r, 'archive')}>
                    Archive
                  </button>
                ) : null}
              </div>
            ) : null}
          </li>
        ))}
      </ul>
    </div>
  );
}
