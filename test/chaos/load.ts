/**
 * The load: one driver per thread, through both gateways, sending a mix of every input the API takes with
 * client-chosen ids, answering tool approvals, aborting now and then. Every send and its answer is recorded for the
 * invariant checks; a send whose outcome is unknown is sent again with the same id, as a real integration would.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ThreadEvent } from '../../protocol/events';
import type { ThreadView } from '../../protocol/views';
import { send, type Gateways, type Outcome } from './http';
import type { ApprovalRecord, InputAction, InputRecord, NotificationSend } from './invariants';
import { TOOL_MARKER } from './model';
import type { Rng } from './random';

/** How long a send keeps trying (a Temporal server restart must fit in it). */
const SEND_DEADLINE_MS = 4 * 60_000;

const ops = {
  send: 22,
  queue: 14,
  signal: 20,
  state: 12,
  notify: 8,
  interrupt: 6,
  tool: 10,
  abort: 4,
  resend: 4,
} as const;
export type LoadOp = keyof typeof ops;

interface InputAnswer {
  accepted: boolean;
  action: InputAction;
  runId?: string;
  signalId: string;
  duplicate?: boolean;
}

/** What every driver records, shared. */
export class LoadLog {
  readonly inputs: InputRecord[] = [];
  readonly notifications: NotificationSend[] = [];
  readonly approvals: ApprovalRecord[] = [];
  readonly abortedThreads = new Set<string>();
  /** Runs seen ending with `abort` or `error` (subscribers, and the streams at the end). */
  readonly brokenRuns = new Set<string>();
  readonly opCounts: Partial<Record<LoadOp, number>> = {};
  aborts = { sent: 0, aborted: 0, unknown: 0 };
  retries = 0;
  /** Skipped state signals are not remembered (never in history): sent again unchanged, they are skipped again. */
  resends = { sent: 0, duplicateAnswers: 0, skippedAgain: 0 };
}

export interface ThreadPlan {
  /** `<resourceId>/<threadId>`, as the findings name it. */
  name: string;
  resourceId: string;
  threadId: string;
  agentId: 'tester' | 'admin';
}

export class ThreadDriver {
  private seq = 0;
  private readonly waitingApprovals = new Set<string>();
  private readonly decided = new Map<string, ApprovalRecord>();
  /** Accepted inputs with the request that carried them, for resends. */
  private readonly answered: { record: InputRecord; path: string; body: unknown }[] = [];

  constructor(
    readonly plan: ThreadPlan,
    private readonly gateways: Gateways,
    private readonly rng: Rng,
    private readonly log: LoadLog,
    /** Mean pause between this thread's inputs. */
    private readonly thinkMs: number,
  ) {}

  /** Subscribers pass every event here: approvals requested are answered by the driver. */
  onEvent = (event: ThreadEvent): void => {
    if ((event.type === 'abort' || event.type === 'error') && event.runId) this.log.brokenRuns.add(event.runId);
    if (event.type !== 'tool-call-approval') return;
    const payload = event.payload as { toolCallId?: string; status?: string };
    if (payload.status === 'waiting' && payload.toolCallId) this.waitingApprovals.add(payload.toolCallId);
  };

  /** Sends until `until` (ms since the epoch). */
  async run(until: number): Promise<void> {
    await sleep(this.rng.between(0, this.thinkMs));
    while (Date.now() < until) {
      await this.answerApprovals();
      let op = this.rng.weighted(ops);
      if (op === 'tool' && this.plan.agentId !== 'admin') op = 'send';
      this.log.opCounts[op] = (this.log.opCounts[op] ?? 0) + 1;
      await this.perform(op);
      await sleep(this.rng.between(0.3, 1.7) * this.thinkMs);
    }
  }

  /**
   * After the load: answers approvals until the thread is idle with nothing queued, or `deadline` passes. Answers the
   * last view read, `missing` when the thread does not exist (404), null when no read was answered.
   */
  async drain(deadline: number): Promise<ThreadView | 'missing' | null> {
    let view: ThreadView | null = null;
    while (Date.now() < deadline) {
      const read = await send<ThreadView>(this.gateways, this.threadPath(), { method: 'GET', deadline });
      if (read.kind === 'refused' && read.status === 404) return 'missing';
      if (read.kind === 'ok') {
        view = read.body;
        if (view.status === 'idle' && view.queue.length === 0 && !view.activeRun) return view;
        for (const approval of view.activeRun?.approvals ?? []) {
          if (approval.status === 'waiting') this.waitingApprovals.add(approval.toolCallId);
        }
        await this.answerApprovals();
      }
      await sleep(this.rng.between(1_000, 3_000));
    }
    return view;
  }

