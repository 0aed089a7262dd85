/**
 * The HTTP SDK's request and answer shapes. Shapes the gateway passes through from the thread are the TypeScript
 * client's and the workflow's own types, imported as types only (they vanish at build time: nothing of zod, Temporal
 * or Node reaches a browser bundle); notification shapes follow behaviour §4.
 */
import type { SendTarget } from '../protocol/api';
import type {
  InputResult,
  MessageInput,
  NotificationInput,
  NotificationPriority,
  NotificationStatus,
  SignalInput,
  StateSignalInput,
  ThreadTarget,
} from '../protocol/schemas';
import type { MessagesPage } from '../protocol/views';
import type { NotificationRecord } from '../protocol/views';
import type {
  AbortResult,
  ThreadView,
  ToolApproval,
  ToolApprovalResult as ThreadToolApprovalResult,
} from '../protocol/views';

export type { AbortResult, InputResult, MessageInput, MessagesPage, SendTarget, SignalInput, StateSignalInput };
export type {
  NotificationInput,
  NotificationPriority,
  NotificationRecord,
  NotificationStatus,
  ThreadTarget,
  ThreadView,
};

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

/** The gateway's answer to `POST /notifications`: the record(s) and the policy's decision(s). */
/** What the thread did with each notification of a send. */
export type { NotificationSendResult } from '../protocol/views';

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

/** `sendToolApproval`'s request: the thread, the tool call, `approved`, and `resumeData?` / `declineReason?`. */
export type ToolApprovalRequest = ThreadTarget & ToolApproval;

/** The gateway's answer to `sendToolApproval`: `{ accepted, runId, toolCallId, status }`. */
export type ToolApprovalResult = ThreadToolApprovalResult;
