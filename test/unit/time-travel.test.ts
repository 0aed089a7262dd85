/**
 * Time travel's pure parts: the steps a history chain lists (numbering, status, what a step's input or summary says)
 * and the state a fork starts from.
 */
import { describe, expect, it } from 'vitest';
import type { ChainExecution, HistoryEventJson } from '../../client/history-chain';
import { jsonPayloadValue } from '../../client/history-chain';
import { listSteps } from '../../client/steps';
import type { StoredMessage } from '../../protocol/messages';
import { emptySnapshot, type ThreadSnapshot } from '../../workflows/state';
import { forkSnapshot } from '../../worker/fork';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const json = (value: unknown) => ({ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(value)) });

let nextId = 0;
function event(eventType: string, attributes: Record<string, unknown> = {}, extra: object = {}): HistoryEventJson {
  nextId += 1;
  return {
    eventId: String(nextId),
    eventType: `EVENT_TYPE_${eventType}`,
    eventTime: `2026-01-01T00:00:0${nextId % 10}Z`,
    ...attributes,
    ...extra,
  };
}

function started(args: unknown): HistoryEventJson {
  return event('WORKFLOW_EXECUTION_STARTED', {
    workflowExecutionStartedEventAttributes: {
      workflowType: { name: 'threadWorkflow' },
      input: { payloads: [json(args)] },
    },
  });
}

/** A `runStep` scheduling: its input as the workflow sends it (or unreadable), its summary. */
function step(input: object | 'binary', summary: string): HistoryEventJson {
  const payload = input === 'binary' ? { metadata: { encoding: b64('binary/plain') }, data: b64('x') } : json(input);
  return event(
    'ACTIVITY_TASK_SCHEDULED',
    { activityTaskScheduledEventAttributes: { activityType: { name: 'runStep' }, input: { payloads: [payload] } } },
    { userMetadata: { summary: json(summary) } },
  );
}

function outcome(type: string, scheduled: HistoryEventJson): HistoryEventJson {
  const key = `activityTask${type.charAt(0)}${type
    .slice(1)
    .toLowerCase()
    .replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}EventAttributes`;
  return event(`ACTIVITY_TASK_${type}`, { [key]: { scheduledEventId: scheduled.eventId } });
}

const execution = (runId: string, events: HistoryEventJson[]): ChainExecution => ({
  runId,
  eventCount: events.length,
  history: { events },
});

describe('listSteps', () => {
  it('numbers steps across the chain from their inputs, with each outcome', () => {
    const s1 = step({ runId: 'r1', agentId: 'a', stepNumber: 1, stepKey: '1' }, 'step 1 · a');
    const s2 = step({ runId: 'r1', agentId: 'a', stepNumber: 2, stepKey: '2' }, 'step 2 · a');
    const describe = event('ACTIVITY_TASK_SCHEDULED', {
      activityTaskScheduledEventAttributes: {
        activityType: { name: 'describeAgent' },
        input: { payloads: [json('a')] },
      },
    });
    const first = execution('e1', [
      started({ resourceId: 'r', threadId: 't' }),
      describe,
      s1,
      outcome('COMPLETED', s1),
      s2,
      outcome('FAILED', s2),
      event('WORKFLOW_EXECUTION_CONTINUED_AS_NEW'),
    ]);
    const s3 = step({ runId: 'r2', agentId: 'b', stepNumber: 1, stepKey: '3' }, 'step 1 · b');
    const s4 = step({ runId: 'r2', agentId: 'b', stepNumber: 2, stepKey: '4' }, 'step 2 · b');
    const s5 = step({ runId: 'r2', agentId: 'b', stepNumber: 3, stepKey: '5' }, 'step 3 · b');
    const second = execution('e2', [
      started({ resourceId: 'r', threadId: 't', snapshot: { stepSeq: 2 } }),
      s3,
      outcome('CANCELED', s3),
      s4,
      outcome('TIMED_OUT', s4),
      s5,
      // An update completing does not close the execution: the step in flight is still running.
      event('WORKFLOW_EXECUTION_UPDATE_COMPLETED'),
    ]);
    const steps = listSteps([first, second]);
    expect(steps.map((s) => [s.step, s.runId, s.stepNumber, s.agentId, s.status, s.execution])).toEqual([
      [1, 'r1', 1, 'a', 'completed', 'e1'],
      [2, 'r1', 2, 'a', 'failed', 'e1'],
      [3, 'r2', 1, 'b', 'cancelled', 'e2'],
      [4, 'r2', 2, 'b', 'failed', 'e2'],
      [5, 'r2', 3, 'b', 'running', 'e2'],
    ]);
    expect(steps[0]).toMatchObject({ summary: 'step 1 · a', startedAt: s1.eventTime });
  });

  it('counts from the stepSeq a fork started with when inputs cannot be read; the summary names agent and step', () => {
    const s1 = step('binary', 'step 4 · critic');
    const s2 = step('binary', 'step 5 · critic');
    const chain = [
      execution('e1', [
        started({ resourceId: 'r', threadId: 'fork', snapshot: { stepSeq: 6 } }),
        s1,
        outcome('COMPLETED', s1),
        s2,
        event('WORKFLOW_EXECUTION_TERMINATED'),
      ]),
    ];
    expect(listSteps(chain).map((s) => [s.step, s.stepNumber, s.agentId, s.status])).toEqual([
      [7, 4, 'critic', 'completed'],
      // Never finished, and the execution closed: it will not finish either.
      [8, 5, 'critic', 'cancelled'],
    ]);
  });

  it('reads only plain JSON payloads', () => {
    expect(jsonPayloadValue(json({ a: 1 }))).toEqual({ a: 1 });
    expect(jsonPayloadValue({ metadata: { encoding: b64('binary/encrypted') }, data: b64('{}') })).toBeUndefined();
    expect(jsonPayloadValue(undefined)).toBeUndefined();
  });
});

