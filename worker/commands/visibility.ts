/**
 * The visibility query of `threadline threads list`: thread workflows, filtered by the search attributes the
 * workflow keeps current. Pure, so it is unit-tested without a server.
 */
import { agentSearchAttribute, resourceSearchAttribute, statusSearchAttribute } from '../../protocol/search-attributes';
import { THREAD_WORKFLOW_TYPE } from '../../protocol/thread-config';

/** The search attribute each filter of `threads list` compares with. */
export const filterAttributes = {
  status: statusSearchAttribute.name,
  agent: agentSearchAttribute.name,
  resource: resourceSearchAttribute.name,
} as const;

export interface ThreadListFilters {
  status?: string;
  agent?: string;
  resource?: string;
  /** A raw visibility query, ANDed with the rest. */
  query?: string;
}

/**
 * Thread workflows matching `filters`. A thread's continued-as-new executions are left out: they are closed
 * links of its chain, so each thread appears once, as its latest execution.
 * @example threadListQuery({ status: 'running' }) // WorkflowType = 'threadWorkflow' AND … AND ThreadlineStatus = 'active'
 */
export function threadListQuery(filters: ThreadListFilters): string {
  const clauses = [`WorkflowType = ${literal(THREAD_WORKFLOW_TYPE)}`, `ExecutionStatus != 'ContinuedAsNew'`];
  for (const field of ['status', 'agent', 'resource'] as const) {
    const value = filters[field];
    if (value !== undefined) clauses.push(`${filterAttributes[field]} = ${literal(value)}`);
  }
  if (filters.query?.trim()) clauses.push(`(${filters.query.trim()})`);
  return clauses.join(' AND ');
}

/** A string literal of the visibility query language (single quotes; quotes and backslashes escaped). */
export function literal(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
