/**
 * The HTTP gateway: JSON routes and SSE streams over the Threadline client. Any gateway serves any thread.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { z } from 'zod';
import type { ThreadlineClient } from '../connect';
import { NotFoundError, PayloadTooLargeError, ValidationError, isThreadlineError } from '../errors';
import { describeZodError, ifActiveSchema, ifIdleSchema, threadTargetSchema, type ThreadTarget } from '../schemas';
import type { ThreadEvent } from '../bus/types';
import { defaultModelName, type ModelSettings } from '../../activities/model';
import type { AgentDefinition } from '../../activities/agent';

export interface GatewayOptions {
  client: ThreadlineClient;
  agents: AgentDefinition[];
  models?: ModelSettings;
  /** SSE comment sent after this much silence, so proxies keep the stream open (default 25 s). */
  keepAliveMs?: number;
}

const sendBodySchema = z.object({
  message: z.unknown(),
  resourceId: threadTargetSchema.shape.resourceId,
  threadId: threadTargetSchema.shape.threadId,
  runId: z.string().optional(),
  ifActive: ifActiveSchema.optional(),
  ifIdle: ifIdleSchema.optional(),
});

const signalBodySchema = sendBodySchema.omit({ message: true }).extend({ signal: z.unknown() });

const subscribeBodySchema = threadTargetSchema.extend({
  lastEventId: z.string().optional(),
  hideSignals: z.boolean().optional(),
});

