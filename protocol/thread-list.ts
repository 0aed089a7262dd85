/**
 * The thread list (`GET /api/threads`, `ThreadlineClient.listThreads`): what Temporal visibility says about each
 * thread, from the search attributes its workflow keeps current (`./search-attributes`).
 */
import type { ThreadStatus } from './search-attributes';

/** One thread as the list shows it: its ids and what its search attributes say. */
export interface ThreadListItem {
  resourceId: string;
  threadId: string;
  /** The thread's workflow id (`threadKey`), as the Temporal UI shows it. */
  workflowId: string;
  /** Null until the thread's first run wrote its attributes. */
  status: ThreadStatus | null;
  /** The active run's agent, else the last run's; null before the first run. */
  agent: string | null;
  pendingApprovals: number;
  openNotifications: number;
  /** Epoch milliseconds of the last accepted input (to the minute while nothing else changes); null before one. */
  lastInputAt: number | null;
  /** Epoch milliseconds when the thread's current workflow execution started (it continues as new now and then). */
  startedAt: number | null;
  /** Temporal's status of that execution: `Running` for a live thread. */
  executionStatus: string;
}

/** A page of the list. */
export interface ThreadListPage {
  threads: ThreadListItem[];
  /** Pass back as `pageToken` for the next page; null on the last one. */
  nextPageToken: string | null;
}