describe('forkSnapshot', () => {
  const message: StoredMessage = { id: 'm1', role: 'user', type: 'user', contents: 'hi', at: 1 };
  const source = (): ThreadSnapshot => ({
    ...emptySnapshot('acme', 'source'),
    messages: [message],
    run: {
      runId: 'run-1',
      agentId: 'helper',
      stepNumber: 2,
      pending: [
        { input: { id: 'in-2', type: 'user', contents: 'and now?', agentId: 'helper' } as never, acceptedAt: 5 },
      ],
      startedAt: 1,
      interruptRequested: true,
    },
    queue: [{ runId: 'run-2', agentId: 'helper', inputs: [] }],
    outbox: [{ key: 'w:7', type: 'data-user-message', payload: {}, at: 4 }],
    remembered: [['in-1', { accepted: true, action: 'wake', signalId: 'in-1' }]],
    rememberedBatches: [['b1', { ids: ['n1'], actions: ['deliver'], coalesced: [0] }]],
    evicted: [{ id: 'n0' } as never],
    eventSeq: 7,
    stepSeq: 3,
    lanes: { browser: { version: 2 } as never },
    inbox: [{ id: 'n1' } as never],
  });
  const clock = { now: () => 100, newId: () => 'new-id' };

  it('keeps the conversation, the run about to step, lanes and inbox; drops what belongs to the source', () => {
    const original = source();
    const fork = forkSnapshot(original, { to: { resourceId: 'acme', threadId: 'what-if' }, clock });
    expect(fork).toMatchObject({
      resourceId: 'acme',
      threadId: 'what-if',
      messages: [message],
      queue: [],
      remembered: [],
      rememberedBatches: [],
      evicted: [],
      stepSeq: 3,
      eventSeq: 8,
      lanes: original.lanes,
      inbox: original.inbox,
    });
    expect(fork.run).toEqual({ ...original.run, interruptRequested: false });
    // The fork's subscribers see the run start before the step.
    expect(fork.outbox).toEqual([
      { key: 'w:8', type: 'start', payload: { runId: 'run-1', agentId: 'helper' }, at: 100, runId: 'run-1' },
    ]);
    expect(original).toEqual(source());
  });

  it('re-runs the step with another agent', () => {
    const fork = forkSnapshot(source(), { to: { resourceId: 'acme', threadId: 'b' }, agentId: 'critic', clock });
    expect(fork.run?.agentId).toBe('critic');
    expect(fork.outbox[0].payload).toEqual({ runId: 'run-1', agentId: 'critic' });
  });
});
