export { createHttpClient, HttpAgent, ThreadlineHttpClient, type HttpSubscribeOptions } from './client';
export { isThreadlineHttpError, ThreadlineHttpError, type ErrorBody } from './errors';
export { parseSse, type SseItem, type SseMessage } from './sse';
export { type HttpThreadSubscription, type ProcessDataStreamOptions, type ReconnectOptions } from './subscription';
export type {
  AbortResult,
  HttpClientOptions,
  HttpSendResult,
  InputResult,
  MessageInput,
  MessagesPage,
  NotificationInput,
  NotificationPage,
  NotificationPriority,
  NotificationQuery,
  NotificationRecord,
  NotificationSendResult,
  NotificationStatus,
  SendOptions,
  SendTarget,
  SignalInput,
  StateSignalInput,
  ThreadTarget,
  ThreadView,
  ToolApprovalRequest,
  ToolApprovalResult,
} from './types';
export type { AgentSummary } from '../protocol/api';
export type { ForkRequest, StepList, StepListing, StepPrompt, StepStatus } from '../protocol/time-travel';
export type { ThreadEvent } from '../protocol/events';
