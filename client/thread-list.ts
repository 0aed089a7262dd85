/**
 * Listing threads through Temporal visibility, over the search attributes the thread workflow keeps current
 * (`protocol/search-attributes.ts`): what `threadline threads list` and `GET /api/threads` (the console) show. The
 * query is built here, pure, so it is unit-tested without a server.
 */
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { ValidationError } from '../protocol/errors';
import type { ThreadListItem, ThreadListPage } from '../protocol/thread-list';
import { parseThreadKey } from '../protocol/ids';
import {
  agentSearchAttribute,
  keywordValue,
  lastInputAtSearchAttribute,
  openNotificationsSearchAttribute,
  pendingApprovalsSearchAttribute,
  resourceSearchAttribute,
  statusSearchAttribute,
  type ThreadStatus,
} from '../protocol/search-attributes';
import { THREAD_WORKFLOW_TYPE } from '../protocol/thread-config';

/** The search attribute each filter compares with. */
export const filterAttributes = {
  status: statusSearchAttribute.name,
  agent: agentSearchAttribute.name,
  resource: resourceSearchAttribute.name,
} as const;

export interface ThreadListFilters {
  /** One status, or any of several. */
  status?: string | readonly string[];
  agent?: string;
  resource?: string;
  /** Only threads of these resources (an API key's binding): ANDed with everything else. */
  resources?: readonly string[];
  /** A raw visibility query, ANDed with the rest. */
  query?: string;
}

/**
 * Thread workflows matching `filters`. A thread's continued-as-new executions are left out: they are closed
 * links of its chain, so each thread appears once, as its latest execution.
 * @example threadListQuery({ status: 'running' }) // WorkflowType = 'threadWorkflow' AND … AND ThreadlineStatus = 'running'
 */
export function threadListQuery(filters: ThreadListFilters): string {
  const clauses = [`WorkflowType = ${literal(THREAD_WORKFLOW_TYPE)}`, `ExecutionStatus != 'ContinuedAsNew'`];
  const statuses = typeof filters.status === 'string' ? [filters.status] : (filters.status ?? []);
  if (statuses.length === 1) clauses.push(`${filterAttributes.status} = ${literal(statuses[0])}`);
  if (statuses.length > 1) clauses.push(`${filterAttributes.status} IN (${statuses.map(literal).join(', ')})`);
  for (const field of ['agent', 'resource'] as const) {
    const value = filters[field];
    if (value !== undefined) clauses.push(`${filterAttributes[field]} = ${literal(keywordValue(value))}`);
  }
  if (filters.resources) {
    const values = [...new Set(filters.resources.map(keywordValue))];
    clauses.push(`${filterAttributes.resource} IN (${values.map(literal).join(', ')})`);
  }
  if (filters.query?.trim()) clauses.push(`(${filters.query.trim()})`);
  return clauses.join(' AND ');
}

/** A string literal of the visibility query language (single quotes; quotes and backslashes escaped). */
export function literal(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Refuses a raw query whose parentheses do not balance outside its string literals. The query is ANDed with the
 * other clauses inside parentheses of its own; an unbalanced one could close them and OR its way past the caller's
 * resource filter. (The listing also drops, afterwards, any thread outside `resources`.)
 */
export function checkRawQuery(query: string): void {
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < query.length; i++) {
    const ch = query[i];
    if (quote) {
      if (ch === '\\') i++;
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === "'" || ch === '"' || ch === '`') quote = ch;
    else if (ch === '(') depth++;
    else if (ch === ')' && --depth < 0) break;
  }
  if (quote || depth !== 0) {
    throw new ValidationError(
      `Invalid query: ${quote ? 'a string literal is not closed' : 'its parentheses do not balance'}. Send one visibility ` +
        `expression, e.g. "StartTime > '2026-01-01T00:00:00Z'".`,
    );
  }
}

/**
 * Refuses a page token Temporal could not have issued. Its SQL and Elasticsearch visibility stores (the ones that
 * serve search-attribute queries) issue JSON objects; anything else (an array included) makes the dev server's
 * frontend fail with
 * "something went wrong, please retry" (gRPC UNKNOWN), which the client retries for about 18 s before the caller
 * gets a 500.
 */
