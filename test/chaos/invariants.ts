/**
 * The invariants a chaos run must end with, as pure functions over what the harness recorded and what the system
 * holds at the end (stored messages, the bus streams, the inbox, the tool log). Each returns the violations it found,
 * each one naming the thread and the id, so a failed run says exactly what went wrong.
 */

/** The actions the thread answers (docs/signals.md). */
export type InputAction = 'wake' | 'deliver' | 'queued' | 'persist' | 'discard' | 'interrupt' | 'skipped' | 'blocked';

/** One input the harness sent, by its client-chosen id. */
export interface InputRecord {
  id: string;
  thread: string;
  route: 'send-message' | 'queue-message' | 'signals' | 'state-signals';
  /** `accepted`: answered 2xx; `refused`: a 4xx (nothing changed); `unknown`: no answer before the deadline. */
  outcome: 'accepted' | 'refused' | 'unknown';
  /** The first answer that was not a duplicate, or the only answer. */
  action?: InputAction;
  runId?: string;
  /** Answers that were not `duplicate: true`: more than one means the thread took the input twice. */
  freshAnswers: number;
  refusal?: string;
  attempts: number;
  sentAt: number;
  /** From the first attempt to the accepted answer. */
  latencyMs?: number;
}

/** An input as the thread stored it (a user-role message of its conversation). */
export interface StoredInput {
  id: string;
  runId?: string;
}

export interface InputFindings {
  lost: string[];
  duplicated: string[];
  mishandled: string[];
}

/**
 * Every accepted input is stored exactly once (none when its action was `discard` or `skipped`), under the run its
 * action named (`wake`, `queued`, `deliver`, `interrupt`), unless that run ended with an abort or an error, which hand
 * the inputs still waiting for it to a new run (`brokenRuns`); `persist` in no run. An input whose outcome is unknown
 * may be stored once or not at all. Refused inputs are never stored.
 */
export function checkInputs(
  records: readonly InputRecord[],
  storedByThread: ReadonlyMap<string, readonly StoredInput[]>,
  brokenRuns: ReadonlySet<string>,
): InputFindings {
  const findings: InputFindings = { lost: [], duplicated: [], mishandled: [] };
  const copies = new Map<string, StoredInput[]>();
  for (const [thread, stored] of storedByThread) {
    for (const message of stored) {
      const key = `${thread}\u0000${message.id}`;
      copies.set(key, [...(copies.get(key) ?? []), message]);
    }
  }
  for (const r of records) {
    const found = copies.get(`${r.thread}\u0000${r.id}`) ?? [];
    const where = `thread ${r.thread}, input ${r.id} (${r.route}, ${r.outcome}${r.action ? ` ${r.action}` : ''})`;
    // A persist or discard answer may come from the client itself (state-independent inputs go by signal-with-start,
    // docs/signals.md): a resend is answered again without `duplicate`, and the thread applies it once (checked below).
    const answeredByClient = r.action === 'persist' || r.action === 'discard';
    if (r.freshAnswers > 1 && !answeredByClient) {
      findings.duplicated.push(`${where}: answered ${r.freshAnswers} times without duplicate`);
    }
    if (found.length > 1) {
      findings.duplicated.push(`${where}: stored ${found.length} times`);
      continue;
    }
    if (r.outcome === 'refused') {
      if (found.length > 0) findings.mishandled.push(`${where}: refused (${r.refusal}) but stored`);
      continue;
    }
    if (r.outcome === 'unknown') continue;
    const expectStored = r.action !== 'discard' && r.action !== 'skipped' && r.action !== 'blocked';
    if (!expectStored) {
      if (found.length > 0) findings.mishandled.push(`${where}: stored although the answer was ${r.action}`);
      continue;
    }
    if (found.length === 0) {
      findings.lost.push(`${where}: accepted but not stored`);
      continue;
    }
    const storedRun = found[0].runId;
    if (r.action === 'persist') {
      if (storedRun !== undefined) findings.mishandled.push(`${where}: persisted, yet stored in run ${storedRun}`);
    } else if (storedRun === undefined) {
      findings.mishandled.push(`${where}: answered ${r.action} (run ${r.runId}) but stored without a run`);
    } else if (storedRun !== r.runId && !(r.runId !== undefined && brokenRuns.has(r.runId))) {
      findings.mishandled.push(`${where}: answered run ${r.runId} but stored in run ${storedRun}`);
    }
  }
  return findings;
}

/** What one SSE connection of a subscriber received. */
export interface SubscriberSegment {
  /** The Last-Event-ID it resumed from (none: a fresh subscription). */
  resumeFrom?: string;
  /** Event ids and types, in arrival order (`snapshot` items carry the resume position as their id). */
  items: { id: string; type: string }[];
}

/**
 * A subscriber saw every event once and in order: ids strictly increase over all its connections; within a
 * connection each event is the one after the previous in the bus stream; a resumed connection starts right after its
 * Last-Event-ID, or with a `snapshot` when that id left the bus (an explicit gap; also mid-connection, when the events
 * after the last one seen left the bus under it). `streamIds` is the bus stream of the thread over the run, oldest
 * first: the streams Redis lost (recorded just before), then the one it holds at the end; events older than its first
 * retained id cannot be checked and are skipped. A subscriber that goes on past a lost stream without a snapshot and
 * misses events is a silent hole.
 */
