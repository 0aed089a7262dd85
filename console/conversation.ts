/**
 * The conversation as the console shows it: the stored messages (`GET …/messages`, paged backwards) and the live
 * events on top, merged into one list of items with stable keys, so an event that repeats a stored message (the
 * active run's events replayed from its start when the page opens) updates that message instead of adding it twice.
 *
 * Keys: an input is `in:<id>`, a model step `step:<runId>:<stepNumber>`, a tool result `tool:<toolCallId>`. Items are
 * mutable; each has a `store` that re-renders its own view once per frame while its step streams, and the list's
 * store changes only when items are added or removed.
 */
import type { ThreadEvent } from '../protocol/events';
import type { AssistantMessage, InputMessage, StoredMessage, ToolMessage } from '../protocol/messages';
import type { Attributes, Contents } from '../protocol/schemas';
import type { ApprovalStatus } from '../protocol/views';
import { frameBatch, Store } from './store';

export interface ToolCallView {
  toolCallId: string;
  toolName: string;
  input: unknown;
  approval?: { status: ApprovalStatus; declineReason?: string };
}

interface ItemBase {
  key: string;
  at: number;
  /** Re-renders this item's view; touched once per frame at most. */
  store: Store<number>;
}

export interface InputItem extends ItemBase {
  kind: 'input';
  id: string;
  type: string;
  tagName?: string;
  contents: Contents;
  attributes?: Attributes;
  runId?: string;
  /** Sent from this page and not yet echoed by the thread: the send's answer, or `sending`. */
  pending?: string;
  persisted?: boolean;
}

export interface StepItem extends ItemBase {
  kind: 'step';
  runId: string;
  stepNumber: number;
  agentId?: string;
  text: string;
  reasoning: string;
  toolCalls: ToolCallView[];
  status: 'streaming' | 'done' | 'interrupted' | 'aborted' | 'failed';
  /** A stored step whose events are being replayed: its deltas are already in `text`. */
  replaying?: boolean;
  retries?: number;
}

export interface ToolItem extends ItemBase {
  kind: 'tool';
  toolCallId: string;
  toolName: string;
  output: unknown;
  isError?: boolean;
}

export interface NoticeItem extends ItemBase {
  kind: 'notice';
  tone: 'error' | 'info';
  text: string;
}

export type Item = InputItem | StepItem | ToolItem | NoticeItem;

const touch = (item: Item) => frameBatch.touch(() => item.store.set(item.store.get() + 1));

export class Conversation {
  /** The items, oldest first. Replaced (never mutated) when items are added, so views can compare it. */
  readonly items = new Store<Item[]>([]);
  private readonly byKey = new Map<string, Item>();
  /** Tool call id → the step that made it. */
  private readonly callSteps = new Map<string, StepItem>();
  /** Run id → its step in progress. */
  private readonly currentStep = new Map<string, StepItem>();
  private readonly runAgents = new Map<string, string>();

  get size(): number {
    return this.items.get().length;
  }

  /** The oldest stored message's id (paging backwards starts before it). */
  oldestStoredId: string | undefined;

  /** Adds a page of stored messages: the first page, or an older one (`older`) in front of what is there. */
  addStored(messages: StoredMessage[], older = false): void {
    const fresh: Item[] = [];
    for (const message of messages) {
      for (const item of fromStored(message, this.runAgents)) {
        const existing = this.byKey.get(item.key);
        if (existing) {
          // A live step that has since been stored: the stored content is final.
          if (existing.kind === 'step' && item.kind === 'step' && existing.status === 'streaming') {
            Object.assign(existing, { text: item.text, reasoning: item.reasoning, toolCalls: item.toolCalls });
            touch(existing);
          }
          continue;
        }
        this.index(item);
        fresh.push(item);
      }
    }
    if (messages.length > 0 && (older || this.oldestStoredId === undefined)) this.oldestStoredId = messages[0].id;
    if (fresh.length === 0) return;
    this.items.set(older ? [...fresh, ...this.items.get()] : [...this.items.get(), ...fresh]);
  }

  /** A message this page just sent, shown until the thread echoes it (same id, so the echo takes its place). */
  addPending(id: string, contents: Contents, pending: string, extra: Partial<InputItem> = {}): void {
    const existing = this.byKey.get(`in:${id}`);
    if (existing) return;
    this.append({
      kind: 'input',
      key: `in:${id}`,
      id,
      type: 'user',
      contents,
      at: Date.now(),
      pending,
      store: new Store(0),
      ...extra,
    });
  }

