/**
 * The Threadline client SDK over HTTP (behaviour §6): the same methods as `connect()`, talking to a gateway with `fetch`.
 * Runs in browsers and Node (only `fetch`, `ReadableStream`, `TextDecoder`, `AbortController`).
 */
import type { SubscribeOptions } from '../protocol/api';
import { errorFromResponse, isRetryable, retryDelay, ThreadlineHttpError } from './errors';
import { openSubscription, type HttpThreadSubscription, type ReconnectOptions } from './subscription';
import type {
  AbortResult,
  HttpClientOptions,
  HttpSendResult,
  InputResult,
  MessageInput,
  MessagesPage,
  NotificationInput,
  NotificationPage,
  NotificationQuery,
  NotificationRecord,
  NotificationSendResult,
  SendOptions,
  SendTarget,
  SignalInput,
  StateSignalInput,
  ThreadTarget,
  ThreadView,
  ToolApprovalRequest,
  ToolApprovalResult,
} from './types';
import type { AgentSummary } from '../protocol/api';
import type { ForkRequest, StepList, StepPrompt } from '../protocol/time-travel';

type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

interface CallInit {
  body?: unknown;
  query?: Query;
  headers?: Record<string, string>;
  /** Send again after a network error or a 5xx/408/429 (only for requests that are safe to repeat). */
  retry?: boolean;
  /** Answer `null` for a 404 instead of throwing (reads of a thread that does not exist). */
  nullOn404?: boolean;
  /** The path is outside the API prefix (`/health`). */
  root?: boolean;
}

export interface HttpSubscribeOptions extends SubscribeOptions {
  /** Reconnect policy of `stream` (and the default of `processDataStream`). Default: no reconnect. */
  reconnect?: boolean | ReconnectOptions;
}

