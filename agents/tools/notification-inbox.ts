/**
 * `createNotificationInboxTool()` (behaviour §4.4): one tool, id `notification-inbox`, for the agent's inbox. The
 * workflow runs it on the thread's own state (it is marked `builtin`); `read` delivers the full notification as a
 * signal, not as the tool's output.
 */
import { inboxToolInputSchema, type InboxToolInput } from '../../protocol/schemas';
import type { AgentTool } from '../agent';

export const NOTIFICATION_INBOX_TOOL = 'notification-inbox';

/**
 * @example defineAgent({ id: 'assistant', ..., tools: { [NOTIFICATION_INBOX_TOOL]: createNotificationInboxTool() } })
 */
export function createNotificationInboxTool(): AgentTool<InboxToolInput, unknown> {
  return {
    description:
      'Your notification inbox. action: list (pending and delivered; filter by status, priority, source), ' +
      'search (all statuses; needs query), read (id, or the pending ones: their full content arrives as ' +
      '<notification> messages), markSeen | dismiss | archive (need id). Listed records become seen.',
    inputSchema: inboxToolInputSchema,
    builtin: 'notification-inbox',
    execute: () => {
      throw new Error('The notification inbox tool is run by the thread workflow, not by a worker.');
    },
  };
}
