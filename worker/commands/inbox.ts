/**
 * `threadline inbox`: a thread's notification records, newest first, and their status changes (seen, dismiss,
 * archive), through the client's listNotifications / changeNotificationStatus.
 */
import type { NotificationQuery } from '../../protocol/schemas';
import type { NotificationRecord } from '../../protocol/views';
import {
  notificationPriorities,
  notificationStatusChanges,
  notificationStatuses,
  type NotificationPriority,
  type NotificationStatus,
} from '../../protocol/vocabulary';
import { EXIT, UsageError, type Command } from './command';
import { json, limitOption, listOption, oneLine, table, time } from './format';
import { found, withSession } from './session';
import { formatThreadName, noMore, threadArgument, threadOptionHelp, threadOptions } from './thread-name';

type Change = (typeof notificationStatusChanges)[number];

export const inboxCommand: Command = {
  summary: "List a thread's notification inbox, newest first, or mark records seen, dismissed or archived.",
  usage: `RESOURCE/THREAD [--status S] [--priority P] [--source X] [--limit N] [--cursor C] [--json]\n       threadline inbox RESOURCE/THREAD ${notificationStatusChanges.join('|')} ID… [--json]`,
  options: {
    json: { type: 'boolean' },
    status: { type: 'string', multiple: true },
    priority: { type: 'string', multiple: true },
    source: { type: 'string', multiple: true },
    limit: { type: 'string' },
    cursor: { type: 'string' },
    ...threadOptions,
  },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--status <s>': `Only records with these statuses (${notificationStatuses.join(', ')}); repeat or separate by commas.`,
    '--priority <p>': `Only these priorities (${notificationPriorities.join(', ')}).`,
    '--source <x>': 'Only records from these sources.',
    '--limit <n>': 'At most N records (1-200, default 20).',
    '--cursor <c>': 'The next page: the cursor the previous page printed.',
    '--json': 'The page ({ notifications, hasMore, nextCursor }), or the changed records.',
  },
  examples: [
    'threadline inbox user-42/support --status pending,delivered --priority high',
    'threadline inbox user-42/support seen ntf_1 ntf_2',
    'threadline inbox user-42/support archive ntf_1 --json',
  ],
  async run(context) {
    const { target, rest } = threadArgument(context);
    const { values, out } = context;
    const [action, ...ids] = rest;
    if (action !== undefined) {
      if (!(notificationStatusChanges as readonly string[]).includes(action)) {
        throw new UsageError(
          `Unknown inbox action "${action}": use ${notificationStatusChanges.join(', ')} followed by record ids.`,
        );
      }
      if (ids.length === 0) throw new UsageError(`Give the ids of the records to ${action}.`);
      const records = await withSession(context.env, ({ threadline }) =>
        threadline.changeNotificationStatus(target, ids, action as Change),
      );
      out(values.json ? json(records) : records.map((r) => `${r.id}: ${r.status}`).join('\n') || 'No records changed.');
      return EXIT.ok;
    }
    noMore(ids);
    const query: NotificationQuery = {
      status: choices(values.status, notificationStatuses, '--status') as NotificationStatus[] | undefined,
      priority: choices(values.priority, notificationPriorities, '--priority') as NotificationPriority[] | undefined,
      source: listOption(values.source),
      limit: limitOption(values.limit, 200),
      cursor: values.cursor as string | undefined,
    };
    const page = await withSession(context.env, async ({ threadline, settings }) =>
      found(await threadline.listNotifications(target, query), target, settings),
    );
    if (values.json) {
      out(json(page));
      return EXIT.ok;
    }
    if (page.notifications.length === 0) {
      out(
        `No notifications in ${formatThreadName(target)}${query.status || query.priority || query.source ? ' that match' : ''}.`,
      );
    } else {
      out(table(['ID', 'STATUS', 'PRIORITY', 'SOURCE', 'KIND', 'UPDATED', 'SUMMARY'], page.notifications.map(row)));
    }
    if (page.hasMore && page.nextCursor) out(`(more: --cursor ${page.nextCursor})`);
    return EXIT.ok;
  },
};

function row(record: NotificationRecord): string[] {
  const count = record.coalescedCount > 1 ? ` (×${record.coalescedCount})` : '';
  return [
    record.id,
    record.status,
    record.priority,
    record.source,
    record.kind,
    time(record.updatedAt),
    oneLine(record.summary, 60) + count,
  ];
}

function choices(value: unknown, allowed: readonly string[], option: string): string[] | undefined {
  const items = listOption(value);
  const wrong = items?.find((item) => !allowed.includes(item));
  if (wrong !== undefined) throw new UsageError(`${option} takes ${allowed.join(', ')}; got "${wrong}".`);
  return items;
}