/** A random v4 UUID; `crypto.randomUUID` is missing in insecure browser contexts, `getRandomValues` is not. */
function newId(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const enc = encodeURIComponent;
/** A send or read waits at most this long for a `Retry-After`; past it, the error goes to the caller. */
const MAX_RETRY_AFTER_MS = 5_000;
const threadPath = (t: ThreadTarget) => `/threads/${enc(t.resourceId)}/${enc(t.threadId)}`;

/** Only the target's own fields go on the wire (a caller's object may carry more). */
function targetFields(target: SendTarget): SendTarget {
  const fields: SendTarget = { resourceId: target.resourceId, threadId: target.threadId };
  if (target.runId !== undefined) fields.runId = target.runId;
  if (target.ifActive !== undefined) fields.ifActive = target.ifActive;
  if (target.ifIdle !== undefined) fields.ifIdle = target.ifIdle;
  return fields;
}

function ownId(value: unknown, field = 'id'): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const id = (value as Record<string, unknown>)[field];
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * The send result as `connect()` returns it, without the fields the gateway adds for `@mastra/client-js`: its
 * `signal` echo, and `runId` where no run is involved (Mastra's answer puts the signal's id there; run ids never
 * equal an input's id).
 */
function threadlineResult({ signal: _signal, ...answer }: InputResult & { signal?: unknown }): InputResult {
  if (answer.runId !== answer.signalId) return answer;
  const { runId: _runId, ...result } = answer;
  return result;
}

export class ThreadlineHttpClient {
  private readonly base: string;
  private readonly prefix: string;
  private readonly fetchFn: typeof fetch;
  private readonly headers: Record<string, string>;
  private readonly retries: number;

  constructor(options: HttpClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.prefix = options.apiPrefix ?? '/api';
    // Called unbound, a browser's fetch throws "Illegal invocation".
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.headers = {
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      ...options.headers,
    };
    this.retries = options.retries ?? 2;
  }

  /** The behaviour §6 methods for one agent. */
  agent(agentId: string): HttpAgent {
    return new HttpAgent(this, agentId);
  }

  /** `GET /api/agents`: the registered agents by id. */
  listAgents(): Promise<Record<string, AgentSummary>> {
    return this.request('GET', '/agents', { retry: true });
  }

  /** `GET /health`. */
  health(): Promise<{ ok: boolean }> {
    return this.request('GET', '/health', { retry: true, root: true });
  }

  /** The thread's state (status, active run, queue, lanes), or null when it does not exist. */
  getThread(target: ThreadTarget): Promise<ThreadView | null> {
    return this.request('GET', threadPath(target), { retry: true, nullOn404: true });
  }

  /** Stored messages, newest last; `before` is a message id to page backwards from. Null when there is no thread. */
  getMessages(target: ThreadTarget, page: { limit?: number; before?: string } = {}): Promise<MessagesPage | null> {
    return this.request('GET', `${threadPath(target)}/messages`, {
      query: { limit: page.limit, before: page.before },
      retry: true,
      nullOn404: true,
    });
  }

  /** The thread's inbox, filtered and paged. Null when there is no thread. */
  listNotifications(target: ThreadTarget, query: NotificationQuery = {}): Promise<NotificationPage | null> {
    return this.request('GET', `${threadPath(target)}/notifications`, {
      query: { ...query },
      retry: true,
      nullOn404: true,
    });
  }

  /** Records that left the inbox beyond its bound (kept by the bus), newest first. */
  listArchivedNotifications(
    target: ThreadTarget,
    page: { limit?: number; cursor?: string } = {},
  ): Promise<{ notifications: NotificationRecord[]; nextCursor: string | null }> {
    return this.request('GET', `${threadPath(target)}/notifications/archive`, { query: { ...page }, retry: true });
  }

  markNotificationSeen(target: ThreadTarget, id: string): Promise<NotificationRecord> {
    return this.notificationAction(target, id, 'seen');
  }

  dismissNotification(target: ThreadTarget, id: string): Promise<NotificationRecord> {
    return this.notificationAction(target, id, 'dismiss');
  }

  archiveNotification(target: ThreadTarget, id: string): Promise<NotificationRecord> {
    return this.notificationAction(target, id, 'archive');
  }

  /** The thread's steps (model calls), oldest first, with the thread-wide `step` numbers. Null when there is no thread. */
  listSteps(target: ThreadTarget): Promise<StepList | null> {
    return this.request('GET', `${threadPath(target)}/steps`, { retry: true, nullOn404: true });
  }

  /** What the model received at step `step`: system prompt, tools, messages and the provider request body. */
  inspectStep(target: ThreadTarget, step: number): Promise<StepPrompt> {
    return this.request('GET', `${threadPath(target)}/steps/${enc(String(step))}/prompt`, { retry: true });
  }

  /**
   * Starts `request.to` from this thread as it stood before step `request.atStep` (re-running it, with
   * `request.agentId` when given); answers the fork's view. 409 when `to` exists. Not retried: a fork is not
   * idempotent (a resend would meet the fork it made, 409).
   */
  forkThread(source: ThreadTarget, request: ForkRequest): Promise<ThreadView> {
    const to = { resourceId: request.to.resourceId, threadId: request.to.threadId };
    const body = { atStep: request.atStep, to, ...(request.agentId !== undefined ? { agentId: request.agentId } : {}) };
    return this.request('POST', `${threadPath(source)}/fork`, { body });
  }

  private notificationAction(target: ThreadTarget, id: string, action: string): Promise<NotificationRecord> {
    // Setting a status twice leaves it set: safe to repeat.
    return this.request('POST', `${threadPath(target)}/notifications/${enc(id)}/${action}`, { body: {}, retry: true });
  }

  /** One request; non-2xx answers throw `ThreadlineHttpError`. @internal */
  async request<T>(method: 'GET' | 'POST', path: string, init: CallInit = {}): Promise<T> {
    const url = this.url(path, init);
    const headers: Record<string, string> = { accept: 'application/json', ...this.headers, ...init.headers };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const attempts = init.retry ? this.retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      const backoff = Math.min(1_000, 100 * 2 ** (attempt - 1));
      const again = (err?: unknown) =>
        new Promise((resolve) => setTimeout(resolve, retryDelay(err, backoff, MAX_RETRY_AFTER_MS)));
      let response: Response;
      try {
        response = await this.fetchFn(url, { method, headers, body });
      } catch (err) {
        // fetch rejects with a TypeError when the network failed (in browsers and Node alike).
        if (attempt < attempts && err instanceof TypeError) {
          await again();
          continue;
        }
        throw err;
      }
      if (response.ok) return (await response.json()) as T;
      const error = await errorFromResponse(response);
      // Only "no such thread" is null, not "no such route" (a gateway without this route).
      if (
        error.status === 404 &&
        init.nullOn404 &&
        error.type === 'NotFoundError' &&
        !/^No route /.test(error.message)
      ) {
        return null as T;
      }
      if (attempt < attempts && isRetryable(error) && (error.retryAfterMs ?? 0) <= MAX_RETRY_AFTER_MS) {
        await again(error);
        continue;
      }
      throw error;
    }
  }

  /** Opens `POST /agents/:agentId/threads/subscribe` resuming after `lastEventId`. @internal */
  async openStream(
    agentId: string,
    target: ThreadTarget,
    options: { hideSignals?: boolean },
    lastEventId: string | undefined,
    signal: AbortSignal,
  ): Promise<Response> {
    const headers: Record<string, string> = {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      ...this.headers,
    };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const body = {
      resourceId: target.resourceId,
      threadId: target.threadId,
      ...(options.hideSignals ? { hideSignals: true } : {}),
      // Also in the body, for proxies that drop unfamiliar headers; the gateway prefers the header.
      ...(lastEventId !== undefined ? { lastEventId } : {}),
    };
    const url = this.url(`/agents/${enc(agentId)}/threads/subscribe`, {});
    const response = await this.fetchFn(url, { method: 'POST', headers, body: JSON.stringify(body), signal });
    if (!response.ok) throw await errorFromResponse(response);
    const type = response.headers.get('content-type') ?? '';
    if (!type.startsWith('text/event-stream')) {
      await response.body?.cancel().catch(() => undefined);
      throw new ThreadlineHttpError(
        response.status,
        'InvalidResponse',
        `Expected an event stream from ${url}, got "${type || 'no content type'}". Is baseUrl the Threadline gateway?`,
      );
    }
    return response;
  }

  private url(path: string, init: CallInit): string {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(init.query ?? {})) {
      if (value === undefined) continue;
      search.set(key, Array.isArray(value) ? value.join(',') : String(value));
    }
    const query = search.toString();
    return `${this.base}${init.root ? '' : this.prefix}${path}${query ? `?${query}` : ''}`;
  }
}

