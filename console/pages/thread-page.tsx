/**
 * One thread: the conversation with its live stream and composer, the approvals it waits for, and the panels for its
 * run, queue, state lanes, inbox and step timeline. Wide screens show the conversation beside the panels; narrow
 * ones make the conversation one more tab.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ThreadTarget } from '../../protocol/schemas';
import { Approvals } from '../components/approvals';
import { Composer } from '../components/composer';
import { ErrorText } from '../components/controls';
import { ConversationView } from '../components/conversation-view';
import { InboxPanel } from '../components/inbox-panel';
import { LanesPanel } from '../components/lanes-panel';
import { QueuePanel } from '../components/queue-panel';
import { RunPanel } from '../components/run-panel';
import { StatusBadge } from '../components/status-badge';
import { StepsPanel } from '../components/steps-panel';
import { useApp } from '../context';
import type { StreamState } from '../events';
import { navigate, threadHref } from '../router';
import { useStore } from '../store';
import { ThreadSession } from '../thread-session';

const TABS = [
  { id: 'chat', label: 'Conversation' },
  { id: 'run', label: 'Run' },
  { id: 'queue', label: 'Queue' },
  { id: 'state', label: 'State' },
  { id: 'inbox', label: 'Inbox' },
  { id: 'steps', label: 'Steps' },
] as const;
type TabId = (typeof TABS)[number]['id'];

function useWide(): boolean {
  const query = '(min-width: 900px)';
  const [wide, setWide] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const list = matchMedia(query);
    const update = () => setWide(list.matches);
    list.addEventListener('change', update);
    return () => list.removeEventListener('change', update);
  }, []);
  return wide;
}

const STREAM_TEXT: Record<StreamState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  refused: 'Not subscribed',
  closed: 'Closed',
};

export function ThreadPage({ target, params }: { target: ThreadTarget; params: URLSearchParams }) {
  const { api, agents } = useApp();
  const session = useMemo(() => new ThreadSession(api, target), [api, target.resourceId, target.threadId]);
  useEffect(() => {
    void session.open();
    return () => session.close();
  }, [session]);
  const view = useStore(session.view);
  const stream = useStore(session.stream);
  const error = useStore(session.error);
  const wide = useWide();
  const [agentId, setAgentId] = useState(params.get('agent') ?? '');
  const requested = params.get('tab') as TabId | null;
  const tab: TabId = requested && TABS.some((t) => t.id === requested) ? requested : 'chat';
  const panelTab: TabId = wide && tab === 'chat' ? 'run' : tab;
  const stepParam = params.get('step');
  const openStep = stepParam !== null && /^\d+$/.test(stepParam) ? Number(stepParam) : null;
  const effectiveAgent = agentId || view?.activeRun?.agentId || agents[0]?.id || '';

  const go = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [name, value] of Object.entries(changes)) {
      if (value === null) next.delete(name);
      else next.set(name, value);
    }
    navigate(threadHref(target, Object.fromEntries(next)), { replace: true });
  };

  const waiting = view?.activeRun?.approvals.filter((a) => a.status === 'waiting').length ?? 0;
  const badges: Partial<Record<TabId, number>> = {
    run: waiting,
    queue: view?.queue.length ?? 0,
    state: view?.lanes.length ?? 0,
    inbox: view ? view.inbox.pending + view.inbox.delivered : 0,
  };
  const tabs = wide ? TABS.filter((t) => t.id !== 'chat') : TABS;

  const chat = (
    <div
      class="chat-column"
      id="panel-chat"
      role={wide ? undefined : 'tabpanel'}
      aria-labelledby={wide ? undefined : 'tab-chat'}
    >
      <ConversationView session={session} />
      <Approvals session={session} view={view} />
      <Composer
        session={session}
        view={view}
        agentId={effectiveAgent}
        onAgent={(id) => {
          setAgentId(id);
          go({ agent: id });
        }}
      />
    </div>
  );

  const panel = (
    <div class="panel" id={`panel-${panelTab}`} role="tabpanel" aria-labelledby={`tab-${panelTab}`}>
      {panelTab === 'run' ? <RunPanel session={session} view={view} /> : null}
      {panelTab === 'queue' ? <QueuePanel session={session} view={view} /> : null}
      {panelTab === 'state' ? <LanesPanel session={session} view={view} /> : null}
      {panelTab === 'inbox' ? <InboxPanel session={session} /> : null}
      {panelTab === 'steps' ? (
        <StepsPanel
          session={session}
          openStep={openStep}
          onOpen={(step) => go({ step: step === null ? null : String(step) })}
        />
      ) : null}
    </div>
  );

  return (
    <section class="thread-page" aria-labelledby="thread-title">
      <div class="thread-head">
        <h1 id="thread-title">
          <span class="resource">{target.resourceId}</span>/<span>{target.threadId}</span>
        </h1>
        <StatusBadge status={view === undefined ? 'loading' : (view?.activeRun?.status ?? (view ? 'idle' : 'new'))} />
        <span
          class={`connection ${stream.state}`}
          role="status"
          aria-live="polite"
          data-state={stream.state}
          title={stream.detail}
        >
          {STREAM_TEXT[stream.state]}
        </span>
      </div>
      <ErrorText error={error ?? (stream.state === 'refused' ? stream.detail : null)} />
      <div class={`thread-layout ${wide ? 'wide' : 'narrow'}`}>
        {wide ? chat : null}
        <div class="side">
          <TabList
            tabs={tabs}
            current={wide ? panelTab : tab}
            badges={badges}
            onSelect={(id) => go({ tab: id, step: null })}
          />
          {wide || tab !== 'chat' ? panel : chat}
        </div>
      </div>
    </section>
  );
}

function TabList({
  tabs,
  current,
  badges,
  onSelect,
}: {
  tabs: readonly { id: TabId; label: string }[];
  current: TabId;
  badges: Partial<Record<TabId, number>>;
  onSelect: (id: TabId) => void;
}) {
  const list = useRef<HTMLDivElement>(null);
  // Arrow keys move between tabs (WAI-ARIA tabs pattern, automatic activation).
  const onKeyDown = (event: KeyboardEvent) => {
    const index = tabs.findIndex((t) => t.id === current);
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    const next = event.key === 'Home' ? 0 : event.key === 'End' ? tabs.length - 1 : step ? index + step : null;
    if (next === null) return;
    event.preventDefault();
    const id = tabs[(next + tabs.length) % tabs.length].id;
    onSelect(id);
    requestAnimationFrame(() => list.current?.querySelector<HTMLElement>(`#tab-${id}`)?.focus());
  };
  return (
    <div class="tabs" role="tablist" aria-label="Thread panels" ref={list} onKeyDown={onKeyDown}>
      {tabs.map((t) => (
        <button
          key={t.id}
          id={`tab-${t.id}`}
          type="button"
          role="tab"
          aria-selected={t.id === current}
          aria-controls={`panel-${t.id}`}
          tabIndex={t.id === current ? 0 : -1}
          onClick={() => onSelect(t.id)}
        >
          {t.label}
          <span
            class={`count${badges[t.id] ? ' some' : ''}`}
            aria-label={badges[t.id] ? `(${badges[t.id]})` : undefined}
          >
            {badges[t.id] ? badges[t.id] : ''}
          </span>
        </button>
      ))}
    </div>
  );
}
