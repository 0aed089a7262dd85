/**
 * What the thread answers: its view, the results of its updates, inbox records and pages. Plain JSON, the same for
 * the workflow, the TypeScript client, the gateway and the HTTP client.
 */
import type { LaneTracking } from './lanes';
import type { StoredMessage } from './messages';
import type { Attributes, DeliveryAction, NotificationPriority, NotificationStatus } from './schemas';

/** Records per status, and their total. */
export type InboxCounts = Record<NotificationStatus | 'total', number>;

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
  sourceId?: string;
  dedupeKey?: string;
  coalesceKey?: string;
  coalescedCount: number;
  attributes?: Attributes;
  metadata?: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
  deliverAt?: number;
  summaryAt?: number;
  deliveryReason?: string;
  deliveryAttempts: number;
  lastDeliveryError?: string;
  deliveredSignalId?: string;
  summarySignalId?: string;
  deliveredAt?: number;
  seenAt?: number;
  dismissedAt?: number;
  archivedAt?: number;
  discardedAt?: number;
  /** `high` summarized while active: deliver in full once the thread is idle. */
  fullWhenIdle?: boolean;
}

export interface RecordPage {
  notifications: NotificationRecord[];
  hasMore: boolean;
  nextCursor: string | null;
}

export type ApprovalStatus = 'waiting' | 'approved' | 'declined';

/** `sendToolApproval` (behaviour §2.4). */
export interface ToolApproval {
  toolCallId: string;
  approved: boolean;
  resumeData?: unknown;
  declineReason?: string;
}

export interface ToolApprovalResult {
  accepted: true;
  toolCallId: string;
  runId: string;
  status: 'approved' | 'declined';
}

/** What the thread did with one notification of a send. */
export interface NotificationOutcome {
  id: string;
  status: NotificationRecord['status'];
  action: DeliveryAction;
  coalesced: boolean;
  coalescedCount: number;
  deliveryReason?: string;
}

export interface NotificationSendResult {
  accepted: true;
  notifications: NotificationOutcome[];
  duplicate?: true;
}

export interface AbortResult {
  aborted: boolean;
  runId?: string;
  /** Inputs dropped by `clearPendingSignals` (queued runs, and inputs waiting for the aborted run's next step). */
  clearedSignalIds: string[];
}

export interface ThreadView {
  resourceId: string;
  threadId: string;
  status: 'active' | 'idle';
  activeRun: {
    runId: string;
    agentId: string;
    stepNumber: number;
    pendingInputs: number;
    status: 'running' | 'awaiting-approval';
    approvals: {
      toolCallId: string;
      toolName: string;
      args: unknown;
      status: ApprovalStatus;
      requestedAt: number;
      expiresAt?: number;
    }[];
  } | null;
  queue: { runId: string; agentId: string; inputIds: string[] }[];
  messageCount: number;
  runsCompleted: number;
  lanes: (LaneTracking & { id: string; value?: unknown })[];
  inbox: InboxCounts;
}

export interface MessagesPage {
  messages: StoredMessage[];
  hasMore: boolean;
}
