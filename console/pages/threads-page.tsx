/**
 * The threads: Temporal visibility over the threads' search attributes (`GET /api/threads`), filtered on the server
 * by status, agent, resource and a raw visibility query, searched in the page by id, refreshed every few seconds;
 * and a form that starts a new thread.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ThreadListItem } from '../../protocol/thread-list';
import { describeError } from '../api';
import { StatusBadge } from '../components/status-badge';
import { useApp } from '../context';
import { ago, newId, time } from '../format';
import { BASE, navigate, threadHref } from '../router';
import { ErrorText, Options } from '../components/controls';

const STATUSES = ['idle', 'running', 'awaiting-approval'] as const;
const REFRESH_MS = 5_000;

interface Filters {
  status: string;
  agent: string;
  resource: string;
  query: string;
}

function filtersOf(params: URLSearchParams): Filters {
  return {
    status: params.get('status') ?? '',
    agent: params.get('agent') ?? '',
    resource: params.get('resource') ?? '',
    query: params.get('query') ?? '',
  };
}

export function ThreadsPage({ params }: { params: URLSearchParams }) {
  const { api } = useApp();
  const filters = filtersOf(params);
  const filterKey = JSON.stringify(filters);
  const [threads, setThreads] = useState<ThreadListItem[] | null>(null);
  const [nextPageToken, setNextPageToken] = useState<string | null>(null);
  const [pages, setPages] = useState(1);
  const [error, setError] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);
  const [refreshedAt, setRefreshedAt] = useState<number | null>(null);

  const query = {
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.agent ? { agent: filters.agent } : {}),
    ...(filters.resource ? { resource: filters.resource } : {}),
    ...(filters.query ? { query: filters.query } : {}),
  };

  const loadFirst = async () => {
    try {
      const page = await api.listThreads({ ...query, pageSize: 50 });
      setThreads(page.threads);
      setNextPageToken(page.nextPageToken);
      setPages(1);
      setError(null);
      setRefreshedAt(Date.now());
    } catch (err) {
      setError(describeError(err));
      setThreads((current) => current ?? []);
    }
  };

  useEffect(() => {
    setThreads(null);
    void loadFirst();
  }, [filterKey, api]);

  // Visibility is eventually consistent and threads change on their own: refresh while only the first page shows.
  useEffect(() => {
    if (pages > 1) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void loadFirst();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [filterKey, api, pages]);

  const loadMore = async () => {
    if (!nextPageToken) return;
    try {
      const page = await api.listThreads({ ...query, pageSize: 50, pageToken: nextPageToken });
      setThreads((current) => [...(current ?? []), ...page.threads]);
      setNextPageToken(page.nextPageToken);
      setPages((n) => n + 1);
    } catch (err) {
      setError(describeError(err));
    }
  };

  const needle = search.trim().toLowerCase();
  const shown = (threads ?? []).filter(
    (t) => !needle || `${t.resourceId}/${t.threadId}`.toLowerCase().includes(needle) || t.agent?.includes(needle),
  );

  return (
    <section class="page">
      <div class="page-head">
        <h1>Threads</h1>
        <button type="button" class="primary" aria-expanded={creating} onClick={() => setCreating((v) => !v)}>
          New thread
        </button>
      </div>
      {creating ? <NewThreadForm defaultResource={filters.resource} onCancel={() => setCreating(false)} /> : null}
      <FilterForm filters={filters} />
      <div class="toolbar">
        <label class="inline" for="thread-search">
          Search
        </label>
        <input
          id="thread-search"
          type="search"
          placeholder="resource/thread id"
          value={search}
          onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
        />
        <span class="muted" aria-live="polite">
          {threads === null
            ? 'Loading…'
            : `${shown.length} thread${shown.length === 1 ? '' : 's'}${refreshedAt ? ` · updated ${time(refreshedAt)}` : ''}`}
        </span>
      </div>
      <ErrorText error={error} />
      <table class="threads">
        <caption class="visually-hidden">Threads, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Thread</th>
            <th scope="col">Status</th>
            <th scope="col">Agent</th>
            <th scope="col">Last input</th>
            <th scope="col">Approvals</th>
            <th scope="col">Notifications</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((t) => (
            <tr key={t.workflowId}>
              <td data-label="Thread">
                <a href={threadHref(t, t.agent ? { agent: t.agent } : undefined)}>
                  <span class="resource">{t.resourceId}</span>/<strong>{t.threadId}</strong>
                </a>
              </td>
              <td data-label="Status">
                <StatusBadge status={t.status ?? (t.executionStatus === 'Running' ? 'new' : t.executionStatus)} />
              </td>
              <td data-label="Agent">{t.agent ?? '—'}</td>
              <td data-label="Last input" title={t.lastInputAt ? new Date(t.lastInputAt).toISOString() : undefined}>
                {ago(t.lastInputAt)}
              </td>
              <td data-label="Approvals" class={t.pendingApprovals > 0 ? 'attention' : undefined}>
                {t.pendingApprovals}
              </td>
              <td data-label="Notifications">{t.openNotifications}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {threads !== null && shown.length === 0 && !error ? (
        <p class="empty">
          No threads{needle || Object.keys(query).length > 0 ? ' match' : ' yet'}. Start one with “New thread”.
        </p>
      ) : null}
      {nextPageToken ? (
        <button type="button" onClick={loadMore}>
          Load more threads
        </button>
      ) : null}
    </section>
  );
}

function FilterForm({ filters }: { filters: Filters }) {
  const { agents } = useApp();
  const [draft, setDraft] = useState(filters);
  useEffect(() => setDraft(filters), [JSON.stringify(filters)]);
  const set = (field: keyof Filters) => (e: Event) =>
    setDraft({ ...draft, [field]: (e.target as HTMLInputElement | HTMLSelectElement).value });
  const apply = (event: Event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(draft)) if (value.trim()) params.set(name, value.trim());
    const search = params.toString();
    navigate(search ? `${BASE}?${search}` : BASE);
  };
  return (
    <form class="filters" onSubmit={apply} aria-label="Filter threads">
      <div class="field">
        <label for="filter-status">Status</label>
        <select id="filter-status" value={draft.status} onChange={set('status')}>
          <Options values={STATUSES} blank="any" />
        </select>
      </div>
      <div class="field">
        <label for="filter-agent">Agent</label>
        <select id="filter-agent" value={draft.agent} onChange={set('agent')}>
          <Options values={agents.map((a) => a.id)} blank="any" current={draft.agent} />
        </select>
      </div>
      <div class="field">
        <label for="filter-resource">Resource</label>
        <input id="filter-resource" value={draft.resource} onInput={set('resource')} placeholder="any" />
      </div>
      <div class="field grow">
        <label for="filter-query">Visibility query</label>
        <input
          id="filter-query"
          value={draft.query}
          onInput={set('query')}
          placeholder="e.g. ThreadlineOpenNotifications > 0"
          spellcheck={false}
        />
      </div>
      <div class="field actions">
        <button type="submit">Apply filters</button>
      </div>
    </form>
  );
}

function NewThreadForm({ defaultResource, onCancel }: { defaultResource: string; onCancel: () => void }) {
  const { api, agents } = useApp();
  const [agent, setAgent] = useState('');
  const [resourceId, setResourceId] = useState(defaultResource);
  const [threadId, setThreadId] = useState(() => newId('thread'));
  const [message, setMessage] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const first = useRef<HTMLSelectElement>(null);
  useEffect(() => first.current?.focus(), []);
  const chosenAgent = agent || agents[0]?.id || '';

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!resourceId.trim() || !threadId.trim() || !message.trim() || !chosenAgent) {
      return setError('Choose an agent and fill in the resource, the thread id and a first message.');
    }
    setBusy(true);
    setError(null);
    const target = { resourceId: resourceId.trim(), threadId: threadId.trim() };
    try {
      await api.http.agent(chosenAgent).sendMessage({ id: newId(), contents: message }, target);
      navigate(threadHref(target, { agent: chosenAgent }));
    } catch (err) {
      setError(describeError(err));
      setBusy(false);
    }
  };

  return (
    <form class="card stack new-thread" onSubmit={submit} aria-label="New thread">
      <h2>New thread</h2>
      <div class="row">
        <div class="field">
          <label for="new-agent">Agent</label>
          <select id="new-agent" ref={first} value={chosenAgent} onChange={(e) => setAgent(e.currentTarget.value)}>
            <Options values={agents.map((a) => a.id)} />
          </select>
        </div>
        <div class="field">
          <label for="new-resource">Resource id</label>
          <input id="new-resource" value={resourceId} onInput={(e) => setResourceId(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="new-thread-id">Thread id</label>
          <input id="new-thread-id" value={threadId} onInput={(e) => setThreadId(e.currentTarget.value)} />
        </div>
      </div>
      <label for="new-message">First message</label>
      <textarea id="new-message" rows={3} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
      <ErrorText error={error} />
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Starting…' : 'Start thread'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
