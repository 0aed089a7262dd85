/**
 * What the Temporal UI shows about a thread: the summary and details of its workflow (set when it starts), its current
 * details (kept by the workflow, read by the UI through the built-in metadata query) and a one-line summary on each
 * activity: `step 3 · support-agent`, `tool deleteRepo`, `publish 12 events`.
 */
import type { ThreadView } from './views';

/**
 * Summaries are copied into every `ActivityTaskScheduled` event, and the server refuses a command whose serialized
 * summary exceeds 400 bytes (`limit.userMetadataSummarySize`): JSON escaping can double a quote or a backslash, so the
 * raw text stays under half of that.
 */
const MAX_SUMMARY_BYTES = 190;
/** `limit.userMetadataDetailsSize` is 20,000 bytes; ids alone can be 1,000 bytes each. */
const MAX_DETAILS_BYTES = 8_000;

/** One line (control characters become spaces) of at most `maxBytes` UTF-8 bytes, cut on a code point, marked `…`. */
export function oneLine(text: string, maxBytes = MAX_SUMMARY_BYTES): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this removes
  return fitBytes(text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' '), maxBytes);
}

function fitBytes(text: string, maxBytes: number): string {
  if (utf8Length(text) <= maxBytes) return text;
  const budget = maxBytes - utf8Bytes(0x2026);
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    bytes += utf8Bytes(char.codePointAt(0)!);
    if (bytes > budget) break;
    end += char.length;
  }
  return `${text.slice(0, end)}…`;
}

function utf8Bytes(codePoint: number): number {
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (const char of text) bytes += utf8Bytes(char.codePointAt(0)!);
  return bytes;
}

/** The workflow's static summary: `thread thread_456 · user_123`. */
export function threadSummary(target: { resourceId: string; threadId: string }): string {
  return oneLine(`thread ${target.threadId} · ${target.resourceId}`);
}

/** The workflow's static details (Temporal markdown): the thread and how to look into it. */
export function threadDetails(target: { resourceId: string; threadId: string }): string {
  return fitBytes(
    [
      `**Threadline thread** \`${target.threadId}\` of resource \`${target.resourceId}\`.`,
      '',
      'Current state: the `threadState` query (or `GET /api/threads/<resourceId>/<threadId>`); search attributes',
      '`ThreadlineStatus`, `ThreadlineAgent`, `ThreadlinePendingApprovals`, `ThreadlineOpenNotifications`,',
      '`ThreadlineLastInputAt`. Each execution continues as new when its history grows long.',
    ].join('\n'),
    MAX_DETAILS_BYTES,
  );
}

/** The workflow's current details (Temporal markdown), from its view. */
export function currentDetails(view: ThreadView): string {
  const run = view.activeRun;
  const lines: string[] = [];
  if (run) {
    lines.push(`**${run.status}** · agent \`${run.agentId}\` · step ${run.stepNumber} · run \`${run.runId}\``);
    const waiting = run.approvals.filter((a) => a.status === 'waiting').map((a) => `\`${a.toolName}\``);
    if (waiting.length > 0) lines.push(`waiting for approval: ${waiting.join(', ')}`);
  } else {
    lines.push('**idle**');
  }
  const counts = [
    view.queue.length > 0 ? plural(view.queue.length, 'queued run') : null,
    plural(view.inbox.pending + view.inbox.delivered, 'open notification'),
    plural(view.messageCount, 'message'),
    `${plural(view.runsCompleted, 'run')} completed`,
  ];
  lines.push(counts.filter((c) => c !== null).join(' · '));
  return fitBytes(lines.join('\n'), MAX_DETAILS_BYTES);
}

/** The step activity's summary: `step 3 · support-agent`. */
export function stepSummary(plan: { stepNumber: number; agentId: string }): string {
  return oneLine(`step ${plan.stepNumber} · ${plan.agentId}`);
}

/** A tool activity's summary: `tool deleteRepo`. */
export function toolSummary(toolName: string): string {
  return oneLine(`tool ${toolName}`);
}

/** The publish activity's summary: `publish 12 events`. */
export function publishSummary(events: number): string {
  return `publish ${plural(events, 'event')}`;
}

/** The archive activity's summary: `archive 200 notifications`. */
export function archiveSummary(records: number): string {
  return `archive ${plural(records, 'notification')}`;
}

/** The agent profile activity's summary: `describe support-agent`. */
export function describeAgentSummary(agentId: string): string {
  return oneLine(`describe ${agentId}`);
}

/** The agent's `decide()` activity's summary: `decide 3 notifications · support-agent`. */
export function decideSummary(notifications: number, agentId: string): string {
  return oneLine(`decide ${plural(notifications, 'notification')} · ${agentId}`);
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