export function checkSubscriber(
  thread: string,
  segments: readonly SubscriberSegment[],
  streamIds: readonly string[],
): string[] {
  const problems: string[] = [];
  const position = new Map(streamIds.map((id, i) => [id, i]));
  const oldest = streamIds[0];
  let previous: string | undefined;
  segments.forEach((segment, n) => {
    const connection = `thread ${thread}, connection ${n + 1}${segment.resumeFrom ? ` (resumed after ${segment.resumeFrom})` : ''}`;
    let expected: number | undefined;
    // `0-0`: from the stream's first event (or a snapshot first, when the stream was trimmed).
    if (segment.resumeFrom === '0-0') {
      expected = 0;
    } else if (segment.resumeFrom !== undefined) {
      const at = position.get(segment.resumeFrom);
      if (at !== undefined) expected = at + 1;
    }
    segment.items.forEach((item, k) => {
      if (item.type === 'snapshot') {
        // A snapshot is the explicit gap: first after a resume, or later in a connection whose stream lost events
        // under it (trimmed past it, or Redis lost its data). It needs a position: a resume, or an event before it.
        if (k === 0 && segment.resumeFrom === undefined) {
          problems.push(`${connection}: a snapshot first in a connection that resumed from nothing`);
        }
        expected = undefined;
        return;
      }
      if (previous !== undefined && compareEventIds(item.id, previous) <= 0) {
        problems.push(`${connection}: event ${item.id} (${item.type}) after ${previous}: seen twice or out of order`);
        return;
      }
      previous = item.id;
      const at = position.get(item.id);
      if (at === undefined) {
        if (oldest === undefined || compareEventIds(item.id, oldest) >= 0) {
          problems.push(`${connection}: event ${item.id} (${item.type}) is not in the bus stream`);
        }
        expected = undefined;
        return;
      }
      if (expected !== undefined && at > expected) {
        const missed = streamIds.slice(expected, at);
        problems.push(
          `${connection}: missed ${missed.length} event(s) before ${item.id} (${missed.slice(0, 3).join(', ')}${missed.length > 3 ? ', …' : ''})`,
        );
      }
      expected = at + 1;
    });
  });
  return problems;
}

/** Orders bus event ids (`<ms>-<seq>`, or digits alone). */
export function compareEventIds(a: string, b: string): number {
  const [am, as = '0'] = a.split('-');
  const [bm, bs = '0'] = b.split('-');
  const ms = BigInt(am) - BigInt(bm);
  if (ms !== 0n) return ms < 0n ? -1 : 1;
  const seq = BigInt(as) - BigInt(bs);
  return seq === 0n ? 0 : seq < 0n ? -1 : 1;
}

/** One notification send: the ids the thread answered. */
export interface NotificationSend {
  thread: string;
  key: string;
  outcome: 'accepted' | 'refused' | 'unknown';
  ids: string[];
  freshAnswers: number;
}

/** Every answered notification record exists exactly once (inbox and archive together). */
export function checkNotifications(
  sends: readonly NotificationSend[],
  recordsByThread: ReadonlyMap<string, readonly string[]>,
): InputFindings {
  const findings: InputFindings = { lost: [], duplicated: [], mishandled: [] };
  const counts = new Map<string, number>();
  for (const [thread, ids] of recordsByThread) {
    for (const id of ids) counts.set(`${thread}\u0000${id}`, (counts.get(`${thread}\u0000${id}`) ?? 0) + 1);
  }
  for (const send of sends) {
    const where = `thread ${send.thread}, notification send ${send.key}`;
    if (send.freshAnswers > 1) findings.duplicated.push(`${where}: answered ${send.freshAnswers} times`);
    for (const id of send.ids) {
      const n = counts.get(`${send.thread}\u0000${id}`) ?? 0;
      if (n === 0) findings.lost.push(`${where}: record ${id} answered but not in the inbox or archive`);
      if (n > 1) findings.duplicated.push(`${where}: record ${id} listed ${n} times`);
    }
  }
  return findings;
}

/** One approval the harness sent, and how often the tool ran (from the workers' tool log). */
export interface ApprovalRecord {
  thread: string;
  toolCallId: string;
  approved: boolean;
  /** `accepted`: 2xx, or a 409 "already decided" on a resend; `gone`: 404, the run no longer waits for it. */
  outcome: 'accepted' | 'gone' | 'refused' | 'unknown';
}

export interface ToolFindings {
  /** A declined call that ran anyway: a violation. */
  ranWhenDeclined: string[];
  /** Approved calls that ran more than once (a worker killed between the tool and the activity's completion). */
  ranTwice: string[];
  /** Approved calls that never ran, on a thread never aborted: a violation. */
  neverRan: string[];
  /** Approved calls that never ran on a thread that was aborted (the abort may have cancelled them). */
  neverRanAborted: string[];
}

export function checkTools(
  approvals: readonly ApprovalRecord[],
  runs: ReadonlyMap<string, number>,
  abortedThreads: ReadonlySet<string>,
): ToolFindings {
  const findings: ToolFindings = { ranWhenDeclined: [], ranTwice: [], neverRan: [], neverRanAborted: [] };
  for (const a of approvals) {
    const n = runs.get(a.toolCallId) ?? 0;
    const where = `thread ${a.thread}, tool call ${a.toolCallId}`;
    if (!a.approved && a.outcome === 'accepted' && n > 0)
      findings.ranWhenDeclined.push(`${where}: declined, ran ${n}x`);
    if (a.approved && n > 1) findings.ranTwice.push(`${where}: ran ${n} times`);
    if (a.approved && a.outcome === 'accepted' && n === 0) {
      (abortedThreads.has(a.thread) ? findings.neverRanAborted : findings.neverRan).push(
        `${where}: approved, never ran`,
      );
    }
  }
  return findings;
}
