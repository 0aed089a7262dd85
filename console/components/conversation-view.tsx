/**
 * The conversation: the latest items rendered, older ones added as the reader scrolls up (then older stored
 * messages fetched), each item off screen skipped by the browser's layout (`content-visibility: auto`), so a thread
 * of thousands of messages opens and scrolls like a short one. It sticks to the bottom while the reader is there
 * (a streaming answer stays in view) and otherwise offers a jump to the latest.
 */
import { Component } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { contentsText, type InputItem, type Item, type StepItem, type ToolItem } from '../conversation';
import { oneLine, pretty, time } from '../format';
import { useStore } from '../store';
import type { ThreadSession } from '../thread-session';

/** Items added to the rendered window at a time. */
const WINDOW_STEP = 80;
/** Within this many pixels of the bottom counts as "at the bottom". */
const BOTTOM_SLACK = 48;
const nativeScrollAnchoring = typeof CSS !== 'undefined' && CSS.supports?.('overflow-anchor', 'auto');

export function ConversationView({ session }: { session: ThreadSession }) {
  const items = useStore(session.conversation.items);
  const hasOlder = useStore(session.hasOlder);
  const [shown, setShown] = useState(WINDOW_STEP);
  const [showJump, setShowJump] = useState(false);
  const scroller = useRef<HTMLDivElement>(null);
  const content = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const anchor = useRef<{ element: HTMLElement; top: number } | null>(null);
  const start = Math.max(0, items.length - shown);
  const visible = items.slice(start);
  const more = start > 0 || hasOlder;

  const scrollToBottom = () => {
    const el = scroller.current;
    if (!el) return;
    el.scrollTop = el.scrollHeight;
    atBottom.current = true;
    setShowJump(false);
  };

  // Content grows (a token, a message, an image loading): stay at the bottom if the reader was there.
  useEffect(() => {
    const observer = new ResizeObserver(() => {
      if (atBottom.current) scrollToBottom();
      else setShowJump(true);
    });
    if (content.current) observer.observe(content.current);
    return () => observer.disconnect();
  }, []);

  // Items added above: keep what the reader looks at in place (browsers without scroll anchoring).
  useLayoutEffect(() => {
    const kept = anchor.current;
    anchor.current = null;
    if (!kept || nativeScrollAnchoring || !scroller.current) return;
    scroller.current.scrollTop += kept.element.offsetTop - kept.top;
  }, [start, items]);

  const showEarlier = async () => {
    const first = content.current?.querySelector<HTMLElement>('[data-key]');
    if (first) anchor.current = { element: first, top: first.offsetTop };
    if (start > 0) {
      setShown((n) => n + WINDOW_STEP);
    } else if (hasOlder) {
      await session.loadOlder();
      setShown((n) => n + WINDOW_STEP);
    }
  };

  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < BOTTOM_SLACK;
    if (atBottom.current) setShowJump(false);
    if (el.scrollTop < 300 && more && !anchor.current) void showEarlier();
  };

  return (
    <div class="conversation-frame">
      <div
        class="conversation"
        ref={scroller}
        onScroll={onScroll}
        tabIndex={0}
        role="log"
        aria-label="Conversation"
        aria-live="off"
      >
        <div ref={content} class="conversation-content">
          {more ? (
            <button type="button" class="quiet earlier" onClick={() => void showEarlier()}>
              Show earlier messages
            </button>
          ) : null}
          {visible.length === 0 ? <p class="empty">No messages yet. Say something below.</p> : null}
          {visible.map((item) => (
            <ItemView key={item.key} item={item} />
          ))}
        </div>
      </div>
      {showJump ? (
        <button type="button" class="jump" onClick={scrollToBottom}>
          Jump to latest ↓
        </button>
      ) : null}
    </div>
  );
}

/** One item; re-renders only when its own store says it changed (a streaming step, once per frame). */
class ItemView extends Component<{ item: Item }> {
  private unsubscribe: (() => void) | null = null;

  override componentDidMount(): void {
    this.unsubscribe = this.props.item.store.subscribe(() => this.forceUpdate());
  }

  override componentWillUnmount(): void {
    this.unsubscribe?.();
  }

  override shouldComponentUpdate(next: { item: Item }): boolean {
    return next.item !== this.props.item;
  }

