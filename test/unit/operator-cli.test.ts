/**
 * The pure parts of the operator commands: thread names on the command line, the `threads list` query, and how a
 * replay failure is turned into the event that diverged. (The commands themselves: test/worker/operator-cli.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../worker/commands/command';
import {
  coreMessage,
  eventNames,
  eventTypeName,
  explicitEventId,
  locateDivergence,
  type JsonEvent,
} from '../../worker/commands/divergence';
import { keptEvents, lastTaskCompletedBefore, redoneWork, resetRequestId } from '../../worker/commands/history-repair';
import { formatThreadName, parseThreadName, threadArgument } from '../../worker/commands/thread-name';
import { literal, threadListQuery } from '../../client/thread-list';

describe('thread names', () => {
  it('reads RESOURCE/THREAD, percent-decoding each part, and prints what it reads', () => {
    expect(parseThreadName('user-42/support')).toEqual({ resourceId: 'user-42', threadId: 'support' });
    expect(parseThreadName('acme%2Fteam/t%251')).toEqual({ resourceId: 'acme/team', threadId: 't%1' });
    for (const target of [
      { resourceId: 'acme/team', threadId: 'a%2Fb' },
      { resourceId: 'ü ñ', threadId: 't:1' },
    ]) {
      expect(parseThreadName(formatThreadName(target))).toEqual(target);
    }
    expect(formatThreadName({ resourceId: 'acme/team', threadId: 't1' })).toBe('acme%2Fteam/t1');
  });

  it('refuses what is not one resource and one thread, as a usage error', () => {
    for (const name of ['support', 'a/b/c', '/t', 'r/', 'r/%E0%A4%A']) {
      expect(() => parseThreadName(name)).toThrow(UsageError);
    }
    expect(() => parseThreadName('a/b/c')).toThrow(/%2F/);
  });

  it('takes --resource and --thread verbatim, both or neither', () => {
    expect(threadArgument({ values: { resource: 'a/b', thread: '%41' }, positionals: ['call-1'] })).toEqual({
      target: { resourceId: 'a/b', threadId: '%41' },
      rest: ['call-1'],
    });
    expect(threadArgument({ values: {}, positionals: ['r/t', 'x'] })).toEqual({
      target: { resourceId: 'r', threadId: 't' },
      rest: ['x'],
    });
    expect(() => threadArgument({ values: { resource: 'r' }, positionals: [] })).toThrow(/go together/);
    expect(() => threadArgument({ values: {}, positionals: [] })).toThrow(/Name the thread/);
  });
});

describe('threads list query', () => {
  it('lists thread workflows, each thread once, ANDed with the filters and a raw query', () => {
    expect(threadListQuery({})).toBe(`WorkflowType = 'threadWorkflow' AND ExecutionStatus != 'ContinuedAsNew'`);
    expect(
      threadListQuery({
        status: 'awaiting-approval',
        agent: 'admin',
        resource: "o'brien",
        query: "StartTime > '2026'",
      }),
    ).toBe(
      `WorkflowType = 'threadWorkflow' AND ExecutionStatus != 'ContinuedAsNew' AND ThreadlineStatus = 'awaiting-approval'` +
        ` AND ThreadlineAgent = 'admin' AND ThreadlineResource = 'o\\'brien' AND (StartTime > '2026')`,
    );
  });

  it('escapes quotes and backslashes in literals', () => {
    expect(literal(`a'b\\c`)).toBe(`'a\\'b\\\\c'`);
  });
});

describe('divergence', () => {
  const sdkMessage = (core: string) =>
    `Replay failed with a nondeterminism error. Details: Workflow activation completion failed: Failure { failure: Some(Failure { message: "${core}", source: "", stack_trace: "" }) }`;

  it("extracts core's message and an event id it states", () => {
    expect(coreMessage(sdkMessage('[TMPRL1100] Nondeterminism error: \\"x\\" differs'))).toBe(
      '[TMPRL1100] Nondeterminism error: "x" differs',
    );
    expect(coreMessage('plain')).toBe('plain');
    expect(explicitEventId('History is out of order. Last processed event: 23, event id: 26')).toBe(26);
    expect(explicitEventId('No command scheduled for event HistoryEvent(id: 9, TimerStarted)')).toBe(9);
    expect(explicitEventId("Activity type of scheduled event 'a' does not match 'b'")).toBeUndefined();
  });

  it('names event types and what an event names', () => {
    expect(eventTypeName('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).toBe('WorkflowExecutionUpdateAccepted');
    const scheduled = event(5, 'ACTIVITY_TASK_SCHEDULED', {
      activityTaskScheduledEventAttributes: { activityId: '3', activityType: { name: 'runStep' } },
    });
    expect(eventNames(scheduled)).toEqual(['runStep', '3']);
    expect(eventNames(event(6, 'WORKFLOW_TASK_STARTED'))).toEqual([]);
  });

  it('bisects by workflow task and picks the event the message names in the first failing task', async () => {
    // Tasks start at events 3, 9 and 15; the replay fails once it reaches the activity 'b' of the second task.
    const events = [
      ...firstTask(),
      activity(5, 'a'),
      event(6, 'ACTIVITY_TASK_STARTED'),
      event(7, 'ACTIVITY_TASK_COMPLETED'),
      event(8, 'WORKFLOW_TASK_SCHEDULED'),
      event(9, 'WORKFLOW_TASK_STARTED'),
      event(10, 'WORKFLOW_TASK_COMPLETED'),
      activity(11, 'b'),
      event(12, 'ACTIVITY_TASK_STARTED'),
      event(13, 'ACTIVITY_TASK_COMPLETED'),
      event(14, 'WORKFLOW_TASK_SCHEDULED'),
      event(15, 'WORKFLOW_TASK_STARTED'),
    ];
    const replayed: number[] = [];
    const replay = async (prefix: JsonEvent[]) => {
      replayed.push(prefix.length);
      return prefix.some((e) => eventNames(e).includes('b')) ? new Error('diverged') : undefined;
    };
    const error = new Error(sdkMessage("Activity type of scheduled event 'b' does not match activity command 'c'"));
    expect(await locateDivergence(events, error, replay)).toEqual({
      eventId: 11,
      eventType: 'ActivityTaskScheduled',
      name: 'b',
      message: "Activity type of scheduled event 'b' does not match activity command 'c'",
    });
    expect(replayed.length).toBeLessThanOrEqual(2);

    // No name to go by: the first event the failing task's commands produced.
    const unnamed = await locateDivergence(events, new Error('something else'), replay);
    expect(unnamed.eventId).toBe(11);

    // An id in the message wins without replaying.
    replayed.length = 0;
    const stated = await locateDivergence(
      events,
      new Error(sdkMessage('Last processed event: 4, event id: 7')),
      replay,
    );
    expect(stated).toMatchObject({ eventId: 7, eventType: 'ActivityTaskCompleted' });
    expect(replayed).toEqual([]);
  });

  it("names the patch marker for core's error on a patch the code no longer asks for", async () => {
    const marker = (id: number, patch: string) =>
      event(id, 'MARKER_RECORDED', {
        markerRecordedEventAttributes: {
          markerName: 'core_patch',
          details: {
            'patch-data': {
              payloads: [{ data: Buffer.from(JSON.stringify({ id: patch, deprecated: false })).toString('base64') }],
            },
          },
        },
      });
    const events = [...firstTask(), activity(5, 'a'), marker(6, 'other-change'), marker(7, 'settle-before-step')];
    const message =
      'Non-deprecated patch marker encountered for change settle-before-step, but there is no corresponding change command!';
    const replay = async (prefix: JsonEvent[]) => (prefix.length >= 7 ? new Error('diverged') : undefined);
    expect(await locateDivergence(events, new Error(sdkMessage(message)), replay)).toEqual({
      eventId: 7,
      eventType: 'MarkerRecorded',
      name: 'settle-before-step',
      message,
    });
  });
});

/** Events 1–4: the execution starts and its first workflow task completes. */
describe('history repair plan', () => {
  // Tasks complete at events 4 and 10; the second task's commands start at 11.
  const events = [
    ...firstTask(),
    activity(5, 'runStep'),
    event(6, 'ACTIVITY_TASK_STARTED'),
    event(7, 'ACTIVITY_TASK_COMPLETED'),
    event(8, 'WORKFLOW_TASK_SCHEDULED'),
    event(9, 'WORKFLOW_TASK_STARTED'),
    event(10, 'WORKFLOW_TASK_COMPLETED'),
    event(11, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED'),
    activity(12, 'runStep'),
    activity(13, 'publishEvents'),
    event(14, 'WORKFLOW_EXECUTION_SIGNALED'),
  ];

  it('resets to the last completed task before the divergence, keeping the events before it', () => {
    expect(lastTaskCompletedBefore(events, 12)).toBe(10);
    expect(lastTaskCompletedBefore(events, 10)).toBe(4);
    expect(lastTaskCompletedBefore(events, 4)).toBeUndefined();
    expect(keptEvents(events, 10).map((e) => Number(e.eventId))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('counts what the reset redoes, and derives one request id per run and event', () => {
    expect(redoneWork(events, 10)).toEqual({ updates: 1, signals: 1, steps: 1, otherActivities: 1 });
    expect(redoneWork(events, 4)).toEqual({ updates: 1, signals: 1, steps: 2, otherActivities: 1 });
    const id = resetRequestId('run-1', 10);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(resetRequestId('run-1', 10)).toBe(id);
    expect(resetRequestId('run-1', 4)).not.toBe(id);
    expect(resetRequestId('run-2', 10)).not.toBe(id);
  });
});

function firstTask(): JsonEvent[] {
  return [
    event(1, 'WORKFLOW_EXECUTION_STARTED'),
    event(2, 'WORKFLOW_TASK_SCHEDULED'),
    event(3, 'WORKFLOW_TASK_STARTED'),
    event(4, 'WORKFLOW_TASK_COMPLETED'),
  ];
}

function event(id: number, type: string, attributes: Record<string, unknown> = {}): JsonEvent {
  return { eventId: String(id), eventType: `EVENT_TYPE_${type}`, ...attributes };
}

function activity(id: number, name: string): JsonEvent {
  return event(id, 'ACTIVITY_TASK_SCHEDULED', {
    activityTaskScheduledEventAttributes: { activityId: String(id), activityType: { name } },
  });
}