/** One agent's view of threads over HTTP: the behaviour §6 client API. */
export class HttpAgent {
  constructor(
    private readonly client: ThreadlineHttpClient,
    readonly agentId: string,
  ) {}

  private path(route: string): string {
    return `/agents/${enc(this.agentId)}/${route}`;
  }

  private async send(route: string, body: object, key: string): Promise<HttpSendResult> {
    const answer = await this.client.request<InputResult & { signal?: unknown }>('POST', this.path(route), {
      body,
      headers: { 'idempotency-key': key },
      retry: true,
    });
    // The gateway answers once the thread has recorded the input.
    return { ...threadlineResult(answer), persisted: Promise.resolve() };
  }

  /**
   * Joins the active run at the next step boundary, or starts a run.
   * @example await agent.sendMessage('Hello!', { resourceId: 'user_123', threadId: 'thread_456' })
   */
  sendMessage(message: MessageInput, target: SendTarget, options: SendOptions = {}): Promise<HttpSendResult> {
    const key = ownId(message) ?? options.id ?? newId();
    return this.send('send-message', { message, ...targetFields(target) }, key);
  }

  /** Runs after the active run finishes (in acceptance order), or starts a run when idle. */
  queueMessage(message: MessageInput, target: SendTarget, options: SendOptions = {}): Promise<HttpSendResult> {
    const key = ownId(message) ?? options.id ?? newId();
    return this.send('queue-message', { message, ...targetFields(target) }, key);
  }

  /**
   * System-generated context (behaviour §2.2): `reactive` (tag `system-reminder`), `notification`, `user`.
   * @example await agent.sendSignal({ type: 'notification', contents: 'CI failed' }, { ...thread, ifIdle: { behavior: 'persist' } })
   */
  sendSignal(signal: SignalInput, target: SendTarget, options: SendOptions = {}): Promise<HttpSendResult> {
    const key = ownId(signal) ?? options.id ?? newId();
    return this.send('signals', { signal, ...targetFields(target) }, key);
  }

  /**
   * Keeps a state lane current (behaviour §3.1); an unchanged `cacheKey` and `mode` answer `action: 'skipped'`.
   * @example await agent.sendStateSignal({ id: 'browser', cacheKey: url, contents: `Open page: ${url}` }, { ...thread, ifIdle: { behavior: 'persist' } })
   */
  sendStateSignal(signal: StateSignalInput, target: SendTarget, options: SendOptions = {}): Promise<HttpSendResult> {
    const key = ownId(signal, 'signalId') ?? options.id ?? newId();
    return this.send('state-signals', { signal, ...targetFields(target) }, key);
  }

