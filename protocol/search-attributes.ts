/**
 * The thread's custom search attributes, each name and type defined once: the workflow keeps them current, the client
 * sets `ThreadlineResource` when it starts a thread, the dev server and `threadline setup` register them. Query them
 * in the Temporal UI or CLI: `ThreadlineStatus = 'awaiting-approval' AND ThreadlineResource = 'user_123'`.
 */
import type {
  SearchAttributePair,
  SearchAttributeType,
  SearchAttributeUpdatePair,
  TypedSearchAttributes,
} from '@temporalio/common';
import type { ThreadView } from './views';

/** A typed search attribute key (`@temporalio/common` does not export its own type by name). */
export type SearchAttributeKey<T extends SearchAttributeType = SearchAttributeType> = Extract<
  SearchAttributePair,
  { key: { type: T } }
>['key'];

/**
 * The plain `{ name, type }` object `defineSearchAttributeKey` returns, built without a value import of
 * @temporalio/common, so browser bundles of protocol/ stay small.
 */
function defineKey<T extends SearchAttributeType>(name: string, type: T): SearchAttributeKey<T> {
  return { name, type } as SearchAttributeKey<T>;
}

/** `idle`, `running` or `awaiting-approval` (the active run's status in the thread's view). */
export const statusSearchAttribute = defineKey('ThreadlineStatus', 'KEYWORD');
/** The active run's agent, else the last run's. */
export const agentSearchAttribute = defineKey('ThreadlineAgent', 'KEYWORD');
/** The thread's `resourceId`. */
export const resourceSearchAttribute = defineKey('ThreadlineResource', 'KEYWORD');
/** Tool calls of the active run waiting for a human's decision. */
export const pendingApprovalsSearchAttribute = defineKey('ThreadlinePendingApprovals', 'INT');
/** Inbox records not yet handled: `pending` and `delivered`. */
export const openNotificationsSearchAttribute = defineKey('ThreadlineOpenNotifications', 'INT');
/** When the thread last accepted an input (a message, a signal, a delivered notification), within a minute. */
export const lastInputAtSearchAttribute = defineKey('ThreadlineLastInputAt', 'DATETIME');

/** Every attribute a namespace needs before a worker runs threads in it. */
export const threadSearchAttributes: readonly SearchAttributeKey[] = [
  statusSearchAttribute,
  agentSearchAttribute,
  resourceSearchAttribute,
  pendingApprovalsSearchAttribute,
  openNotificationsSearchAttribute,
  lastInputAtSearchAttribute,
];

/** A type as the Temporal CLI and UI spell it (`Keyword`, `Int`, `Datetime`): `--search-attribute Name=Type`. */
export function searchAttributeTypeName(type: SearchAttributeType): string {
  const names: Record<SearchAttributeType, string> = {
    TEXT: 'Text',
    KEYWORD: 'Keyword',
    INT: 'Int',
    DOUBLE: 'Double',
    BOOL: 'Bool',
    DATETIME: 'Datetime',
    KEYWORD_LIST: 'KeywordList',
  };
  return names[type];
}

export type ThreadStatus = 'idle' | 'running' | 'awaiting-approval';

/** What the thread's search attributes say. */
export interface ThreadSearchValues {
  status: ThreadStatus;
  /** Null before the thread's first run. */
  agent: string | null;
  resource: string;
  pendingApprovals: number;
  openNotifications: number;
  /** Epoch milliseconds (workflow time); null before the first input. */
  lastInputAt: number | null;
}

/** The values for a thread's view. The view knows no agent once its run ended: `lastAgent` is the one it last had. */
export function threadSearchValues(
  view: ThreadView,
  known: { lastAgent: string | null; lastInputAt: number | null },
): ThreadSearchValues {
  const run = view.activeRun;
  return {
    status: run?.status ?? 'idle',
    agent: run?.agentId ?? known.lastAgent,
    resource: view.resourceId,
    pendingApprovals: run ? run.approvals.filter((a) => a.status === 'waiting').length : 0,
    openNotifications: view.inbox.pending + view.inbox.delivered,
    lastInputAt: known.lastInputAt,
  };
}

/**
 * A newer `ThreadlineLastInputAt` alone is written once it is this much newer: inputs to a busy thread (a state lane
 * updated every second) would otherwise add an upsert event to history for each. With any other change it is exact.
 * The default of the thread setting `lastInputResolutionMs`.
 */
export const LAST_INPUT_RESOLUTION_MS = 60_000;

/**
 * Keyword values are cut to 255 characters: SQL visibility stores custom keywords in `VARCHAR(255)` columns. A
 * longer resource id is found with `ThreadlineResource STARTS_WITH '…'`.
 */
export const MAX_KEYWORD_CHARS = 255;

export function keywordValue(value: string): string {
  if (value.length <= MAX_KEYWORD_CHARS) return value;
  return Array.from(value).slice(0, MAX_KEYWORD_CHARS).join('');
}

/** The attributes as the execution has them now (`workflowInfo().typedSearchAttributes`). */
export type CurrentSearchAttributes = Pick<TypedSearchAttributes, 'get'>;

/**
 * The upserts that bring `current` to `desired`, batched in one list; empty when nothing changed (then nothing is
 * written: each upsert is an event in the thread's history).
 */
export function searchAttributeChanges(
  current: CurrentSearchAttributes,
  desired: ThreadSearchValues,
  lastInputResolutionMs = LAST_INPUT_RESOLUTION_MS,
): SearchAttributeUpdatePair[] {
  const changes: SearchAttributeUpdatePair[] = [];
  const keyword = (key: SearchAttributeKey<'KEYWORD'>, value: string | null) => {
    const wanted = value === null ? null : keywordValue(value);
    if ((current.get(key) ?? null) !== wanted) changes.push({ key, value: wanted });
  };
  const int = (key: SearchAttributeKey<'INT'>, value: number) => {
    if (current.get(key) !== value) changes.push({ key, value });
  };
  keyword(statusSearchAttribute, desired.status);
  keyword(agentSearchAttribute, desired.agent);
  keyword(resourceSearchAttribute, desired.resource);
  int(pendingApprovalsSearchAttribute, desired.pendingApprovals);
  int(openNotificationsSearchAttribute, desired.openNotifications);

  const had = current.get(lastInputAtSearchAttribute);
  const hadAt = had instanceof Date ? had.getTime() : null;
  if (desired.lastInputAt !== null && hadAt !== desired.lastInputAt) {
    const onlyThis = changes.length === 0;
    if (!onlyThis || hadAt === null || desired.lastInputAt - hadAt >= lastInputResolutionMs) {
      changes.push({ key: lastInputAtSearchAttribute, value: new Date(desired.lastInputAt) });
    }
  }
  return changes;
}
