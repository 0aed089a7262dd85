/**
 * The TypeScript client: talks to threads through Temporal (update-with-start, queries) and reads their streams
 * from the bus.
 */
import {
  Client,
  Connection,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  isGrpcServiceError,
} from '@temporalio/client';
import type { EventBus } from './bus/types';
import { ConflictError, ThreadlineError, ValidationError } from './errors';
import { messageInput, type IngressLimits, type SendTarget } from './inputs';
import { defaultLimits, type InputResult, type MessageInput, type ThreadInput, type ThreadTarget } from './schemas';
import { settingsFromEnv, temporalConnectionOptions } from './settings';
import { subscribe, type SubscribeOptions, type ThreadSubscription } from './subscription';
import { threadKey } from '../workflows/ids';
import { submitInputUpdate, threadMessagesQuery, threadStateQuery, type MessagesPage } from '../workflows/definitions';
import type { ThreadConfigInput, ThreadView } from '../workflows/thread-state';
import type { threadWorkflow } from '../workflows/thread';

/** gRPC status codes Threadline reacts to. */
const grpcStatus = { NOT_FOUND: 5, RESOURCE_EXHAUSTED: 8, ABORTED: 10, UNAVAILABLE: 14 } as const;

export interface ConnectOptions {
  bus: EventBus;
  /** An existing Temporal client; otherwise one is made from `address`/`namespace` (or TEMPORAL_* settings). */
  client?: Client;
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /** Settings a thread is created with (continue-as-new threshold, timeouts, limits). Carried across continue-as-new. */
  threadConfig?: ThreadConfigInput;
  limits?: Partial<IngressLimits>;
}

/** What a send returns: the thread's decision, and `persisted`, resolved once the input is in the thread's history. */
export type SendResult = InputResult & { persisted: Promise<void> };

export class ThreadlineClient {
  readonly temporal: Client;
  readonly bus: EventBus;
  readonly taskQueue: string;
  readonly threadConfig: ThreadConfigInput | undefined;
  readonly limits: IngressLimits;
  private readonly ownConnection: Connection | null;

  constructor(temporal: Client, options: ConnectOptions, ownConnection: Connection | null) {
    this.temporal = temporal;
    this.bus = options.bus;
    this.taskQueue = options.taskQueue ?? settingsFromEnv().temporalTaskQueue;
    this.threadConfig = options.threadConfig;
    this.limits = { ...defaultLimits, ...options.limits };
    this.ownConnection = ownConnection;
  }

  agent(agentId: string): AgentClient {
    return new AgentClient(this, agentId);
  }

  /** Delivers an input with update-with-start: the first input to a thread starts exactly one execution. */
  async submit(target: ThreadTarget, input: ThreadInput): Promise<SendResult> {
    const workflowId = threadKey(target.resourceId, target.threadId);
    for (let attempt = 1; ; attempt++) {
      const startWorkflowOperation = new WithStartWorkflowOperation<typeof threadWorkflow>('threadWorkflow', {
        workflowId,
        taskQueue: this.taskQueue,
        args: [{ resourceId: target.resourceId, threadId: target.threadId, config: this.threadConfig }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      try {
        const result = await this.temporal.workflow.executeUpdateWithStart(submitInputUpdate, {
          args: [input],
          startWorkflowOperation,
        });
        // An accepted update is already in the thread's history.
        return { ...result, persisted: Promise.resolve() };
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) {
          const message = (err.cause as Error | undefined)?.message ?? err.message;
          if (/^Invalid input/.test(message)) throw new ValidationError(message, { cause: err });
          throw new ConflictError(message, { cause: err });
        }
        // Temporal caps in-flight updates per workflow (10): back off briefly and try again.
        if (isRetryableRpc(err) && attempt < 20) {
          await new Promise((r) => setTimeout(r, Math.min(1_000, 10 * 2 ** attempt)));
          continue;
        }
        throw new ThreadlineError(`Could not deliver the input: ${(err as Error).message}`, { cause: err });
      }
    }
  }

  async getThread(target: ThreadTarget): Promise<ThreadView | null> {
    try {
      return await this.temporal.workflow
        .getHandle(threadKey(target.resourceId, target.threadId))
        .query(threadStateQuery);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async getMessages(
    target: ThreadTarget,
    page: { limit?: number; before?: string } = {},
  ): Promise<MessagesPage | null> {
    try {
      return await this.temporal.workflow
        .getHandle(threadKey(target.resourceId, target.threadId))
        .query(threadMessagesQuery, page);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  subscribeToThread(target: ThreadTarget, options: SubscribeOptions = {}): ThreadSubscription {
    return subscribe(this.bus, threadKey(target.resourceId, target.threadId), options, async () => ({
      thread: await this.getThread(target),
      messages: (await this.getMessages(target, { limit: 20 }))?.messages ?? [],
    }));
  }

  async close(): Promise<void> {
    await this.ownConnection?.close();
  }
}

/** One agent's view of threads: the SPEC §6 client API. */
export class AgentClient {
  constructor(
    private readonly client: ThreadlineClient,
    readonly agentId: string,
  ) {}

  /** Joins the active run at the next step boundary, or starts a run. */
  async sendMessage(message: MessageInput, target: SendTarget, options: { id?: string } = {}): Promise<SendResult> {
    const input = messageInput(this.agentId, 'send', message, target, { ...options, limits: this.client.limits });
    return this.client.submit(target, input);
  }

  /** Runs after the active run finishes (in acceptance order), or starts a run when idle. */
  async queueMessage(message: MessageInput, target: SendTarget, options: { id?: string } = {}): Promise<SendResult> {
    const input = messageInput(this.agentId, 'queue', message, target, { ...options, limits: this.client.limits });
    return this.client.submit(target, input);
  }

  subscribeToThread(target: ThreadTarget, options?: SubscribeOptions): ThreadSubscription {
    return this.client.subscribeToThread(target, options);
  }

  getThread(target: ThreadTarget): Promise<ThreadView | null> {
    return this.client.getThread(target);
  }
}

/**
 * Connects to Temporal (standard TEMPORAL_* settings unless given) and returns the Threadline client.
 * @example const client = await connect({ bus: new MemoryBus() }); await client.agent('assistant').sendMessage('hi', { resourceId: 'u1', threadId: 't1' });
 */
export async function connect(options: ConnectOptions): Promise<ThreadlineClient> {
  if (options.client) return new ThreadlineClient(options.client, options, null);
  const settings = settingsFromEnv();
  const address = options.address ?? settings.temporalAddress ?? `127.0.0.1:${settings.temporalPort}`;
  const connection = await Connection.connect(temporalConnectionOptions(settings, address));
  const temporal = new Client({ connection, namespace: options.namespace ?? settings.temporalNamespace });
  return new ThreadlineClient(temporal, options, connection);
}

function isNotFound(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === grpcStatus.NOT_FOUND);
}

function isRetryableRpc(err: unknown): boolean {
  const cause = (err as { cause?: unknown })?.cause ?? err;
  const code = isGrpcServiceError(cause) ? cause.code : isGrpcServiceError(err) ? err.code : undefined;
  return code === grpcStatus.RESOURCE_EXHAUSTED || code === grpcStatus.UNAVAILABLE || code === grpcStatus.ABORTED;
}
