import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../../../protocol/messages';
import type { ThreadConfigInput } from '../../../protocol/thread-config';
import { ThreadState } from '../../../workflows/state';
import { fakeClock, input, newThread, refusal, stepResult } from './support';

const needsApproval = (id: string, timeoutMs?: number): ToolCall => ({
  toolCallId: id,
  toolName: 'deploy',
  input: { env: 'prod' },
  approval: timeoutMs === undefined ? {} : { timeoutMs },
});
const plain = (id: string): ToolCall => ({ toolCallId: id, toolName: 'lookup', input: {} });

/** A run whose first step asked for `calls`, parked if one needs approval; the outbox emptied. */
function parked(calls: ToolCall[], config: ThreadConfigInput = {}) {
  const { thread, clock } = newThread(config);
  thread.accept(input('m1'));
  const plan = thread.planStep();
  const result = stepResult(calls);
  thread.completeStep(plan, result);
  const didPark = thread.parkTools(plan, result);
  return { thread, clock, plan, didPark, events: thread.takeOutbox() };
}

const approvalEvents = (thread: ThreadState) =>
  thread
    .takeOutbox()
    .filter((e) => e.type === 'tool-call-approval')
    .map((e) => e.payload);

describe('parking tool calls for approval (behaviour §2.4)', () => {
  it('does not park a step whose calls need no approval', () => {
    const { didPark, thread } = parked([plain('c1')]);
    expect(didPark).toBe(false);
    expect(thread.isParked()).toBe(false);
    expect(thread.takeDecidedTools()).toBeNull();
  });

  it('parks the run: subscribers are asked, the view shows it waiting, the main loop has nothing to do', () => {
    const { didPark, thread, events } = parked([needsApproval('c1', 500), plain('c2')]);
    expect(didPark).toBe(true);
    expect(events.map((e) => [e.type, e.runId, e.payload])).toEqual([
      [
        'tool-call-approval',
        'id-1',
        { toolCallId: 'c1', toolName: 'deploy', args: { env: 'prod' }, status: 'waiting', expiresAt: 1_500 },
      ],
    ]);
    expect(thread.isParked()).toBe(true);
    expect(thread.hasWork()).toBe(false);
    expect(thread.approvalDeadline()).toBe(1_500);
    expect(thread.view().activeRun).toMatchObject({
      status: 'awaiting-approval',
      approvals: [
        {
          toolCallId: 'c1',
          toolName: 'deploy',
          args: { env: 'prod' },
          status: 'waiting',
          requestedAt: 1_000,
          expiresAt: 1_500,
        },
      ],
    });
    expect(thread.takeDecidedTools()).toBeNull();
  });

  it('uses the thread’s approval timeout unless the tool sets its own, and none without either', () => {
    expect(parked([needsApproval('c1')], { approvalTimeoutMs: 2_000 }).thread.approvalDeadline()).toBe(3_000);
    expect(parked([needsApproval('c1', 10)], { approvalTimeoutMs: 2_000 }).thread.approvalDeadline()).toBe(1_010);
    expect(parked([needsApproval('c1')]).thread.approvalDeadline()).toBeUndefined();
  });
});