  /** The send's answer on a pending message (`deliver`, `queued`, `discard`, …). */
  setPending(id: string, pending: string | undefined): void {
    const item = this.byKey.get(`in:${id}`);
    if (item?.kind !== 'input' || item.pending === undefined) return;
    item.pending = pending;
    touch(item);
  }

  /** Removes a pending message whose send failed. */
  dropPending(id: string): void {
    const item = this.byKey.get(`in:${id}`);
    if (item?.kind !== 'input' || item.pending === undefined) return;
    this.byKey.delete(item.key);
    this.items.set(this.items.get().filter((i) => i !== item));
  }

  /** Applies one live event. Returns false for events that are not about the conversation. */
  apply(event: ThreadEvent): boolean {
    const p = (event.payload ?? {}) as Record<string, unknown>;
    const runId = event.runId;
    switch (event.type) {
      case 'data-user-message':
      case 'data-signal': {
        const id = String(p.id ?? event.id);
        const existing = this.byKey.get(`in:${id}`);
        if (existing?.kind === 'input') {
          if (existing.pending !== undefined) {
            existing.pending = undefined;
            existing.runId = runId;
            touch(existing);
          }
          return true;
        }
        this.append({
          kind: 'input',
          key: `in:${id}`,
          id,
          type: String(p.type ?? 'user'),
          tagName: p.tagName as string | undefined,
          contents: (p.contents ?? '') as Contents,
          attributes: p.attributes as Attributes | undefined,
          runId,
          persisted: p.persisted === true,
          at: event.at,
          store: new Store(0),
        });
        return true;
      }
      case 'start':
        if (runId && typeof p.agentId === 'string') this.runAgents.set(runId, p.agentId);
        return true;
      case 'step-start': {
        if (!runId) return true;
        const stepNumber = Number(p.stepNumber);
        const key = `step:${runId}:${stepNumber}`;
        const existing = this.byKey.get(key);
        if (existing?.kind === 'step') {
          existing.replaying = existing.status === 'done';
          this.currentStep.set(runId, existing);
          return true;
        }
        const step: StepItem = {
          kind: 'step',
          key,
          runId,
          stepNumber,
          agentId: this.runAgents.get(runId),
          text: '',
          reasoning: '',
          toolCalls: [],
          status: 'streaming',
          at: event.at,
          store: new Store(0),
        };
        this.currentStep.set(runId, step);
        this.append(step);
        return true;
      }
      case 'text-delta':
      case 'reasoning-delta': {
        const step = runId ? this.currentStep.get(runId) : undefined;
        if (!step || step.replaying || step.status !== 'streaming') return true;
        if (event.type === 'text-delta') step.text += String(p.text ?? '');
        else step.reasoning += String(p.text ?? '');
        touch(step);
        return true;
      }
      case 'tool-call': {
        const step = runId ? this.currentStep.get(runId) : undefined;
        const toolCallId = String(p.toolCallId);
        if (!step || this.callSteps.has(toolCallId)) return true;
        step.toolCalls.push({ toolCallId, toolName: String(p.toolName), input: p.input });
        this.callSteps.set(toolCallId, step);
        touch(step);
        return true;
      }
      case 'tool-call-approval': {
        const toolCallId = String(p.toolCallId);
        const step = this.callSteps.get(toolCallId);
        const call = step?.toolCalls.find((c) => c.toolCallId === toolCallId);
        if (!step || !call) return true;
        call.approval = {
          status: p.status as ApprovalStatus,
          ...(typeof p.declineReason === 'string' ? { declineReason: p.declineReason } : {}),
        };
        touch(step);
        return true;
      }
      case 'tool-result': {
        const toolCallId = String(p.toolCallId);
        if (this.byKey.has(`tool:${toolCallId}`)) return true;
        this.append({
          kind: 'tool',
          key: `tool:${toolCallId}`,
          toolCallId,
          toolName: String(p.toolName ?? ''),
          output: p.output,
          isError: p.isError === true,
          at: event.at,
          store: new Store(0),
        });
        return true;
      }
      case 'step-finish': {
        const step = runId ? this.stepOf(runId, Number(p.stepNumber)) : undefined;
        if (step) {
          step.replaying = false;
          if (step.status === 'streaming') step.status = 'done';
          touch(step);
        }
        return true;
      }
      case 'step-interrupted':
      case 'run-retry': {
        const step = runId ? this.stepOf(runId, Number(p.stepNumber)) : undefined;
        if (!step || step.replaying) return true;
        // Its partial output is void: a fresh step (interrupt) or attempt (retry) answers instead.
        for (const call of step.toolCalls) this.callSteps.delete(call.toolCallId);
        Object.assign(step, { text: '', reasoning: '', toolCalls: [] });
        if (event.type === 'step-interrupted') step.status = 'interrupted';
        else step.retries = (step.retries ?? 0) + 1;
        touch(step);
        return true;
      }
      case 'finish':
      case 'abort':
      case 'error': {
        const step = runId ? this.currentStep.get(runId) : undefined;
        if (step && step.status === 'streaming' && !step.replaying) {
          step.status = event.type === 'abort' ? 'aborted' : event.type === 'error' ? 'failed' : 'done';
          touch(step);
        }
        if (event.type === 'error') {
          this.appendNotice(
            `err:${event.id}`,
            'error',
            `The run failed: ${String(p.message ?? 'unknown error')}`,
            event,
          );
        }
        if (event.type === 'abort') this.appendNotice(`abort:${runId}`, 'info', 'The run was aborted.', event);
        if (event.type !== 'error' && runId) this.currentStep.delete(runId);
        return true;
      }
      default:
        return false;
    }
  }

