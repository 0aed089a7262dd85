/**
 * The HTTP SDK's request and answer shapes. Input types are shared with the TypeScript client (types only: nothing
 * of zod or Temporal reaches a browser bundle); notification shapes follow SPEC §4.
 */
import type { SendTarget } from '../inputs';
import type { Attributes, InputResult, MessageInput, SignalInput, StateSignalInput, ThreadTarget } from '../schemas';
import type { MessagesPage } from '../../workflows/definitions';
import type { AbortResult, ThreadView } from '../../workflows/thread-state';

export type { AbortResult, InputResult, MessageInput, MessagesPage, SendTarget, SignalInput, StateSignalInput };
export type { ThreadTarget, ThreadView };

export interface HttpClientOptions {
  /** The gateway, e.g. `http://127.0.0.1:4111`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** A `fetch` to use instead of the global one (tests, Tauri, instrumented fetches). */
  fetch?: typeof fetch;
  /** Sent with every request. */
  headers?: Record<string, string>;
  /** Route prefix. Default `/api`. */
  apiPrefix?: string;
  /**
   * Extra attempts after a network error or a 502/503/504/408/429 answer, for reads and for sends (every send carries
   * an `Idempotency-Key`, so a resent input is applied once). Default 2.
   */
  retries?: number;
}

/** What a send returns: the thread's decision; `persisted` is already resolved (the gateway answers once recorded). */
export type HttpSendResult = InputResult & { persisted: Promise<void> };

export interface SendOptions {
  /** The input's idempotency key (also sent as `Idempotency-Key`). Generated when absent. */
  id?: string;
}

export type NotificationPriority = 'urgent' | 'high' | 'medium' | 'low';
export type NotificationStatus = 'pending' | 'delivered' | 'seen' | 'dismissed' | 'archived' | 'discarded' | 'failed';

/** `sendNotificationSignal`'s input (SPEC §4.1). */
export interface NotificationInput {
  source: string;
  kind: string;
  summary: string;
  priority?: NotificationPriority;
  payload?: unknown;
  sourceId?: string;
  dedupeKey?: string;
  coalesceKey?: string;
  attributes?: Attributes;
  metadata?: Record<string, unknown>;
}

/** An inbox record (SPEC §4.1). Times are milliseconds since the epoch, or null. */
export interface NotificationRecord {
  id: string;
  threadId: string;
  resourceId: string;
  agentId: string;
  source: string;
  kind: string;
  priority: NotificationPriority;
  status: NotificationStatus;
  summary: string;
  payload?: unknown;
  sourceId?: string | null;
  dedupeKey?: string | null;
  coalesceKey?: string | null;
  coalescedCount: number;
  attributes?: Attributes;
  metadata?: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
  deliverAt?: number | null;
  summaryAt?: number | null;
  deliveryReason?: string | null;
  deliveryAttempts?: number;
  lastDeliveryError?: string | null;
  deliveredSignalId?: string | null;
  summarySignalId?: string | null;
  deliveredAt?: number | null;
  seenAt?: number | null;
  dismissedAt?: number | null;
  archivedAt?: number | null;
  discardedAt?: number | null;
}

/** The gateway's answer to `POST /notifications`: the record(s) and the policy's decision(s). */
export interface NotificationSendResult {
  accepted: true;
  [field: string]: unknown;
}

/** Filters of `GET /threads/:r/:t/notifications`; a list is sent comma-separated. */
export interface NotificationQuery {
  status?: NotificationStatus | NotificationStatus[];
  priority?: NotificationPriority | NotificationPriority[];
  source?: string | string[];
  /** Full-text search over summaries. */
  q?: string;
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface NotificationPage {
  notifications: NotificationRecord[];
  hasMore: boolean;
  nextCursor?: string | null;
}

export interface ToolApprovalRequest extends ThreadTarget {
  toolCallId: string;
  approved: boolean;
  /** Passed to the tool when approved. */
  resumeData?: unknown;
  /** What the model reads when declined. Default: `Tool call was not approved by the user`. */
  declineReason?: string;
}

export interface ToolApprovalResult {
  accepted: true;
  runId: string;
  toolCallId?: string;
  [field: string]: unknown;
}

/** An agent as `GET /api/agents` lists it. */
export interface AgentSummary {
  id: string;
  name: string;
  description: string;
  instructions: string;
  modelId: string;
  tools: Record<string, { id: string; description?: string }>;
}