export function checkPageToken(token: string): void {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
  } catch {
    json = undefined;
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ValidationError('Invalid pageToken: pass a nextPageToken of an earlier page as it was given.');
  }
}

const EXECUTION_STATUS_NAMES: Record<number, string> = {
  1: 'Running',
  2: 'Completed',
  3: 'Failed',
  4: 'Canceled',
  5: 'Terminated',
  6: 'ContinuedAsNew',
  7: 'TimedOut',
};

/** Epoch milliseconds of a protobuf timestamp (`seconds` may be a Long). */
function timestampMs(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): number | null {
  if (!ts || ts.seconds === undefined || ts.seconds === null) return null;
  return Number(String(ts.seconds)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

function attributeValue(fields: Record<string, Payload> | null | undefined, name: string): unknown {
  const payload = fields?.[name];
  if (!payload) return undefined;
  const value: unknown = defaultPayloadConverter.fromPayload(payload);
  // A keyword list arrives as an array; the thread's attributes are single values.
  return Array.isArray(value) ? value[0] : value;
}

function numberOf(value: unknown): number {
  return typeof value === 'number' ? value : Number(value ?? 0) || 0;
}

export interface ThreadListOptions {
  /** Threads per page, 1–1000. */
  pageSize?: number;
  /** The `nextPageToken` of the previous page. */
  pageToken?: string;
}

/**
 * One page of threads. Visibility is eventually consistent: a thread created a moment ago, or an attribute just
 * changed, may show a second later. Threads whose workflow id is not a thread key, or outside `filters.resources`,
 * are left out.
 */
export async function listThreads(
  temporal: Client,
  filters: ThreadListFilters,
  options: ThreadListOptions = {},
): Promise<ThreadListPage> {
  if (filters.query !== undefined) checkRawQuery(filters.query);
  if (options.pageToken !== undefined) checkPageToken(options.pageToken);
  const query = threadListQuery(filters);
  const allowed = filters.resources ? new Set(filters.resources) : null;
  let response: Awaited<ReturnType<Client['workflowService']['listWorkflowExecutions']>>;
  try {
    response = await temporal.workflowService.listWorkflowExecutions({
      namespace: temporal.options.namespace,
      query,
      pageSize: options.pageSize ?? 50,
      nextPageToken: options.pageToken ? Buffer.from(options.pageToken, 'base64') : undefined,
    });
  } catch (err) {
    // INVALID_ARGUMENT: the server could not parse the query (or the page token): the caller's input.
    if (isGrpcServiceError(err) && err.code === 3) {
      throw new ValidationError(`Invalid thread list query \`${query}\`: ${err.details ?? err.message}`, {
        cause: err,
      });
    }
    throw err;
  }
  const threads: ThreadListItem[] = [];
  for (const execution of response.executions ?? []) {
    const workflowId = execution.execution?.workflowId ?? '';
    const ids = parseThreadKey(workflowId);
    if (!ids || (allowed && !allowed.has(ids.resourceId))) continue;
    const fields = execution.searchAttributes?.indexedFields as Record<string, Payload> | null | undefined;
    const lastInput = attributeValue(fields, lastInputAtSearchAttribute.name);
    const lastInputAt = lastInput === undefined ? NaN : new Date(lastInput as string).getTime();
    threads.push({
      resourceId: ids.resourceId,
      threadId: ids.threadId,
      workflowId,
      status: (attributeValue(fields, statusSearchAttribute.name) as ThreadStatus | undefined) ?? null,
      agent: (attributeValue(fields, agentSearchAttribute.name) as string | undefined) ?? null,
      pendingApprovals: numberOf(attributeValue(fields, pendingApprovalsSearchAttribute.name)),
      openNotifications: numberOf(attributeValue(fields, openNotificationsSearchAttribute.name)),
      lastInputAt: Number.isNaN(lastInputAt) ? null : lastInputAt,
      startedAt: timestampMs(execution.startTime),
      executionStatus: EXECUTION_STATUS_NAMES[execution.status ?? 0] ?? 'Unknown',
    });
  }
  const token = response.nextPageToken;
  return { threads, nextPageToken: token && token.length > 0 ? Buffer.from(token).toString('base64') : null };
}