  threadPath(): string {
    return `/api/threads/${encodeURIComponent(this.plan.resourceId)}/${encodeURIComponent(this.plan.threadId)}`;
  }

  private async perform(op: LoadOp): Promise<void> {
    const text = `chaos ${this.plan.threadId} #${this.seq + 1}`;
    switch (op) {
      case 'send':
        return this.input('send-message', { message: this.message(text), ...this.behaviours(0.4) });
      case 'queue':
        return this.input('queue-message', { message: this.message(text) });
      case 'interrupt':
        return this.input('send-message', { message: this.message(text), ifActive: { behavior: 'interrupt' } });
      case 'tool':
        return this.input('send-message', { message: this.message(`${text}: please ${TOOL_MARKER}`) });
      case 'signal': {
        const type = this.rng.pick(['user', 'reactive', 'notification'] as const);
        const signal = { id: this.nextId(), type, contents: `${type} ${text}`, attributes: { source: 'chaos' } };
        return this.input('signals', { signal, ...this.behaviours(0.9) }, signal.id);
      }
      case 'state': {
        const lane = this.rng.pick(['browser', 'editor']);
        const tabs = this.rng.int(1, 3);
        const signal = {
          id: lane,
          signalId: this.nextId(),
          mode: 'snapshot',
          cacheKey: `${lane}:${tabs}`,
          contents: `${lane} has ${tabs} open tabs`,
          value: { tabs },
        };
        const target = this.rng.chance(0.5) ? { ifIdle: { behavior: 'persist' } } : this.behaviours(0.5);
        return this.input('state-signals', { signal, ...target }, signal.signalId);
      }
      case 'notify':
        return this.notify();
      case 'abort':
        return this.abort();
      case 'resend':
        return this.resend();
    }
  }

  private message(contents: string): { id: string; contents: string } {
    return { id: this.nextId(), contents };
  }

  private nextId(): string {
    this.seq++;
    return `${this.plan.threadId}-i${this.seq}`;
  }

  /** Random `ifActive` / `ifIdle` behaviours, with probability `p`; every behaviour comes up. */
  private behaviours(p: number): Record<string, unknown> {
    if (!this.rng.chance(p)) return {};
    const target: Record<string, unknown> = {};
    if (this.rng.chance(0.7)) {
      target.ifActive = { behavior: this.rng.pick(['deliver', 'persist', 'discard', 'interrupt']) };
    }
    if (this.rng.chance(0.7)) target.ifIdle = { behavior: this.rng.pick(['wake', 'persist', 'discard']) };
    return target;
  }

  private async input(route: InputRecord['route'], body: Record<string, unknown>, id?: string): Promise<void> {
    const inputId = id ?? (body.message as { id: string }).id;
    const record: InputRecord = {
      id: inputId,
      thread: this.plan.name,
      route,
      outcome: 'unknown',
      freshAnswers: 0,
      attempts: 0,
      sentAt: Date.now(),
    };
    this.log.inputs.push(record);
    const path = `/api/agents/${this.plan.agentId}/${route}`;
    const request = { ...body, resourceId: this.plan.resourceId, threadId: this.plan.threadId };
    const outcome = await send<InputAnswer>(this.gateways, path, {
      body: request,
      headers: { 'idempotency-key': inputId },
      deadline: record.sentAt + SEND_DEADLINE_MS,
      onRetry: () => this.log.retries++,
    });
    record.attempts = outcome.attempts;
    this.recordAnswer(record, outcome);
    if (record.outcome === 'accepted') this.answered.push({ record, path, body: request });
  }

  private recordAnswer(record: InputRecord, outcome: Outcome<InputAnswer>): void {
    if (outcome.kind === 'refused') {
      record.outcome = 'refused';
      record.refusal = `${outcome.status} ${outcome.message}`;
      return;
    }
    if (outcome.kind === 'unknown') {
      record.refusal = outcome.error;
      return;
    }
    record.outcome = 'accepted';
    record.latencyMs = Date.now() - record.sentAt;
    record.action = outcome.body.action;
    if (outcome.body.runId !== undefined && outcome.body.runId !== outcome.body.signalId) {
      record.runId = outcome.body.runId;
    }
    if (!outcome.body.duplicate) record.freshAnswers++;
  }

