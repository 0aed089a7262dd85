/**
 * What the operator commands connect with: the worker's settings, read from the command's environment (so Temporal
 * profiles, TLS and API keys work as they do for the worker: config/temporal.ts), a Temporal client on them, and the
 * Threadline client over it. Heavy modules load inside the functions, so `--help` stays fast.
 */
import type { Client, Connection } from '@temporalio/client';
import type { ThreadlineClient } from '../../client/connect';
import { NotFoundError, ValidationError } from '../../protocol/errors';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import {
  readSettings,
  temporalAddress,
  temporalConnectionOptions,
  type Env,
  type Settings,
} from '../../config/settings';
import { UsageError } from './command';
import { formatThreadName } from './thread-name';

/** How long a command waits for the server before it says it cannot reach it. */
const CONNECT_TIMEOUT = '5 seconds';

const GRPC_NOT_FOUND = 5;

export interface Session {
  settings: Settings;
  /** The Temporal server's address, as connected to. */
  address: string;
  connection: Connection;
  temporal: Client;
  threadline: ThreadlineClient;
}

/** The settings a command runs with: the worker's. */
export function commandSettings(env: Env): Settings {
  return readSettings(env, 'worker');
}

/** Connects as the worker would; an unreachable server is an error that says where it looked and what to do. */
export async function connectTemporal(settings: Settings): Promise<Connection> {
  const { Connection } = await import('@temporalio/client');
  const address = temporalAddress(settings);
  try {
    return await Connection.connect({
      ...temporalConnectionOptions(settings.temporal, address),
      connectTimeout: CONNECT_TIMEOUT,
    });
  } catch (err) {
    throw new Error(
      `Cannot reach Temporal at ${address} (${settings.temporal.addressSource ?? 'the default address'}): ${(err as Error).message}. ` +
        'Start the server (`threadline start`, or `temporal server start-dev`), or point TEMPORAL_ADDRESS or a temporal.toml profile at it.',
      { cause: err },
    );
  }
}

/** Whether the namespace exists (without it every thread would read as "not found"). */
export async function namespaceExists(connection: Connection, namespace: string): Promise<boolean> {
  const { isGrpcServiceError } = await import('@temporalio/client');
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND) return false;
    throw err;
  }
}

export function createNamespaceFix(namespace: string): string {
  return `Create it (\`temporal operator namespace create --namespace ${namespace}\`), or set TEMPORAL_NAMESPACE to one that exists.`;
}

/**
 * Runs `use` with a session and closes it after. `bus: true` connects the event bus too (REDIS_URL); otherwise the
 * Threadline client gets an in-process bus nothing publishes to. The client's `ValidationError`s are usage errors.
 */
export async function withSession<T>(
  env: Env,
  use: (session: Session) => Promise<T>,
  options: { bus?: boolean } = {},
): Promise<T> {
  const settings = commandSettings(env);
  const connection = await connectTemporal(settings);
  try {
    const { namespace } = settings.temporal;
    if (!(await namespaceExists(connection, namespace))) {
      throw new Error(
        `Namespace "${namespace}" does not exist on ${temporalAddress(settings)}. ${createNamespaceFix(namespace)}`,
      );
    }
    const { Client } = await import('@temporalio/client');
    const { connect } = await import('../../client/connect');
    const temporal = new Client({ connection, namespace: settings.temporal.namespace });
    const threadline = await connect({
      client: temporal,
      taskQueue: settings.temporal.taskQueue,
      redisUrl: options.bus ? settings.redisUrl : undefined,
    });
    try {
      return await use({ settings, address: temporalAddress(settings), connection, temporal, threadline });
    } catch (err) {
      if (err instanceof ValidationError) throw new UsageError(err.message, { cause: err });
      throw err;
    } finally {
      await threadline.close();
    }
  } finally {
    await connection.close();
  }
}

/** `value`, or a `NotFoundError` naming the thread when it is `null` (the thread does not exist). */
export function found<T>(value: T | null, target: ThreadTarget, settings: Settings): T {
  if (value !== null) return value;
  throw new NotFoundError(
    `No thread ${formatThreadName(target)} (workflow id ${threadKey(target.resourceId, target.threadId)}) in namespace "${settings.temporal.namespace}". ` +
      '`threadline threads list` lists the threads there.',
  );
}