  /**
   * Drops one or more notifications into the thread's inbox (behaviour §4); the agent's delivery policy decides what the
   * model sees when. Not resent after a network error (use `dedupeKey` to make a resend coalesce).
   */
  sendNotificationSignal(
    input: NotificationInput | NotificationInput[],
    target: ThreadTarget,
    options: SendOptions = {},
  ): Promise<NotificationSendResult> {
    const body = {
      ...(Array.isArray(input) ? { notifications: input } : { notification: input }),
      resourceId: target.resourceId,
      threadId: target.threadId,
    };
    return this.client.request('POST', this.path('notifications'), {
      body,
      headers: options.id ? { 'idempotency-key': options.id } : {},
    });
  }

  /** Approves or declines a tool call the run is parked on (behaviour §2.4); resumed events arrive on subscriptions. */
  sendToolApproval(request: ToolApprovalRequest): Promise<ToolApprovalResult> {
    const body: Record<string, unknown> = {
      resourceId: request.resourceId,
      threadId: request.threadId,
      toolCallId: request.toolCallId,
      approved: request.approved,
    };
    if (request.resumeData !== undefined) body.resumeData = request.resumeData;
    if (request.declineReason !== undefined) body.declineReason = request.declineReason;
    return this.client.request('POST', this.path('send-tool-approval'), { body });
  }

  /** Stops the active run. Queued runs go next unless `clearPendingSignals`. Not resent: a late abort could stop the next run. */
  abortThread(target: ThreadTarget & { clearPendingSignals?: boolean }): Promise<AbortResult> {
    return this.client.request('POST', this.path('threads/abort'), {
      body: {
        resourceId: target.resourceId,
        threadId: target.threadId,
        ...(target.clearPendingSignals !== undefined ? { clearPendingSignals: target.clearPendingSignals } : {}),
      },
    });
  }

  /** Removes not-yet-started queued messages; returns the ids actually removed. */
  cancelQueuedMessages(target: ThreadTarget & { signalIds: string[] }): Promise<{ cancelledSignalIds: string[] }> {
    return this.client.request('POST', this.path('threads/cancel-queued'), {
      body: { resourceId: target.resourceId, threadId: target.threadId, signalIds: target.signalIds },
      retry: true,
    });
  }

  /**
   * Subscribes to the thread's events. Resolves once the gateway is subscribed (an input sent next is seen); a 4xx
   * (bad thread, no access, unknown agent) rejects here.
   * @example
   * const sub = await agent.subscribeToThread(thread);
   * await sub.processDataStream({ onChunk: (e) => { if (e.type === 'text-delta') render(e.payload) }, reconnect: true });
   */
  subscribeToThread(target: ThreadTarget, options: HttpSubscribeOptions = {}): Promise<HttpThreadSubscription> {
    const thread = { resourceId: target.resourceId, threadId: target.threadId };
    return openSubscription(
      (lastEventId, signal) => this.client.openStream(this.agentId, thread, options, lastEventId, signal),
      { lastEventId: options.lastEventId, reconnect: options.reconnect },
    );
  }

  getThread(target: ThreadTarget): Promise<ThreadView | null> {
    return this.client.getThread(target);
  }

  getMessages(target: ThreadTarget, page?: { limit?: number; before?: string }): Promise<MessagesPage | null> {
    return this.client.getMessages(target, page);
  }

  listNotifications(target: ThreadTarget, query?: NotificationQuery): Promise<NotificationPage | null> {
    return this.client.listNotifications(target, query);
  }

  /** Records that left the inbox beyond its bound (kept by the bus), newest first. */
  listArchivedNotifications(
    target: ThreadTarget,
    page?: { limit?: number; cursor?: string },
  ): Promise<{ notifications: NotificationRecord[]; nextCursor: string | null }> {
    return this.client.listArchivedNotifications(target, page);
  }

  markNotificationSeen(target: ThreadTarget, id: string): Promise<NotificationRecord> {
    return this.client.markNotificationSeen(target, id);
  }

  dismissNotification(target: ThreadTarget, id: string): Promise<NotificationRecord> {
    return this.client.dismissNotification(target, id);
  }

  archiveNotification(target: ThreadTarget, id: string): Promise<NotificationRecord> {
    return this.client.archiveNotification(target, id);
  }
}

/**
 * The Threadline SDK over HTTP, for browsers and Node.
 * @example
 * const client = createHttpClient({ baseUrl: 'http://127.0.0.1:4111', apiKey: 'key-a' });
 * const agent = client.agent('assistant');
 * await agent.sendMessage('Hello!', { resourceId: 'user_123', threadId: 'thread_456' });
 */
export function createHttpClient(options: HttpClientOptions): ThreadlineHttpClient {
  return new ThreadlineHttpClient(options);
}