describe('deciding approvals', () => {
  it('approve: the call runs with the others, with its resume data', () => {
    const { thread } = parked([needsApproval('c1'), plain('c2')]);
    expect(thread.decideApproval({ toolCallId: 'c1', approved: true, resumeData: { ok: 1 } })).toEqual({
      accepted: true,
      toolCallId: 'c1',
      runId: 'id-1',
      status: 'approved',
    });
    expect(approvalEvents(thread)).toEqual([
      { toolCallId: 'c1', toolName: 'deploy', args: { env: 'prod' }, status: 'approved' },
    ]);
    expect(thread.isParked()).toBe(false);
    expect(thread.hasWork()).toBe(true);
    const wait = thread.takeDecidedTools()!;
    expect(wait.stepKey).toBe('1');
    expect(wait.calls.map((c) => [c.call.toolCallId, c.approval?.status, c.approval?.resumeData])).toEqual([
      ['c1', 'approved', { ok: 1 }],
      ['c2', undefined, undefined],
    ]);
    expect(thread.takeDecidedTools()).toBeNull();
  });

  it('decline: with the reason given, or the default one', () => {
    const { thread } = parked([needsApproval('c1'), needsApproval('c2')]);
    thread.decideApproval({ toolCallId: 'c1', approved: false, declineReason: 'not today' });
    expect(thread.isParked()).toBe(true);
    thread.decideApproval({ toolCallId: 'c2', approved: false });
    expect(approvalEvents(thread)).toEqual([
      expect.objectContaining({ toolCallId: 'c1', status: 'declined', declineReason: 'not today' }),
      expect.objectContaining({
        toolCallId: 'c2',
        status: 'declined',
        declineReason: 'Tool call was not approved by the user',
      }),
    ]);
    expect(thread.takeDecidedTools()!.calls.map((c) => c.approval?.declineReason)).toEqual([
      'not today',
      'Tool call was not approved by the user',
    ]);
  });

  it('expires waiting approvals once their deadline passed, not before', () => {
    const { thread, clock } = parked([needsApproval('c1', 500), needsApproval('c2', 900)]);
    clock.advance(499);
    thread.expireApprovals();
    expect(thread.takeOutbox()).toEqual([]);
    clock.advance(1);
    thread.expireApprovals();
    expect(approvalEvents(thread)).toEqual([
      expect.objectContaining({ toolCallId: 'c1', status: 'declined', declineReason: 'Tool call approval timed out' }),
    ]);
    expect(thread.approvalDeadline()).toBe(1_900);
    clock.advance(400);
    thread.expireApprovals();
    expect(thread.isParked()).toBe(false);
    expect(thread.approvalDeadline()).toBeUndefined();
  });

  it('refuses an unknown tool call with ToolCallNotFound, changing nothing', () => {
    const { thread } = parked([needsApproval('c1')]);
    expect(refusal(() => thread.decideApproval({ toolCallId: 'nope', approved: true }))).toMatchObject({
      type: 'ToolCallNotFound',
      details: { toolCallId: 'nope' },
    });
    expect(thread.isParked()).toBe(true);
    expect(thread.takeOutbox()).toEqual([]);
  });

  it('refuses deciding again with ToolCallDecided, also after the calls ran and across continue-as-new', () => {
    const { thread } = parked([needsApproval('c1'), needsApproval('c2')]);
    thread.decideApproval({ toolCallId: 'c1', approved: true });
    const again = { toolCallId: 'c1', approved: false };
    expect(refusal(() => thread.validateApproval(again))).toMatchObject({
      type: 'ToolCallDecided',
      details: { toolCallId: 'c1' },
    });
    thread.decideApproval({ toolCallId: 'c2', approved: true });
    thread.takeDecidedTools();
    expect(refusal(() => thread.decideApproval(again)).type).toBe('ToolCallDecided');
    const next = new ThreadState(JSON.parse(JSON.stringify(thread.snapshot())), thread.config, fakeClock());
    expect(refusal(() => next.validateApproval(again)).type).toBe('ToolCallDecided');
  });

  it('remembers only the newest 500 decided calls', () => {
    const calls = Array.from({ length: 501 }, (_, i) => needsApproval(`c${i}`));
    const { thread } = parked(calls);
    for (const c of calls) thread.decideApproval({ toolCallId: c.toolCallId, approved: true });
    thread.takeDecidedTools();
    expect(refusal(() => thread.validateApproval({ toolCallId: 'c0', approved: true })).type).toBe('ToolCallNotFound');
    expect(refusal(() => thread.validateApproval({ toolCallId: 'c1', approved: true })).type).toBe('ToolCallDecided');
  });
});

describe('abort while parked', () => {
  it('answers every parked call with an error result, so the conversation stays valid', () => {
    const { thread } = parked([needsApproval('c1'), plain('c2')]);
    thread.requestAbort(false);
    expect(thread.hasWork()).toBe(true);
    thread.abortRun();
    const events = thread.takeOutbox();
    expect(events.map((e) => [e.type, (e.payload as { toolCallId?: string }).toolCallId])).toEqual([
      ['tool-result', 'c1'],
      ['tool-result', 'c2'],
      ['abort', undefined],
    ]);
    expect(thread.messages.at(-1)).toEqual({
      id: 't:1',
      role: 'tool',
      runId: 'id-1',
      at: 1_000,
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'deploy',
          output: 'Tool deploy did not run: the run was aborted',
          isError: true,
        },
        {
          type: 'tool-result',
          toolCallId: 'c2',
          toolName: 'lookup',
          output: 'Tool lookup did not run: the run was aborted',
          isError: true,
        },
      ],
    });
    expect(thread.isActive()).toBe(false);
    expect(refusal(() => thread.validateApproval({ toolCallId: 'c1', approved: true })).type).toBe('ToolCallNotFound');
  });
});
