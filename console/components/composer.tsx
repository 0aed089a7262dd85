/**
 * Talking to the thread: send (joins the active run, or wakes an idle thread), queue (runs after the active run),
 * interrupt (cancels the step in flight and answers this instead), and signals with their type, XML tag and
 * attributes; each with the thread's `ifActive` / `ifIdle` behaviour when the defaults are not wanted.
 */
import { useRef, useState } from 'preact/hooks';
import { activeBehaviors, idleBehaviors } from '../../protocol/vocabulary';
import type { ThreadView } from '../../protocol/views';
import { describeError } from '../api';
import { useApp } from '../context';
import { newId } from '../format';
import { Options } from './controls';
import type { ThreadSession } from '../thread-session';

type Kind = 'send' | 'queue' | 'interrupt';
const SIGNAL_TYPES = ['user', 'reactive', 'notification'] as const;

const ACTION_TEXT: Record<string, string> = {
  wake: 'started a run',
  deliver: 'joins the run at its next step',
  queued: 'queued behind the active run',
  persist: 'stored without a run',
  discard: 'discarded',
  interrupt: 'interrupted the step in flight',
  skipped: 'skipped (unchanged)',
  blocked: 'blocked',
};

export function Composer({
  session,
  view,
  agentId,
  onAgent,
}: {
  session: ThreadSession;
  view: ThreadView | null | undefined;
  agentId: string;
  onAgent: (agentId: string) => void;
}) {
  const { api, agents } = useApp();
  const [text, setText] = useState('');
  const [mode, setMode] = useState<'message' | 'signal'>('message');
  const [signalType, setSignalType] = useState<(typeof SIGNAL_TYPES)[number]>('reactive');
  const [tagName, setTagName] = useState('');
  const [attributes, setAttributes] = useState<{ name: string; value: string }[]>([]);
  const [ifActive, setIfActive] = useState('');
  const [ifIdle, setIfIdle] = useState('');
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const active = view?.status === 'active';

  const send = async (kind: Kind) => {
    const contents = text;
    if (!contents.trim() || busy) return;
    if (!agentId) return setStatus({ tone: 'error', text: 'No agent to send to: the gateway lists none.' });
    const id = newId();
    const attrs = Object.fromEntries(attributes.filter((a) => a.name.trim()).map((a) => [a.name.trim(), a.value]));
    const hasAttrs = Object.keys(attrs).length > 0;
    const behaviour = kind === 'interrupt' ? 'interrupt' : ifActive;
    const target = {
      ...session.target,
      ...(behaviour ? { ifActive: { behavior: behaviour as never } } : {}),
      ...(ifIdle ? { ifIdle: { behavior: ifIdle as never } } : {}),
    };
    const agent = api.http.agent(agentId);
    const signal = mode === 'signal';
    const shown = {
      type: signal ? signalType : 'user',
      ...(signal && tagName.trim() ? { tagName: tagName.trim() } : {}),
      ...(hasAttrs ? { attributes: attrs } : {}),
    };
    setBusy(true);
    setStatus(null);
    if (kind === 'queue') session.sent.set(id, contents);
    else session.conversation.addPending(id, contents, 'sending', shown);
    try {
      const result = signal
        ? await agent.sendSignal(
            {
              id,
              contents,
              type: signalType,
              ...(shown.tagName ? { tagName: shown.tagName } : {}),
              ...(hasAttrs ? { attributes: attrs } : {}),
            },
            target,
          )
        : kind === 'queue'
          ? await agent.queueMessage({ id, contents, ...(hasAttrs ? { attributes: attrs } : {}) }, target)
          : await agent.sendMessage({ id, contents, ...(hasAttrs ? { attributes: attrs } : {}) }, target);
      if (result.action === 'queued') {
        session.sent.set(id, contents);
        session.conversation.dropPending(id);
      } else {
        session.conversation.setPending(id, result.action === 'discard' ? 'discarded' : result.action);
      }
      setText('');
      setStatus({
        tone: 'ok',
        text: `${signal ? 'Signal' : 'Message'} ${ACTION_TEXT[result.action] ?? result.action}${result.duplicate ? ' (duplicate)' : ''}.`,
      });
      session.refreshView(0);
    } catch (err) {
      session.conversation.dropPending(id);
      session.sent.delete(id);
      setStatus({ tone: 'error', text: describeError(err) });
    } finally {
      setBusy(false);
      input.current?.focus();
    }
  };

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    void send(event.altKey ? 'queue' : 'send');
  };

  const setAttribute = (index: number, field: 'name' | 'value', value: string) =>
    setAttributes(attributes.map((a, i) => (i === index ? { ...a, [field]: value } : a)));

  return (
    <form
      class="composer"
      aria-label="Send to the thread"
      onSubmit={(e) => {
        e.preventDefault();
        void send('send');
      }}
    >
      <label for="composer-text" class="visually-hidden">
        {mode === 'signal' ? 'Signal contents' : 'Message'}
      </label>
      <textarea
        id="composer-text"
        ref={input}
        rows={2}
        value={text}
        placeholder={
          mode === 'signal' ? 'Signal contents…' : 'Message… (Enter sends, Shift+Enter new line, Alt+Enter queues)'
        }
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={onKeyDown}
      />
      <div class="composer-actions">
        <button type="submit" class="primary" disabled={busy || !text.trim()}>
          Send
        </button>
        <button
          type="button"
          disabled={busy || !text.trim() || mode === 'signal'}
          onClick={() => void send('queue')}
          title="Runs after the active run"
        >
          Queue
        </button>
        <button
          type="button"
          disabled={busy || !text.trim() || !active}
          onClick={() => void send('interrupt')}
          title="Cancels the step in flight; a fresh step answers this"
        >
          Interrupt
        </button>
        <label class="inline" for="composer-agent">
          Agent
        </label>
        <select id="composer-agent" value={agentId} onChange={(e) => onAgent(e.currentTarget.value)}>
          <Options values={agents.map((a) => a.id)} current={agentId} />
        </select>
      </div>
      <details class="composer-options">
        <summary>Options: signal, attributes, behaviour</summary>
        <fieldset class="row">
          <legend>Send as</legend>
          <label class="inline">
            <input type="radio" name="composer-mode" checked={mode === 'message'} onChange={() => setMode('message')} />
            message
          </label>
          <label class="inline">
            <input type="radio" name="composer-mode" checked={mode === 'signal'} onChange={() => setMode('signal')} />
            signal
          </label>
        </fieldset>
        {mode === 'signal' ? (
          <div class="row">
            <div class="field">
              <label for="composer-signal-type">Signal type</label>
              <select
                id="composer-signal-type"
                value={signalType}
                onChange={(e) => setSignalType(e.currentTarget.value as (typeof SIGNAL_TYPES)[number])}
              >
                <Options values={SIGNAL_TYPES} />
              </select>
            </div>
            <div class="field">
              <label for="composer-tag">XML tag (optional)</label>
              <input
                id="composer-tag"
                value={tagName}
                placeholder="default for the type"
                onInput={(e) => setTagName(e.currentTarget.value)}
              />
            </div>
          </div>
        ) : null}
        <div class="row">
          <div class="field">
            <label for="composer-if-active">If the thread is active</label>
            <select id="composer-if-active" value={ifActive} onChange={(e) => setIfActive(e.currentTarget.value)}>
              <Options values={activeBehaviors} blank="default (deliver)" />
            </select>
          </div>
          <div class="field">
            <label for="composer-if-idle">If the thread is idle</label>
            <select id="composer-if-idle" value={ifIdle} onChange={(e) => setIfIdle(e.currentTarget.value)}>
              <Options values={idleBehaviors} blank="default (wake)" />
            </select>
          </div>
        </div>
        <fieldset>
          <legend>Attributes</legend>
          {attributes.map((a, i) => (
            <div class="row" key={i}>
              <label class="visually-hidden" for={`attr-name-${i}`}>
                Attribute {i + 1} name
              </label>
              <input
                id={`attr-name-${i}`}
                placeholder="name"
                value={a.name}
                onInput={(e) => setAttribute(i, 'name', e.currentTarget.value)}
              />
              <label class="visually-hidden" for={`attr-value-${i}`}>
                Attribute {i + 1} value
              </label>
              <input
                id={`attr-value-${i}`}
                placeholder="value"
                value={a.value}
                onInput={(e) => setAttribute(i, 'value', e.currentTarget.value)}
              />
              <button type="button" class="quiet" onClick={() => setAttributes(attributes.filter((_, j) => j !== i))}>
                Remove
              </button>
            </div>
          ))}
          <button type="button" onClick={() => setAttributes([...attributes, { name: '', value: '' }])}>
            Add attribute
          </button>
        </fieldset>
      </details>
      <p class={`composer-status ${status?.tone ?? ''}`} role="status" aria-live="polite">
        {status?.text ?? ''}
      </p>
    </form>
  );
}
