/**
 * Where a replay diverged. The SDK's replay error carries core's message, which names the event only sometimes
 * ("… event id: 26"); a nondeterminism error such as "Activity type of scheduled event 'x' does not match …" does
 * not. Then the history is bisected by workflow task (a prefix ending at a WorkflowTaskStarted replays everything
 * before that task), and the event is the one the message names inside the first task that fails.
 *
 * Works on histories in Temporal's JSON form (what `historyToJSON` writes and a history export holds).
 */

/** One history event in Temporal's JSON form. */
export interface JsonEvent {
  eventId: string;
  eventType: string;
  [attributes: string]: unknown;
}

export interface Divergence {
  eventId: number;
  /** As the Temporal UI names it: `ActivityTaskScheduled`. */
  eventType: string;
  /** What the event names (activity type, timer id, update or signal name), when it names something. */
  name?: string;
  /** Core's own message, without the SDK's wrapping. */
  message: string;
}

/** Replays the history made of `events`; resolves with the error, or undefined when it replays cleanly. */
export type ReplayEvents = (events: JsonEvent[]) => Promise<Error | undefined>;

export async function locateDivergence(events: JsonEvent[], error: Error, replay: ReplayEvents): Promise<Divergence> {
  const message = coreMessage(error.message);
  const explicit = explicitEventId(message);
  const byId = explicit === undefined ? undefined : events.find((e) => Number(e.eventId) === explicit);
  if (byId) return describe(byId, message);
  const window = await failingTask(events, replay);
  const names = namesInMessage(message);
  const named = window.find((event) => eventNames(event).some((name) => names.includes(name)));
  // Without a name to go by: the first event the task's commands produced (after its WorkflowTaskCompleted).
  const completed = window.findIndex((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED');
  const event = named ?? window[completed + 1] ?? window[0] ?? events[events.length - 1];
  return describe(event, message);
}

/** The innermost failure message of an SDK replay error (`… Failure { message: "…", … }`), else the whole. */
export function coreMessage(text: string): string {
  const match = /Failure \{ message: "((?:[^"\\]|\\.)*)"/.exec(text);
  return match ? match[1].replace(/\\(.)/g, '$1') : text;
}

/** An event id the message states (`event id: 26`, `HistoryEvent(id: 26`, `event_id: 26`). */
export function explicitEventId(message: string): number | undefined {
  const match = /(?:event[ _]id:?\s*|HistoryEvent\(id:\s*)(\d+)/i.exec(message);
  return match ? Number(match[1]) : undefined;
}

/** What a message names: quoted names, and the patch of core's "patch marker encountered for change X, but …". */
export function namesInMessage(message: string): string[] {
  const quoted = [...message.matchAll(/'([^']+)'/g)].map((m) => m[1]);
  const patch = /patch marker encountered for change (.+?), but/i.exec(message);
  return patch ? [patch[1], ...quoted] : quoted;
}

/** `EVENT_TYPE_ACTIVITY_TASK_SCHEDULED` → `ActivityTaskScheduled`. */
export function eventTypeName(eventType: string): string {
  return eventType
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_, _sep: string, c: string) => c.toUpperCase());
}

/**
 * What an event names, its own name first: the activity or workflow type, timer id, signal, marker (a patch marker: its
 * patch id first) or update name.
 * (Payloads are skipped: the names are in the attributes' plain fields.)
 */
export function eventNames(event: JsonEvent): string[] {
  const key = Object.keys(event).find((k) => k.endsWith('EventAttributes'));
  const attributes = (key ? event[key] : undefined) as Record<string, unknown> | undefined;
  if (!attributes) return [];
  const at = (...path: string[]) =>
    path.reduce<unknown>((value, step) => (value as Record<string, unknown> | undefined)?.[step], attributes);
  const names = [
    at('markerName') === PATCH_MARKER ? patchId(at('details', 'patch-data', 'payloads', '0')) : undefined,
    at('activityType', 'name'),
    at('workflowType', 'name'),
    at('timerId'),
    at('signalName'),
    at('markerName'),
    at('acceptedRequest', 'input', 'name'),
    at('activityId'),
    at('protocolInstanceId'),
  ];
  return names.filter((name): name is string => typeof name === 'string' && name !== '');
}

/** Core's marker for `patched()`: `{ id, deprecated }` under the `patch-data` key. */
const PATCH_MARKER = 'core_patch';

function patchId(payload: unknown): string | undefined {
  const data = (payload as { data?: unknown } | undefined)?.data;
  if (typeof data !== 'string') return undefined;
  try {
    const id = (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id?: unknown }).id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The events of the first workflow task whose replay fails: prefixes end at each WorkflowTaskStarted (and the last at
 * the history's end); the smallest failing one, found by bisection, and the events since the prefix before it.
 */
async function failingTask(events: JsonEvent[], replay: ReplayEvents): Promise<JsonEvent[]> {
  const ends = events.flatMap((e, i) => (e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_STARTED' ? [i + 1] : []));
  if (ends[ends.length - 1] !== events.length) ends.push(events.length);
  let low = 0;
  let high = ends.length - 1; // the whole history fails
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (await replay(events.slice(0, ends[middle]))) high = middle;
    else low = middle + 1;
  }
  return events.slice(low === 0 ? 0 : ends[low - 1], ends[low]);
}

function describe(event: JsonEvent, message: string): Divergence {
  const names = eventNames(event);
  return {
    eventId: Number(event.eventId),
    eventType: eventTypeName(event.eventType),
    ...(names.length ? { name: names[0] } : {}),
    message,
  };
}
