/**
 * Every route of the gateway, one `defineRoute` entry each (see `./route` for what registration checks). To add a
 * route: add an entry here with its schemas and `thread: 'path' | 'body' | 'none'`; it is then served, its thread
 * authorized, and it appears in `GET /api/openapi.json`, with nothing else to change. The handler acts on `target`
 * (already authorized), never on ids it reads from `c` itself.
 *
 * @example
 * defineRoute({
 *   method: 'post',
 *   path: '/api/agents/:agentId/state-signals',
 *   summary: 'Send a state signal to a lane of the thread.',
 *   thread: 'body', // `'path'` for /api/threads/:resourceId/:threadId/...
 *   body: threadTargetSchema.extend({ signal: stateSignalSchema }),
 *   statuses: [409],
 *   handle: async ({ c, agentId, target, body }) =>
 *     c.json(await client.agent(agentId).sendStateSignal(body.signal, target)),
 * }),
 */
import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentCatalog } from '../client/agent-catalog';
import { publicSummary } from './agents';
import type { SendResult, ThreadlineClient } from '../client/connect';
import { ForbiddenError, NotFoundError, ValidationError } from '../protocol/errors';
import {
  abortRequestSchema,
  cancelQueuedRequestSchema,
  ifActiveSchema,
  ifIdleSchema,
  messageSchema,
  notificationInputSchema,
  notificationPriorities,
  notificationStatuses,
  signalSchema,
  stateSignalSchema,
  threadTargetSchema,
  toolApprovalSchema,
  describeZodError,
} from '../protocol/schemas';
import {
  echoOf,
  fromMastraApprovalBody,
  fromMastraSendBody,
  mastraSendAnswer,
  takeCreatedAt,
  type SignalEcho,
} from './mastra-requests';
import { documentedAs, openApiDocument } from './openapi';
import { defineRoute, type Route } from './route';
import { streamThread, type StreamDeps } from './sse';
import { metrics, renderMetrics } from '../observability';
import { checkReadiness } from './ready';
import { authorizeTarget } from './auth';

export interface RouteDeps extends StreamDeps {
  client: ThreadlineClient;
  agents: AgentCatalog;
}

// `message` and `signal` are validated by the client (`client/inputs.ts`), whose errors name the exact field inside
// them (a union's parse error would only say "invalid input"); the OpenAPI document still shows their schemas.
// Built by extension only: `threadTargetSchema` carries a refinement (the encoded workflow id's length), and zod
// refuses `.omit`/`.pick` on a refined object.
const sendOptionsShape = {
  runId: z.string().optional(),
  ifActive: ifActiveSchema.optional(),
  ifIdle: ifIdleSchema.optional(),
};

const sendBodySchema = threadTargetSchema.extend({
  message: documentedAs(z.unknown(), messageSchema),
  ...sendOptionsShape,
});

const signalBodySchema = threadTargetSchema.extend({
  ...sendOptionsShape,
  signal: documentedAs(z.unknown(), signalSchema),
});

const stateSignalBodySchema = threadTargetSchema.extend({
  ...sendOptionsShape,
  signal: documentedAs(z.unknown(), stateSignalSchema),
});

// Mastra's client sends these beside the decision; they have no meaning here and are accepted and ignored.
const toolApprovalBodySchema = threadTargetSchema.extend(toolApprovalSchema.shape).extend({
  runId: z.string().optional(),
  requestContext: z.unknown().optional(),
  format: z.unknown().optional(),
});

/** One notification or a list: exactly one of the two (a body with both is ambiguous, never half-read). */
const notificationBodySchema = threadTargetSchema
  .extend({
    notification: documentedAs(z.unknown(), notificationInputSchema).optional(),
    notifications: documentedAs(z.unknown(), z.array(notificationInputSchema)).optional(),
  })
  .superRefine((body, ctx) => {
    const given = [body.notification, body.notifications].filter((v) => v !== undefined).length;
    if (given === 1) return;
    ctx.addIssue({
      code: 'custom',
      path: ['notification'],
      message:
        given === 0
          ? 'Required: give notification (one) or notifications (a list)'
          : 'give notification or notifications, not both',
    });
  });

