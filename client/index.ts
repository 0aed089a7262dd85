/**
 * The TypeScript client over Temporal: send to threads, subscribe to their events, read and steer them.
 *
 * @example
 * import { connect } from 'threadline/client';
 * const threadline = await connect({ address: 'localhost:7233' });
 * const agent = threadline.agent('support');
 */
export { AgentClient, connect, ThreadlineClient, type ConnectOptions, type SendResult } from './connect';
export { threadlineConnectionOptions, threadlineGrpcRetryOptions } from './grpc-retry';
export type { IngressLimits } from './inputs';
export type { ThreadSubscription } from './subscription';
export {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  ThreadlineError,
  UnauthorizedError,
  UnavailableError,
  ValidationError,
  isConflictError,
  isForbiddenError,
  isNotFoundError,
  isRateLimitedError,
  isThreadlineError,
  isUnauthorizedError,
  isUnavailableError,
  isValidationError,
} from '../protocol/errors';
