/**
 * Threadline's search attributes in a namespace: registering them (`threadline setup`, the test setup) and checking
 * them (every worker at start; `threadline doctor`; the client, before it resends a start the server refused for an
 * attribute its namespace cache has not learnt yet). A thread's workflow upserts them, and Temporal fails a workflow
 * task that upserts an attribute the namespace does not know, over and over: so a worker refuses to start without
 * them rather than leave every thread it touches stuck.
 *
 * @example
 * const { added } = await registerSearchAttributes(connection, 'default'); // safe to run again: adds what is missing
 */
import { isGrpcServiceError, type OperatorService } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { ThreadlineError } from '../protocol/errors';
import {
  searchAttributeTypeName,
  threadSearchAttributes,
  type SearchAttributeKey,
} from '../protocol/search-attributes';

/** `temporal.api.enums.v1.IndexedValueType`, as the operator service takes and answers it. */
const indexedValueTypes: Record<SearchAttributeType, number> = {
  TEXT: 1,
  KEYWORD: 2,
  INT: 3,
  DOUBLE: 4,
  BOOL: 5,
  DATETIME: 6,
  KEYWORD_LIST: 7,
};
const typeNames = new Map(
  Object.entries(indexedValueTypes).map(([type, value]) => [
    value,
    searchAttributeTypeName(type as SearchAttributeType),
  ]),
);

const GRPC = { alreadyExists: 6, permissionDenied: 7, unimplemented: 12 } as const;

/** Any connection with the operator service: `Connection` (client) or `NativeConnection` (worker). */
export interface OperatorConnection {
  operatorService: OperatorService;
}

/** A namespace lacks Threadline's search attributes or has one with another type. */
export class SearchAttributesError extends ThreadlineError {
  override name = 'SearchAttributesError';
}

export interface SearchAttributeState {
  /** Registered with the right type. */
  present: string[];
  missing: SearchAttributeKey[];
  /** Registered with another type: `ThreadlinePendingApprovals is Keyword, Threadline needs Int`. */
  mismatched: { key: SearchAttributeKey; registered: string }[];
}

/** What the namespace has of Threadline's attributes. */
export async function inspectSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
): Promise<SearchAttributeState> {
  const { customAttributes, systemAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const registered = { ...systemAttributes, ...customAttributes } as Record<string, number>;
  const state: SearchAttributeState = { present: [], missing: [], mismatched: [] };
  for (const key of threadSearchAttributes) {
    const type = registered[key.name];
    if (type === undefined) state.missing.push(key);
    else if (type !== indexedValueTypes[key.type]) {
      state.mismatched.push({ key, registered: typeNames.get(type) ?? `type ${type}` });
    } else state.present.push(key.name);
  }
  return state;
}

/**
 * Registers the attributes the namespace lacks; those already there stay (running it again changes nothing). An
 * attribute registered with another type is an error: Threadline cannot use it, and Temporal cannot change a type.
 */
export async function registerSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
): Promise<{ added: string[]; present: string[] }> {
  const state = await inspectSearchAttributes(connection, namespace);
  if (state.mismatched.length > 0) throw mismatchError(state, namespace);
  if (state.missing.length === 0) return { added: [], present: state.present };
  const searchAttributes = Object.fromEntries(state.missing.map((key) => [key.name, indexedValueTypes[key.type]]));
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (err) {
    // Another `setup` added them meanwhile: fine if they now have the right types.
    if (isGrpcServiceError(err) && err.code === GRPC.alreadyExists) {
      const again = await inspectSearchAttributes(connection, namespace);
      if (again.mismatched.length > 0) throw mismatchError(again, namespace);
      if (again.missing.length === 0) return { added: [], present: again.present };
    }
    throw new SearchAttributesError(
      `Could not register the search attributes ${describe(state.missing)} in namespace "${namespace}": ` +
        `${(err as Error).message}. On Temporal Cloud, add them in the Cloud UI or with tcld (names and types as listed).`,
      { cause: err },
    );
  }
  return { added: state.missing.map((key) => key.name), present: state.present };
}

/**
 * Throws a `SearchAttributesError` saying to run `threadline setup` when the namespace lacks an attribute or has one
 * with another type. A server that does not let this connection list them (no operator permission) is trusted.
 */
export async function checkSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
  warn: (message: string) => void = (message) => console.warn(message),
): Promise<void> {
  let state: SearchAttributeState;
  try {
    state = await inspectSearchAttributes(connection, namespace);
  } catch (err) {
    if (isGrpcServiceError(err) && (err.code === GRPC.permissionDenied || err.code === GRPC.unimplemented)) {
      warn(
        `Could not list the search attributes of namespace "${namespace}" (${err.details || err.message}); ` +
          `assuming ${threadSearchAttributes.map((key) => key.name).join(', ')} are registered.`,
      );
      return;
    }
    throw err;
  }
  if (state.mismatched.length > 0) throw mismatchError(state, namespace);
  if (state.missing.length > 0) {
    throw new SearchAttributesError(
      `Namespace "${namespace}" lacks the search attributes ${describe(state.missing)}, which thread workflows ` +
        'keep current: without them every thread would fail its workflow tasks. Register them once per namespace ' +
        'with `threadline setup` (same Temporal settings as this worker), then start the worker again.',
    );
  }
}

function mismatchError(state: SearchAttributeState, namespace: string): SearchAttributesError {
  const found = state.mismatched.map(
    ({ key, registered }) => `${key.name} is ${registered}, Threadline needs ${searchAttributeTypeName(key.type)}`,
  );
  return new SearchAttributesError(
    `Namespace "${namespace}" has search attributes of the wrong type: ${found.join('; ')}. Remove them ` +
      '(`temporal operator search-attribute remove --name <name>`) and run `threadline setup` again.',
  );
}

function describe(keys: readonly SearchAttributeKey[]): string {
  return keys.map((key) => `${key.name} (${searchAttributeTypeName(key.type)})`).join(', ');
}