async function jsonBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new ValidationError('The request body must be JSON (Content-Type: application/json).');
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ValidationError(`Invalid request body: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

function threadParams(c: Context): ThreadTarget {
  const parsed = threadTargetSchema.safeParse({
    resourceId: c.req.param('resourceId'),
    threadId: c.req.param('threadId'),
  });
  if (!parsed.success) throw new ValidationError(`Invalid thread: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

export function createGateway(options: GatewayOptions): Hono {
  const { client } = options;
  const agents = new Map(options.agents.map((a) => [a.id, a]));
  const keepAliveMs = options.keepAliveMs ?? 25_000;
  const app = new Hono();

  app.onError((err, c) => {
    if (isThreadlineError(err)) return c.json({ error: { type: err.name, message: err.message } }, err.status as 400);
    if (err instanceof HTTPException) return err.getResponse();
    console.error('gateway error', err);
    return c.json({ error: { type: 'InternalError', message: 'Internal error. See the gateway log.' } }, 500);
  });
  app.notFound((c) =>
    c.json({ error: { type: 'NotFoundError', message: `No route ${c.req.method} ${c.req.path}` } }, 404),
  );

  const agentId = (c: Context): string => {
    const id = c.req.param('agentId')!;
    if (!agents.has(id)) throw new NotFoundError(`Unknown agent "${id}". GET /api/agents lists the agents.`);
    return id;
  };

  // Refuse oversized bodies while reading them, before they are buffered and parsed. The input limit itself
  // (checked on the parsed input) is lower; this bound leaves room for the target fields around it.
  const maxBodyBytes = client.limits.maxInputBytes * 2 + 64 * 1024;
  app.use(
    '/api/*',
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: () => {
        throw new PayloadTooLargeError(`The request body is over ${maxBodyBytes} bytes. Send less.`);
      },
    }),
  );

  app.get('/health', (c) => c.json({ ok: true }));

  app.get('/api/agents', (c) => {
    const body: Record<string, unknown> = {};
    for (const agent of agents.values()) {
      body[agent.id] = {
        id: agent.id,
        name: agent.name ?? agent.id,
        description: agent.description ?? '',
        instructions: agent.instructions,
        modelId:
          typeof agent.model === 'object'
            ? agent.model.modelId
            : (agent.model ?? defaultModelName(options.models ?? {})),
        tools: Object.fromEntries(
          Object.entries(agent.tools ?? {}).map(([name, t]) => [name, { id: name, description: t.description }]),
        ),
      };
    }
    return c.json(body);
  });

  for (const [route, method] of [
    ['send-message', 'sendMessage'],
    ['queue-message', 'queueMessage'],
  ] as const) {
    app.post(`/api/agents/:agentId/${route}`, async (c) => {
      const id = agentId(c);
      const body = await jsonBody(c, sendBodySchema);
      if (body.message === undefined) throw new ValidationError('Invalid request body: message: Required');
      const idempotencyKey = c.req.header('Idempotency-Key');
      const agent = client.agent(id);
      const send = method === 'sendMessage' ? agent.sendMessage : agent.queueMessage;
      const { persisted: _persisted, ...result } = await send.call(
        agent,
        body.message as never,
        body,
        idempotencyKey ? { id: idempotencyKey } : {},
      );
      return c.json(result, result.action === 'blocked' ? 409 : 200);
    });
  }

  app.post('/api/agents/:agentId/signals', async (c) => {
    const id = agentId(c);
    const body = await jsonBody(c, signalBodySchema);
    const idempotencyKey = c.req.header('Idempotency-Key');
    const { persisted: _persisted, ...result } = await client
      .agent(id)
      .sendSignal(body.signal as never, body, idempotencyKey ? { id: idempotencyKey } : {});
    return c.json(result, result.action === 'blocked' ? 409 : 200);
  });

  app.post('/api/agents/:agentId/threads/abort', async (c) => {
    agentId(c);
    const body = await jsonBody(c, threadTargetSchema.extend({ clearPendingSignals: z.boolean().optional() }));
    return c.json(await client.abortThread(body));
  });

  app.post('/api/agents/:agentId/threads/cancel-queued', async (c) => {
    agentId(c);
    const body = await jsonBody(c, threadTargetSchema.extend({ signalIds: z.array(z.string()) }));
    return c.json(await client.cancelQueuedMessages(body));
  });

  const stream = (c: Context, target: ThreadTarget, lastEventId: string | undefined, hideSignals?: boolean) => {
    let subscription: ReturnType<typeof client.subscribeToThread>;
    try {
      subscription = client.subscribeToThread(target, { lastEventId, hideSignals });
    } catch (err) {
      // The bus rejects an id it could not have issued; that is the caller's bad input, not a gateway fault.
      if (lastEventId === undefined) throw err;
      throw new ValidationError(`Invalid Last-Event-ID: ${(err as Error).message}`, { cause: err });
    }
    return streamSSE(c, async (sse) => {
      sse.onAbort(() => subscription.unsubscribe());
      const keepAlive = keepAliveEvery(sse, keepAliveMs);
      try {
        for await (const event of subscription.stream) {
          keepAlive.touch();
          await writeEvent(sse, event);
          if (sse.aborted || sse.closed) break;
        }
      } finally {
        keepAlive.stop();
        subscription.unsubscribe();
      }
    });
  };

  app.post('/api/agents/:agentId/threads/subscribe', async (c) => {
    agentId(c);
    const body = await jsonBody(c, subscribeBodySchema);
    return stream(c, body, c.req.header('Last-Event-ID') ?? body.lastEventId, body.hideSignals);
  });

  app.get('/api/threads/:resourceId/:threadId/events', (c) => {
    const target = threadParams(c);
    return stream(
      c,
      target,
      c.req.header('Last-Event-ID') ?? c.req.query('lastEventId'),
      c.req.query('hideSignals') === 'true',
    );
  });

  app.get('/api/threads/:resourceId/:threadId', async (c) => {
    const target = threadParams(c);
    const view = await client.getThread(target);
    if (!view)
      throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}. Send it a message to create it.`);
    return c.json(view);
  });

  app.get('/api/threads/:resourceId/:threadId/messages', async (c) => {
    const target = threadParams(c);
    const limit = c.req.query('limit');
    const parsedLimit = limit === undefined ? undefined : Number(limit);
    if (parsedLimit !== undefined && (!Number.isInteger(parsedLimit) || parsedLimit < 1 || parsedLimit > 1000)) {
      throw new ValidationError('Invalid query: limit must be a whole number from 1 to 1000.');
    }
    const page = await client.getMessages(target, { limit: parsedLimit, before: c.req.query('before') });
    if (!page) throw new NotFoundError(`No thread ${target.resourceId}/${target.threadId}.`);
    return c.json(page);
  });

  return app;
}

async function writeEvent(sse: SSEStreamingApi, event: ThreadEvent): Promise<void> {
  await sse.writeSSE({ id: event.id, data: JSON.stringify(event) });
}

function keepAliveEvery(sse: SSEStreamingApi, ms: number): { touch(): void; stop(): void } {
  let last = Date.now();
  const timer = setInterval(
    () => {
      if (Date.now() - last >= ms) {
        last = Date.now();
        sse.write(': keep-alive\n\n').catch(() => undefined);
      }
    },
    Math.max(10, Math.min(ms, 1_000)),
  );
  return {
    touch: () => {
      last = Date.now();
    },
    stop: () => clearInterval(timer),
  };
}