/** `a,b` → `['a', 'b']`, for list filters in a query string. */
const commaList = <T extends string>(values: readonly [T, ...T[]]) =>
  z
    .string()
    .transform((v) => v.split(',').filter(Boolean))
    .pipe(z.array(z.enum(values)));
const notificationsQuerySchema = z.object({
  status: commaList(notificationStatuses).optional(),
  priority: commaList(notificationPriorities).optional(),
  source: z
    .string()
    .transform((v) => v.split(',').filter(Boolean))
    .optional(),
  q: z.string().max(1_000).optional(),
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a whole number from 1 to 200')
    .transform(Number)
    .pipe(z.number().int().min(1).max(200))
    .optional(),
  cursor: z.string().max(256).optional(),
});

const archiveQuerySchema = notificationsQuerySchema.pick({ limit: true, cursor: true });

const threadsQuerySchema = z.object({
  status: commaList(['idle', 'running', 'awaiting-approval']).optional(),
  agent: z.string().min(1).max(1_000).optional(),
  resource: z.string().min(1).max(1_000).optional(),
  query: z.string().max(2_000).optional(),
  pageSize: notificationsQuerySchema.shape.limit,
  pageToken: z.string().max(4_096).optional(),
});

const subscribeBodySchema = threadTargetSchema.extend({
  lastEventId: z.string().optional(),
  hideSignals: z.boolean().optional(),
});

const eventsQuerySchema = z.object({
  lastEventId: z.string().optional(),
  hideSignals: z.enum(['true', 'false']).optional(),
});

const LIMIT_MESSAGE = 'must be a whole number from 1 to 1000';
const messagesQuerySchema = z.object({
  limit: z
    .string()
    .regex(/^\d+$/, LIMIT_MESSAGE)
    .transform(Number)
    .pipe(z.number().int().min(1, LIMIT_MESSAGE).max(1000, LIMIT_MESSAGE))
    .optional(),
  before: z.string().optional(),
});

const stepParamSchema = z
  .string()
  .regex(/^[1-9]\d{0,15}$/, 'must be a step number (from 1)')
  .transform(Number);

const forkBodySchema = z.object({
  atStep: z.number().int().min(1),
  to: threadTargetSchema,
  agentId: z.string().min(1).max(1_000).optional(),
});

const abortBodySchema = threadTargetSchema.extend(abortRequestSchema.shape).extend({
  expectedRunId: z.string().optional(),
});

const IDEMPOTENCY_HEADER = { 'Idempotency-Key': 'Idempotency key when the input carries no id of its own.' };

const MASTRA_SEND_ANSWER =
  'Answers `{ accepted, action, runId, signalId, signal, duplicate? }` (the shape `@mastra/client-js` expects): ' +
  '`runId` is the run woken, joined or queued, or the `signalId` when no run is involved (`persist`, `discard`); ' +
  '`signal` is the input as accepted. A `blocked` action answers 409.';

/**
 * Sends with the `Idempotency-Key` header as the input's fallback id and answers the thread's decision: 409 for a
 * `blocked` input. `echo` (Mastra's routes) adds the fields Mastra's client expects.
 */
async function answerSend(
  c: Context,
  kind: 'message' | 'queued-message' | 'signal' | 'state',
  send: (options: { id?: string }) => Promise<SendResult>,
  echo?: SignalEcho,
): Promise<Response> {
  const key = c.req.header('Idempotency-Key');
  const { persisted: _persisted, ...result } = await send(key ? { id: key } : {});
  if (!result.duplicate) metrics.inputs.inc({ kind, action: result.action });
  const status = result.action === 'blocked' ? 409 : 200;
  return c.json(echo ? mastraSendAnswer(result, echo, new Date()) : result, status);
}

