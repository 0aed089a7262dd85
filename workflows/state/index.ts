export { ThreadState } from './thread';
export { emptySnapshot, openGates } from './snapshot';
export type {
  NotificationSettings,
  OutboxEvent,
  ParkedToolCall,
  PendingInput,
  QueuedRun,
  RememberedBatch,
  RunState,
  StepOptions,
  ThreadClock,
  ThreadGates,
  ThreadSnapshot,
  ToolWait,
} from './snapshot';
export { DEFAULT_DECLINE_REASON } from './approvals';
export { selectWindow, toInputMessage } from './conversation';