  private stepOf(runId: string, stepNumber: number): StepItem | undefined {
    const item = this.byKey.get(`step:${runId}:${stepNumber}`);
    return item?.kind === 'step' ? item : this.currentStep.get(runId);
  }

  private appendNotice(key: string, tone: NoticeItem['tone'], text: string, event: ThreadEvent): void {
    if (this.byKey.has(key)) return;
    this.append({ kind: 'notice', key, tone, text, at: event.at, store: new Store(0) });
  }

  private index(item: Item): void {
    this.byKey.set(item.key, item);
    if (item.kind === 'step') for (const call of item.toolCalls) this.callSteps.set(call.toolCallId, item);
  }

  private append(item: Item): void {
    this.index(item);
    this.items.set([...this.items.get(), item]);
  }
}

function fromStored(message: StoredMessage, runAgents: Map<string, string>): Item[] {
  switch (message.role) {
    case 'user': {
      const input = message as InputMessage;
      return [
        {
          kind: 'input',
          key: `in:${input.id}`,
          id: input.id,
          type: input.type,
          tagName: input.tagName,
          contents: input.contents,
          attributes: input.attributes,
          runId: input.runId,
          at: input.at,
          store: new Store(0),
        },
      ];
    }
    case 'assistant': {
      const step = message as AssistantMessage;
      const text = step.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      const reasoning = step.content.flatMap((p) => (p.type === 'reasoning' ? [p.text] : [])).join('');
      const toolCalls = step.content.flatMap((p) =>
        p.type === 'tool-call' ? [{ toolCallId: p.toolCallId, toolName: p.toolName, input: p.input }] : [],
      );
      return [
        {
          kind: 'step',
          key: `step:${step.runId}:${step.stepNumber}`,
          runId: step.runId,
          stepNumber: step.stepNumber,
          agentId: runAgents.get(step.runId),
          text,
          reasoning,
          toolCalls,
          status: 'done',
          at: step.at,
          store: new Store(0),
        },
      ];
    }
    case 'tool':
      return (message as ToolMessage).content.map((part) => ({
        kind: 'tool',
        key: `tool:${part.toolCallId}`,
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        output: part.output,
        isError: part.isError,
        at: message.at,
        store: new Store(0),
      }));
  }
}

/** The text of message contents: text parts joined, files named. */
export function contentsText(contents: Contents): string {
  if (typeof contents === 'string') return contents;
  return contents
    .map((part) => {
      if (part.type === 'text') return part.text;
      const file = part as { mediaType?: string; url?: string; filename?: string };
      return `[file ${file.filename ?? file.url ?? ''} ${file.mediaType ?? ''}]`.replace(/\s+]/, ']');
    })
    .join('\n');
}
