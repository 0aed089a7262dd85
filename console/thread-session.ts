/**
 * Everything the thread page shows, kept current: the conversation (stored messages, then live events), the
 * thread's view (status, active run, approvals, queue, lanes, inbox counts), the event stream's state, and the
 * history of the state lanes. The page renders from its stores; actions call the gateway and the events that follow
 * update the stores.
 *
 * Opening order matters: the stream opens first and its events wait until the first page of messages is in, so
 * nothing that happens in between is lost, and what both carry (the active run, replayed from its start) is merged.
 */
import type { ThreadEvent } from '../protocol/events';
import { stateOf } from '../protocol/lanes';
import type { StoredMessage } from '../protocol/messages';
import type { ThreadTarget } from '../protocol/schemas';
import type { ThreadView } from '../protocol/views';
import { describeError, type ConsoleApi } from './api';
import { Conversation } from './conversation';
import { openThreadStream, type StreamState, type ThreadStream } from './events';
import { Store } from './store';

/** One accepted change of a state lane. */
export interface LaneChange {
  laneId: string;
  version: number;
  mode: string;
  cacheKey: string;
  value?: unknown;
  delta?: unknown;
  at: number;
  signalId: string;
}

const PAGE = 100;

export class ThreadSession {
  readonly conversation = new Conversation();
  /** Undefined while loading; null when the thread does not exist (yet). */
  readonly view = new Store<ThreadView | null | undefined>(undefined);
  readonly stream = new Store<{ state: StreamState; detail?: string }>({ state: 'connecting' });
  readonly error = new Store<string | null>(null);
  /** Older stored messages exist before the oldest one loaded. */
  readonly hasOlder = new Store(false);
  readonly laneHistory = new Store<LaneChange[]>([]);
  /** Bumped when an inbox record changed (the inbox panel reloads). */
  readonly inboxChanged = new Store(0);
  /** Bumped when a step ended (the step timeline reloads). */
  readonly stepsChanged = new Store(0);
  /** What this page queued, by input id: the queue panel shows the text. */
  readonly sent = new Map<string, string>();
  /** Events seen on this page (for tests and the curious: `document.body.dataset.events`). */
  eventCount = 0;

  private subscription: ThreadStream | null = null;
  private buffered: ThreadEvent[] | null = [];
  private viewTimer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private loadingOlder = false;

  constructor(
    private readonly api: ConsoleApi,
    readonly target: ThreadTarget,
  ) {}

  async open(): Promise<void> {
    this.subscription = openThreadStream({
      baseUrl: this.api.baseUrl,
      headers: this.api.authHeaders(),
      target: this.target,
      onEvent: (event) => this.onEvent(event),
      onState: (state, detail) => this.stream.set({ state, detail }),
    });
    await this.reload();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.viewTimer);
    this.subscription?.close();
  }

  /** Loads the view and the latest messages, then applies the events that arrived meanwhile. */
  private async reload(): Promise<void> {
    try {
      const [view, page] = await Promise.all([
        this.api.http.getThread(this.target),
        this.api.http.getMessages(this.target, { limit: PAGE }),
      ]);
      if (this.closed) return;
      this.view.set(view);
      if (page) {
        this.conversation.addStored(page.messages);
        this.addLaneHistory(page.messages);
        this.hasOlder.set(page.hasMore);
      }
      this.error.set(null);
    } catch (err) {
      this.error.set(describeError(err));
      if (this.view.get() === undefined) this.view.set(null);
    } finally {
      const waiting = this.buffered ?? [];
      this.buffered = null;
      for (const event of waiting) this.onEvent(event);
    }
  }

  async loadOlder(): Promise<void> {
    const before = this.conversation.oldestStoredId;
    if (!this.hasOlder.get() || this.loadingOlder || !before) return;
    this.loadingOlder = true;
    try {
      const page = await this.api.http.getMessages(this.target, { limit: PAGE, before });
      if (page) {
        this.conversation.addStored(page.messages, true);
        this.addLaneHistory(page.messages);
        this.hasOlder.set(page.hasMore);
      }
    } catch (err) {
      this.error.set(describeError(err));
    } finally {
      this.loadingOlder = false;
    }
  }

  /** Reads the view again soon (several events in a burst cause one read). */
  refreshView(delayMs = 150): void {
    clearTimeout(this.viewTimer);
    this.viewTimer = setTimeout(() => {
      this.api.http
        .getThread(this.target)
        .then((view) => !this.closed && this.view.set(view))
        .catch((err: unknown) => this.error.set(describeError(err)));
    }, delayMs);
  }

  private onEvent(event: ThreadEvent): void {
    if (this.buffered) {
      this.buffered.push(event);
      return;
    }
    this.eventCount += 1;
    if (event.type === 'snapshot') {
      // Events were lost to retention: the thread's state stands in for them.
      const payload = event.payload as { thread?: ThreadView | null; messages?: StoredMessage[] };
      if (payload.thread !== undefined) this.view.set(payload.thread);
      if (payload.messages) this.conversation.addStored(payload.messages);
      this.refreshView();
      return;
    }
    this.conversation.apply(event);
    switch (event.type) {
      case 'state-updated':
        this.addLaneChange(event);
        this.refreshView();
        break;
      case 'notification-updated':
        this.inboxChanged.update((n) => n + 1);
        this.refreshView();
        break;
      case 'step-finish':
      case 'step-interrupted':
        this.stepsChanged.update((n) => n + 1);
        this.refreshView();
        break;
      case 'start':
      case 'finish':
      case 'abort':
      case 'error':
        this.stepsChanged.update((n) => n + 1);
        this.refreshView(50);
        break;
      case 'tool-call-approval':
      case 'queue-updated':
      case 'data-user-message':
      case 'data-signal':
      case 'step-start':
        this.refreshView();
        break;
    }
  }

  private addLaneHistory(messages: StoredMessage[]): void {
    const changes: LaneChange[] = [];
    for (const message of messages) {
      const state = stateOf(message);
      if (!state || state.refreshOf) continue;
      changes.push({
        laneId: state.laneId,
        version: state.version,
        mode: state.mode,
        cacheKey: state.cacheKey,
        value: state.value,
        delta: state.delta,
        at: message.at,
        signalId: message.id,
      });
    }
    if (changes.length > 0) this.mergeLaneChanges(changes);
  }

  private addLaneChange(event: ThreadEvent): void {
    const p = event.payload as {
      id: string;
      version: number;
      currentMode: string;
      currentCacheKey: string;
      value?: unknown;
      signalId: string;
      updatedAt?: number;
    };
    this.mergeLaneChanges([
      {
        laneId: p.id,
        version: p.version,
        mode: p.currentMode,
        cacheKey: p.currentCacheKey,
        value: p.value,
        at: p.updatedAt ?? event.at,
        signalId: p.signalId,
      },
    ]);
  }

  private mergeLaneChanges(changes: LaneChange[]): void {
    const known = new Set(this.laneHistory.get().map((c) => c.signalId));
    const fresh = changes.filter((c) => !known.has(c.signalId));
    if (fresh.length === 0) return;
    this.laneHistory.set([...this.laneHistory.get(), ...fresh].sort((a, b) => b.at - a.at));
  }
}