  override render() {
    const { item } = this.props;
    switch (item.kind) {
      case 'input':
        return <InputView item={item} />;
      case 'step':
        return <StepView item={item} />;
      case 'tool':
        return <ToolView item={item} />;
      case 'notice':
        return (
          <p class={`msg notice ${item.tone}`} data-key={item.key}>
            {item.text}
          </p>
        );
    }
  }
}

const DEFAULT_TAGS: Record<string, string> = {
  user: 'user',
  reactive: 'system-reminder',
  notification: 'notification',
  state: 'state',
};

function InputView({ item }: { item: InputItem }) {
  const plainUser = item.type === 'user' && !item.tagName;
  const label = plainUser ? 'User' : `<${item.tagName ?? DEFAULT_TAGS[item.type] ?? item.type}>`;
  const attributes = Object.entries(item.attributes ?? {}).filter(([, v]) => v !== null && v !== undefined);
  return (
    <article
      class={`msg input${plainUser ? ' user' : ' signal'}`}
      data-key={item.key}
      data-pending={item.pending ?? undefined}
    >
      <header>
        <span class="who">{label}</span>
        {item.type !== 'user' ? <span class="muted">{item.type}</span> : null}
        <time>{time(item.at)}</time>
        {item.persisted ? <span class="badge">persisted</span> : null}
        {item.pending !== undefined ? <span class="badge pending">{item.pending}</span> : null}
      </header>
      {attributes.length > 0 ? (
        <ul class="attrs" aria-label="Attributes">
          {attributes.map(([name, value]) => (
            <li key={name}>
              {name}=<code>{String(value)}</code>
            </li>
          ))}
        </ul>
      ) : null}
      <div class="text">{contentsText(item.contents)}</div>
    </article>
  );
}

function StepView({ item }: { item: StepItem }) {
  const streaming = item.status === 'streaming';
  return (
    <article class={`msg step status-${item.status}`} data-key={item.key} aria-busy={streaming}>
      <header>
        <span class="who">{item.agentId ?? 'Agent'}</span>
        <span class="muted">step {item.stepNumber}</span>
        <time>{time(item.at)}</time>
        {streaming ? <span class="badge live">streaming</span> : null}
        {item.status === 'interrupted' ? <span class="badge">interrupted</span> : null}
        {item.status === 'aborted' ? <span class="badge">aborted</span> : null}
        {item.status === 'failed' ? <span class="badge error">failed</span> : null}
        {item.retries ? <span class="badge">retried ×{item.retries}</span> : null}
      </header>
      {item.reasoning ? (
        <details class="reasoning">
          <summary>Reasoning</summary>
          <div class="text">{item.reasoning}</div>
        </details>
      ) : null}
      {item.text || streaming ? (
        // Nothing follows the text inside the answer (no caret element): the growing text moves no other box.
        <div class="text answer">{item.text}</div>
      ) : null}
      {item.status === 'interrupted' ? (
        <p class="muted">This step was interrupted; its partial output was dropped and a fresh step answers.</p>
      ) : null}
      {item.toolCalls.map((call) => (
        <div class="tool-call" key={call.toolCallId} data-tool-call={call.toolCallId}>
          <span>
            Calls <code>{call.toolName}</code>
          </span>
          <code class="args">{oneLine(call.input, 80)}</code>
          {call.approval ? (
            <span class={`badge approval-${call.approval.status}`}>
              {call.approval.status === 'waiting' ? 'awaiting approval' : call.approval.status}
              {call.approval.declineReason ? `: ${call.approval.declineReason}` : ''}
            </span>
          ) : null}
        </div>
      ))}
    </article>
  );
}

function ToolView({ item }: { item: ToolItem }) {
  const text = pretty(item.output);
  return (
    <article class={`msg tool${item.isError ? ' error' : ''}`} data-key={item.key}>
      <header>
        <span class="who">Tool result</span>
        <code>{item.toolName}</code>
        <time>{time(item.at)}</time>
      </header>
      {text.length <= 200 ? (
        <pre>{text}</pre>
      ) : (
        <details>
          <summary>{oneLine(item.output, 80)}</summary>
          <pre>{text}</pre>
        </details>
      )}
    </article>
  );
}