export function gatewayRoutes(deps: RouteDeps): Route[] {
  const { client } = deps;
  let document: object | undefined;

  const routes: Route[] = [
    defineRoute({
      method: 'get',
      path: '/health',
      summary: 'Liveness: answers while the gateway serves. Needs no API key.',
      thread: 'none',
      handle: ({ c }) => c.json({ ok: true }),
    }),

    defineRoute({
      method: 'get',
      path: '/ready',
      summary: 'Readiness: 200 when Temporal (and Redis, with a Redis bus) answer; 503 naming the one that does not.',
      description:
        'Answers `{ ready, checks: [{ name, ok, durationMs, error? }] }`, each check within 2 s; a 503 also has ' +
        '`error` naming the failed checks.',
      thread: 'none',
      statuses: [503],
      handle: async ({ c }) => {
        const readiness = await checkReadiness(client);
        if (readiness.ready) return c.json(readiness);
        const failed = readiness.checks.filter((check) => !check.ok);
        const message = `Not ready: ${failed.map((check) => `${check.name}: ${check.error}`).join('; ')}.`;
        return c.json({ ...readiness, error: { type: 'NotReady', message } }, 503);
      },
    }),

    defineRoute({
      method: 'get',
      path: '/metrics',
      summary: "Prometheus metrics of this process (text format): Threadline's, Node's, and the Temporal SDK's.",
      description:
        'Expose it to the scraper only. Metric names and labels: docs/operations.md ("Metrics, logs and health").',
      thread: 'none',
      responds: 'text',
      handle: async ({ c }) => {
        const { contentType, body } = await renderMetrics();
        return c.body(body, 200, { 'Content-Type': contentType });
      },
    }),

    defineRoute({
      method: 'get',
      path: '/api/openapi.json',
      summary: 'This OpenAPI 3.1 document, generated from the route table and its zod schemas.',
      thread: 'none',
      handle: ({ c }) => c.json((document ??= openApiDocument(routes))),
    }),

    defineRoute({
      method: 'get',
      path: '/api/agents',
      summary: 'The registered agents, keyed by id: id, name, description, instructions, modelId, tools.',
      thread: 'none',
      handle: async ({ c }) =>
        c.json(Object.fromEntries((await deps.agents.list()).map((a) => [a.id, publicSummary(a)]))),
    }),

    defineRoute({
      method: 'get',
      path: '/api/threads',
      summary: "Threads, from Temporal visibility over the threads' search attributes: `{ threads, nextPageToken }`.",
      description:
        'Each thread: `{ resourceId, threadId, workflowId, status, agent, pendingApprovals, openNotifications, ' +
        'lastInputAt, startedAt, executionStatus }`. Filters: `status` (idle, running, awaiting-approval; ' +
        'comma-separated), `agent`, `resource`, `query` (a raw visibility query, ANDed); paging: `pageSize` (1–200, ' +
        'default 50), `pageToken` (the previous nextPageToken). A key bound to resources lists only their threads ' +
        '(403 for a `resource` filter outside them). Visibility is eventually consistent: a new thread shows within ' +
        'about a second.',
      thread: 'none',
      query: threadsQuerySchema,
      statuses: [403],
      handle: async ({ c, query }) => {
        // A listing names no one thread: the caller's binding is the filter, added server-side (client/thread-list.ts).
        const { resources } = c.get('caller');
        if (resources !== '*' && query.resource !== undefined && !resources.has(query.resource)) {
          throw new ForbiddenError(
            `This API key may not act on resourceId "${query.resource}". Use a key bound to it in THREADLINE_API_KEYS.`,
          );
        }
        if (resources !== '*' && resources.size === 0) return c.json({ threads: [], nextPageToken: null });
        const filters = {
          status: query.status,
          agent: query.agent,
          resource: query.resource,
          query: query.query,
          resources: resources === '*' ? undefined : [...resources],
        };
        return c.json(await client.listThreads(filters, { pageSize: query.pageSize, pageToken: query.pageToken }));
      },
    }),

    ...(['send-message', 'queue-message'] as const).map((route) =>
      defineRoute({
        method: 'post',
        path: `/api/agents/:agentId/${route}`,
        summary:
          route === 'send-message'
            ? 'Send a message: wakes an idle thread, or joins the active run at its next step boundary.'
            : 'Queue a message: runs after the active run (and the runs queued before it) finishes.',
        description: `Idempotency key: the message id, else the Idempotency-Key header. ${MASTRA_SEND_ANSWER}`,
        thread: 'body',
        body: sendBodySchema,
        prepare: fromMastraSendBody,
        headers: IDEMPOTENCY_HEADER,
        statuses: [409],
        handle: ({ c, agentId, body }) => {
          if (body.message === undefined) throw new ValidationError('Invalid request body: message: Required');
          const agent = client.agent(agentId);
          const send = route === 'send-message' ? agent.sendMessage : agent.queueMessage;
          const echo = echoOf('message', body.message);
          const kind = route === 'send-message' ? 'message' : 'queued-message';
          return answerSend(c, kind, (options) => send.call(agent, body.message as never, body, options), echo);
        },
      }),
    ),

    defineRoute({
      method: 'post',
      path: '/api/agents/:agentId/signals',
      summary: 'Send a signal (user, reactive or notification; legacy type names accepted) to a thread.',
      description: `Idempotency key: the signal id, else the Idempotency-Key header. ${MASTRA_SEND_ANSWER}`,
      thread: 'body',
      body: signalBodySchema,
      prepare: fromMastraSendBody,
      headers: IDEMPOTENCY_HEADER,
      statuses: [409],
      handle: ({ c, agentId, body }) => {
        const { signal, createdAt } = takeCreatedAt(body.signal);
        return answerSend(
          c,
          'signal',
          (options) => client.agent(agentId).sendSignal(signal as never, body, options),
          echoOf('signal', signal, createdAt),
        );
      },
    }),

    defineRoute({
      method: 'post',
      path: '/api/agents/:agentId/state-signals',
      summary: 'Keep a state lane current: skipped when the lane already has this cacheKey and mode (behaviour §3.1).',
      description:
        'Body `{ signal: { id, mode?, cacheKey, contents, value?, delta?, signalId?, tagName?, attributes? }, ' +
        'resourceId, threadId, ifActive?, ifIdle? }`. Answers `{ accepted, action, version, signalId, runId?, ' +
        "reason? }`; `action: 'skipped', reason: 'unchanged'` for a duplicate state. Idempotency key: " +
        '`signal.signalId`, else the Idempotency-Key header.',
      thread: 'body',
      body: stateSignalBodySchema,
      headers: IDEMPOTENCY_HEADER,
      statuses: [409],
      handle: ({ c, agentId, body }) =>
        answerSend(c, 'state', (options) => client.agent(agentId).sendStateSignal(body.signal as never, body, options)),
    }),

    defineRoute({
      method: 'post',
      path: '/api/agents/:agentId/send-tool-approval',
      summary:
        'Approve or decline the tool call a run is parked on (behaviour §2.4); the answer continues on the stream.',
      description:
        'Answers `{ accepted, runId, toolCallId, status }`. 404: no such thread or no run waits for this tool ' +
        'call; 409: the call was already approved or declined.',
      thread: 'body',
      body: toolApprovalBodySchema,
      prepare: fromMastraApprovalBody,
      statuses: [404, 409],
      handle: async ({ c, agentId, target, body }) => {
        const { toolCallId, approved, resumeData, declineReason } = body;
        const approval = {
          toolCallId,
          approved,
          ...(resumeData !== undefined ? { resumeData } : {}),
          ...(declineReason !== undefined ? { declineReason } : {}),
        };
        const result = await client.agent(agentId).sendToolApproval({ ...target, ...approval });
        metrics.approvalsDecided.inc({ status: result.status });
        return c.json(result);
      },
    }),

    defineRoute({
      method: 'post',
      path: '/api/agents/:agentId/threads/abort',
      summary: "Abort the thread's active run; optionally clear inputs waiting for it.",
      description:
        'With `expectedRunId`, aborts only while that run is the active one, else answers `{ aborted: false }`. ' +
        'The gateway reads the active run, then aborts: a run that ends in between lets the abort reach the run ' +
        'started right after it (a window of one round trip to Temporal).',
      thread: 'body',
      body: abortBodySchema,
      handle: async ({ c, target, body }) => {
        if (body.expectedRunId !== undefined) {
          const view = await client.getThread(target);
          if (view?.activeRun?.runId !== body.expectedRunId) {
            metrics.aborts.inc({ aborted: 'false' });
            return c.json({ aborted: false, clearedSignalIds: [] });
          }
        }
        const result = await client.abortThread({ ...target, clearPendingSignals: body.clearPendingSignals });
        metrics.aborts.inc({ aborted: String(result.aborted) });
        return c.json(result);
      },
    }),

    defineRoute({
      method: 'post',
      path: '/api/agents/:agentId/threads/cancel-queued',
      summary: 'Remove queued messages by signal id; answers the ids removed.',
      thread: 'body',
      body: threadTargetSchema.extend(cancelQueuedRequestSchema.shape),
      handle: async ({ c, body }) => c.json(await client.cancelQueuedMessages(body)),
    }),

    defineRoute({
      method: 'post',
      path: '/api/agents/:agentId/threads/subscribe',
      summary: "Subscribe to the thread's events (SSE). Resumes after Last-Event-ID (header) or lastEventId (body).",
      description:
        'Framed as `@mastra/client-js` reads it: `: connected`, then one `data: <event JSON>` block per event (the ' +
        "event id is the JSON's `id`; no `id:` lines), and `data: [DONE]` when the gateway ends the stream. " +
        '`resourceId` may be left out when the API key is bound to exactly one resource.',
      thread: 'body',
      body: subscribeBodySchema,
      responds: 'sse',
      handle: ({ c, target, body }) =>
        streamThread(c, deps, target, {
          lastEventId: c.req.header('Last-Event-ID') ?? body.lastEventId,
          hideSignals: body.hideSignals,
          framing: 'data-only',
        }),
    }),

    defineRoute({
      method: 'get',
      path: '/api/threads/:resourceId/:threadId/events',
      summary: "The thread's events as SSE, for EventSource. Resumes after Last-Event-ID (header) or ?lastEventId.",
      thread: 'path',
      query: eventsQuerySchema,
      responds: 'sse',
      handle: ({ c, target, query }) =>
        streamThread(c, deps, target, {
          lastEventId: c.req.header('Last-Event-ID') ?? query.lastEventId,
          hideSignals: query.hideSignals === 'true',
          framing: 'event-source',
        }),
    }),

    defineRoute({
      method: 'get',
      path: '/api/threads/:resourceId/:threadId',
      summary: "The thread's state: status, active run, queue, message count, runs completed.",
      thread: 'path',
      statuses: [404],
      handle: async ({ c, target }) => {
        const view = await client.getThread(target);
        if (!view) {
          throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}. Send it a message to create it.`);
        }
        return c.json(view);
      },
    }),

    defineRoute({
      method: 'post',
      path: '/api/agents/:agentId/notifications',
      summary: "Drop one or more notifications into the thread's inbox (behaviour §4); the delivery policy decides.",
      description:
        'Body `{ notification | notifications, resourceId, threadId }`. Answers `{ accepted, notifications: [{ id, ' +
        'status, action, coalesced, coalescedCount, deliveryReason? }], duplicate? }`. Idempotency key of the send: ' +
        'the Idempotency-Key header. 409 when the inbox is full of open records.',
      thread: 'body',
      body: notificationBodySchema,
      headers: IDEMPOTENCY_HEADER,
      statuses: [409],
      handle: async ({ c, agentId, target, body }) => {
        const notifications = body.notifications ?? body.notification;
        const key = c.req.header('Idempotency-Key');
        const options = key ? { id: key } : {};
        const result = await client.agent(agentId).sendNotificationSignal(notifications as never, target, options);
        // A duplicate send repeats the first one's answer: its decisions are counted once.
        if (!result.duplicate) {
          for (const outcome of result.notifications) metrics.notifications.inc({ action: outcome.action });
        }
        return c.json(result);
      },
    }),

    defineRoute({
      method: 'get',
      path: '/api/threads/:resourceId/:threadId/notifications',
      summary: "The thread's inbox, newest first: `{ notifications, hasMore, nextCursor }`.",
      description:
        'Filters: `status`, `priority`, `source` (comma-separated lists), `q` (text in summary, kind, source, ' +
        'payload); paging: `limit` (1–200, default 20), `cursor` (the previous page’s nextCursor).',
      thread: 'path',
      statuses: [404],
      query: notificationsQuerySchema,
      handle: async ({ c, target, query }) => {
        const page = await client.listNotifications(target, query);
        if (!page) throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}.`);
        return c.json(page);
      },
    }),

    defineRoute({
      method: 'get',
      path: '/api/threads/:resourceId/:threadId/notifications/archive',
      summary:
        'Records that left the inbox beyond its bound (kept by the bus), newest first: `{ notifications, nextCursor }`.',
      thread: 'path',
      query: archiveQuerySchema,
      handle: async ({ c, target, query }) => c.json(await client.listArchivedNotifications(target, query)),
    }),

    ...(['seen', 'dismiss', 'archive'] as const).map((change) =>
      defineRoute({
        method: 'post',
        path: `/api/threads/:resourceId/:threadId/notifications/:notificationId/${change}`,
        summary: `Mark an inbox record ${change === 'seen' ? 'seen' : change === 'dismiss' ? 'dismissed' : 'archived'}; answers the record.`,
        thread: 'path',
        statuses: [404],
        handle: async ({ c, target }) => {
          const [record] = await client.changeNotificationStatus(target, [c.req.param('notificationId')!], change);
          return c.json(record);
        },
      }),
    ),

    defineRoute({
      method: 'get',
      path: '/api/threads/:resourceId/:threadId/messages',
      summary: "The thread's stored messages, newest last: `{ messages, hasMore }`; page back with `before`.",
      thread: 'path',
      statuses: [404],
      query: messagesQuerySchema,
      handle: async ({ c, target, query }) => {
        const page = await client.getMessages(target, { limit: query.limit, before: query.before });
        if (!page) throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}.`);
        return c.json(page);
      },
    }),

    defineRoute({
      method: 'get',
      path: '/api/threads/:resourceId/:threadId/steps',
      summary: "The thread's steps (model calls), oldest first, from its history: `{ steps }`.",
      description:
        'Each step: `{ step, runId, stepNumber, agentId, status, startedAt?, summary, execution }`. `step` is the ' +
        'thread-wide step number (across runs and continue-as-new) that the prompt and fork routes take; status is ' +
        '`completed`, `failed`, `cancelled` or `running`.',
      thread: 'path',
      statuses: [404],
      handle: async ({ c, target }) => {
        const list = await client.listSteps(target);
        if (!list) throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}.`);
        return c.json(list);
      },
    }),

    defineRoute({
      method: 'get',
      path: '/api/threads/:resourceId/:threadId/steps/:step/prompt',
      summary: 'What the model received at a step: system prompt, tools, messages and the provider request body.',
      description:
        'Rebuilt by a worker of the thread, which replays its history with the current code (a second or two; the ' +
        "worker's first inspection also bundles the workflow code). Answers `{ step, runId, stepNumber, agentId, " +
        'status, execution, model, system, tools, messages, settings?, request: { url, body } | null, complete, ' +
        'notes }`; `request.body` is the provider request byte for byte (built-in OpenAI provider).',
      thread: 'path',
      statuses: [404],
      handle: async ({ c, target }) => {
        const parsed = stepParamSchema.safeParse(c.req.param('step'));
        if (!parsed.success) throw new ValidationError(`Invalid step: ${describeZodError(parsed.error)}`);
        return c.json(await client.inspectStep(target, parsed.data));
      },
    }),

    defineRoute({
      method: 'post',
      path: '/api/threads/:resourceId/:threadId/fork',
      summary: 'Fork: a new thread from this one as it stood before a step, re-running that step.',
      description:
        'Body `{ atStep, to: { resourceId, threadId }, agentId? }`. The caller must be allowed both threads. The fork ' +
        'keeps the conversation, the run that was about to take the step, lanes and inbox; it drops queued runs, ' +
        "remembered input ids and the source's unpublished events. Answers the fork's view; 409 when `to` exists.",
      thread: 'path',
      body: forkBodySchema,
      statuses: [404, 409],
      handle: async ({ c, target, body }) => {
        const to = authorizeTarget(c.get('caller'), body.to);
        return c.json(await client.forkThread(target, { atStep: body.atStep, to, agentId: body.agentId }));
      },
    }),
  ];
  return routes;
}