  /** A client that lost an answer sends the same request again: it must answer the first result, as a duplicate. */
  private async resend(): Promise<void> {
    if (this.answered.length === 0) return;
    const earlier = this.rng.pick(this.answered);
    this.log.resends.sent++;
    const outcome = await send<InputAnswer>(this.gateways, earlier.path, {
      body: earlier.body,
      headers: { 'idempotency-key': earlier.record.id },
      deadline: Date.now() + SEND_DEADLINE_MS,
      onRetry: () => this.log.retries++,
    });
    if (outcome.kind !== 'ok') return;
    if (outcome.body.duplicate) this.log.resends.duplicateAnswers++;
    else if (outcome.body.action !== 'skipped' || earlier.record.action !== 'skipped') earlier.record.freshAnswers++;
    else this.log.resends.skippedAgain++;
  }

  private async notify(): Promise<void> {
    const key = `${this.plan.threadId}-n${++this.seq}`;
    const notifications = Array.from({ length: this.rng.int(2, 6) }, (_, i) => ({
      source: 'chaos',
      kind: this.rng.pick(['ci', 'deploy', 'mention']),
      summary: `burst ${key} #${i + 1}`,
      priority: this.rng.pick(['urgent', 'high', 'medium', 'low']),
    }));
    const send_: NotificationSend = { thread: this.plan.name, key, outcome: 'unknown', ids: [], freshAnswers: 0 };
    this.log.notifications.push(send_);
    const outcome = await send<{ notifications: { id: string }[]; duplicate?: boolean }>(
      this.gateways,
      `/api/agents/${this.plan.agentId}/notifications`,
      {
        body: { notifications, resourceId: this.plan.resourceId, threadId: this.plan.threadId },
        headers: { 'idempotency-key': key },
        deadline: Date.now() + SEND_DEADLINE_MS,
        onRetry: () => this.log.retries++,
      },
    );
    if (outcome.kind === 'refused') send_.outcome = 'refused';
    if (outcome.kind !== 'ok') return;
    send_.outcome = 'accepted';
    send_.ids = outcome.body.notifications.map((n) => n.id);
    if (!outcome.body.duplicate) send_.freshAnswers++;
  }

  private async abort(): Promise<void> {
    // Not resent: a late abort could stop the next run (http-client does the same). Any abort may move inputs.
    this.log.abortedThreads.add(this.plan.name);
    this.log.aborts.sent++;
    const outcome = await send<{ aborted: boolean }>(this.gateways, `/api/agents/${this.plan.agentId}/threads/abort`, {
      body: { resourceId: this.plan.resourceId, threadId: this.plan.threadId, clearPendingSignals: false },
      deadline: Date.now() + SEND_DEADLINE_MS,
      once: true,
    });
    if (outcome.kind === 'ok' && outcome.body.aborted) this.log.aborts.aborted++;
    if (outcome.kind === 'unknown') this.log.aborts.unknown++;
  }

  /** Answers every approval seen waiting; one decision per call, sent again only if no attempt got an answer. */
  private async answerApprovals(): Promise<void> {
    for (const toolCallId of [...this.waitingApprovals]) {
      this.waitingApprovals.delete(toolCallId);
      let record = this.decided.get(toolCallId);
      if (record?.outcome === 'accepted') continue;
      if (!record) {
        record = { thread: this.plan.name, toolCallId, approved: this.rng.chance(0.7), outcome: 'unknown' };
        this.decided.set(toolCallId, record);
        this.log.approvals.push(record);
      }
      const outcome = await send(this.gateways, `/api/agents/${this.plan.agentId}/send-tool-approval`, {
        body: {
          resourceId: this.plan.resourceId,
          threadId: this.plan.threadId,
          toolCallId,
          approved: record.approved,
          ...(!record.approved && { declineReason: 'chaos says no' }),
        },
        deadline: Date.now() + SEND_DEADLINE_MS,
        onRetry: () => this.log.retries++,
      });
      if (outcome.kind === 'ok') record.outcome = 'accepted';
      else if (outcome.kind === 'refused') {
        // 409: decided already (this decision, by an earlier attempt whose answer was lost); 404: nothing waits for it.
        record.outcome = outcome.status === 409 ? 'accepted' : outcome.status === 404 ? 'gone' : 'refused';
      }
    }
  }
}
