/**
 * Tool calls that need a human's approval (behaviour §2.4): a step's calls park on the run until every approval is
 * decided (approved, declined, or declined when its deadline passed), then the main loop runs them.
 */
import { ThreadRefusal, depthRefusal } from '../../protocol/failures';
import type { StepResult } from '../../protocol/messages';
import type { StepPlan } from '../../protocol/step';
import type { ThreadConfig } from '../../protocol/thread-config';
import { nestedDeeperThan } from '../../protocol/vocabulary';
import type { ToolApproval, ToolApprovalResult } from '../../protocol/views';
import type { Outbox } from './outbox';
import type { ParkedToolCall, RunState, ThreadClock, ThreadSnapshot, ToolWait } from './snapshot';

export const DEFAULT_DECLINE_REASON = 'Tool call was not approved by the user';

/** Decided tool call ids kept, so deciding one again is answered `ToolCallDecided` rather than `ToolCallNotFound`. */
const MAX_DECIDED_TOOL_CALLS = 500;

/** The run waits for a human to approve or decline a tool call. */
export function isParked(run: RunState | null): boolean {
  return run?.toolWait?.calls.some((c) => c.approval?.status === 'waiting') === true;
}

export class Approvals {
  constructor(
    private readonly s: ThreadSnapshot,
    private readonly config: ThreadConfig,
    private readonly clock: ThreadClock,
    private readonly outbox: Pick<Outbox, 'emit'>,
  ) {}

  isParked(): boolean {
    return isParked(this.s.run);
  }

  /** The earliest approval deadline of the parked run (milliseconds since the epoch), if any has one. */
  deadline(): number | undefined {
    const deadlines = (this.s.run?.toolWait?.calls ?? [])
      .filter((c) => c.approval?.status === 'waiting' && c.approval.expiresAt !== undefined)
      .map((c) => c.approval!.expiresAt!);
    return deadlines.length > 0 ? Math.min(...deadlines) : undefined;
  }

  /**
   * Parks the step's tool calls when one needs approval: subscribers get `tool-call-approval` for each, and the run
   * stays active (deliver inputs wait for it; wakes for other agents queue). Returns whether it parked.
   */
  park(plan: StepPlan, result: StepResult): boolean {
    const run = this.s.run;
    if (!run || !result.toolCalls.some((c) => c.approval)) return false;
    const now = this.clock.now();
    run.toolWait = {
      stepKey: plan.stepKey,
      stepNumber: plan.stepNumber,
      calls: result.toolCalls.map((call): ParkedToolCall => {
        if (!call.approval) return { call };
        const timeoutMs = call.approval.timeoutMs ?? this.config.approvalTimeoutMs;
        const approval: NonNullable<ParkedToolCall['approval']> = { status: 'waiting', requestedAt: now };
        if (timeoutMs !== undefined) approval.expiresAt = now + timeoutMs;
        return { call, approval };
      }),
    };
    for (const parked of run.toolWait.calls) {
      if (!parked.approval) continue;
      const { toolCallId, toolName, input } = parked.call;
      this.outbox.emit(
        'tool-call-approval',
        { toolCallId, toolName, args: input, status: 'waiting', expiresAt: parked.approval.expiresAt },
        run.runId,
      );
    }
    return true;
  }

  /**
   * The update validator: throws `ToolCallNotFound` / `ToolCallDecided` without changing anything, or `InvalidInput`
   * for `resumeData` nested deeper than `maxInputDepth` (it becomes the tool's input).
   */
  validate(approval: ToolApproval): void {
    if (nestedDeeperThan(approval.resumeData, this.config.maxInputDepth)) {
      throw depthRefusal('resumeData', this.config.maxInputDepth);
    }
    const parked = this.s.run?.toolWait?.calls.find((c) => c.call.toolCallId === approval.toolCallId);
    if (parked?.approval?.status === 'waiting') return;
    if (parked?.approval || this.s.decidedToolCalls.includes(approval.toolCallId)) {
      throw new ThreadRefusal(
        'ToolCallDecided',
        `Tool call already decided: ${approval.toolCallId} was already approved or declined.`,
        { toolCallId: approval.toolCallId },
      );
    }
    throw new ThreadRefusal(
      'ToolCallNotFound',
      `Unknown tool call: ${approval.toolCallId}: no run of this thread waits for its approval.`,
      { toolCallId: approval.toolCallId },
    );
  }

  /** Records a human's decision; the main loop runs the tools once every approval of the step is decided. */
  decide(approval: ToolApproval): ToolApprovalResult {
    this.validate(approval);
    const run = this.s.run!;
    const parked = run.toolWait!.calls.find((c) => c.call.toolCallId === approval.toolCallId)!;
    const status = approval.approved ? 'approved' : 'declined';
    this.settle(parked, status, approval.declineReason, approval.resumeData);
    return { accepted: true, toolCallId: approval.toolCallId, runId: run.runId, status };
  }

  /** Declines every waiting approval whose deadline passed (`now` from the workflow clock). */
  expire(): void {
    const now = this.clock.now();
    for (const parked of this.s.run?.toolWait?.calls ?? []) {
      const a = parked.approval;
      if (a?.status === 'waiting' && a.expiresAt !== undefined && a.expiresAt <= now) {
        this.settle(parked, 'declined', 'Tool call approval timed out');
      }
    }
  }

  /** The parked calls, once every approval is decided: taken off the run for the main loop to execute. */
  takeDecided(): ToolWait | null {
    const run = this.s.run;
    if (!run?.toolWait || this.isParked()) return null;
    const wait = run.toolWait;
    delete run.toolWait;
    return wait;
  }

  private settle(
    parked: ParkedToolCall,
    status: 'approved' | 'declined',
    declineReason?: string,
    resumeData?: unknown,
  ): void {
    const a = parked.approval!;
    a.status = status;
    if (status === 'declined') a.declineReason = declineReason ?? DEFAULT_DECLINE_REASON;
    if (resumeData !== undefined) a.resumeData = resumeData;
    const decided = this.s.decidedToolCalls;
    decided.push(parked.call.toolCallId);
    if (decided.length > MAX_DECIDED_TOOL_CALLS) decided.splice(0, decided.length - MAX_DECIDED_TOOL_CALLS);
    const { toolCallId, toolName, input } = parked.call;
    this.outbox.emit(
      'tool-call-approval',
      { toolCallId, toolName, args: input, status, ...(a.declineReason ? { declineReason: a.declineReason } : {}) },
      this.s.run!.runId,
    );
  }
}
