/**
 * A scripted stand-in for the model provider: a real loopback HTTP server that speaks the OpenAI chat
 * completions API, so tests and benchmarks exercise the real `@ai-sdk/openai` code path.
 *
 * @example
 * const server = await startModelServer();
 * server.enqueue({ text: 'Hello there' }, { toolCalls: [{ name: 'lookup', args: { q: 'x' } }] });
 * const model = createOpenAI({ baseURL: server.url, apiKey: 'test' }).chat('test-model');
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** One scripted model reply. With no `text`, `toolCalls` or `reasoning`, the reply is empty. */
export interface ScriptedReply {
  /** A string is split into word-sized chunks; an array is sent as exactly those chunks. */
  text?: string | string[];
  /** Streamed as OpenAI `tool_calls` deltas after the text; the finish reason becomes `tool_calls`. */
  toolCalls?: { id?: string; name: string; args: unknown }[];
  /** Sent as `reasoning_content` deltas before the text (`@ai-sdk/openai`'s chat model ignores them). */
  reasoning?: string;
  /** Delay before each chunk, in milliseconds. Default 0. */
  chunkDelayMs?: number;
  /** Extra delay before the first chunk, in milliseconds. */
  firstChunkDelayMs?: number;
  /** After the chunks, never finish the reply (until the client disconnects or the server closes). */
  hang?: boolean;
  /** After the first chunk, send nothing more until this settles (or the client disconnects). */
  holdAfterFirstChunk?: Promise<unknown>;
  /** Reply with this HTTP error (OpenAI error body) instead. */
  error?: { status: number; message: string };
  /** Reported usage. Default: a rough estimate (prompt characters / 4, one completion token per chunk). */
  usage?: { promptTokens: number; completionTokens: number };
}

/* eslint-disable @typescript-eslint/no-explicit-any -- request bodies are whatever the client sent; tests probe them freely. */
type ChatCompletionBody = any;
type ChatMessage = any;
/* eslint-enable @typescript-eslint/no-explicit-any */

/** A request the server received, recorded in arrival order. */
export interface ReceivedRequest {
  /** Position in {@link ModelServer.requests}, from 0. */
  index: number;
  /** The body as it arrived, byte for byte (as UTF-8 text). */
  rawBody: string;
  /** The parsed JSON body. */
  body: ChatCompletionBody;
  /** `body.messages`: the prompt the model saw. */
  messages: ChatMessage[];
  model: string;
  /** `Date.now()` when the body had been read. */
  receivedAt: number;
  /** True once the client disconnected before the reply finished. */
  closedEarly: boolean;
  /** Resolves when the client disconnects before the reply finished; never resolves otherwise. */
  closed: Promise<void>;
  /** How the exchange ended: the whole reply sent (`finished`), or the client closed the request first (`closed`). */
  ended: Promise<'finished' | 'closed'>;
}

/** Chooses the reply to a request. */
export type Responder = (req: ReceivedRequest) => ScriptedReply | Promise<ScriptedReply>;

export interface ModelServer {
  /** Base URL ending with `/v1`, e.g. `http://127.0.0.1:PORT/v1`; pass it as the provider's `baseURL`. */
  url: string;
  /** Every chat completions request, in arrival order. */
  requests: ReceivedRequest[];
  /** Queue replies, answered first in, first out; when the queue is empty the default responder answers. */
  enqueue(...replies: ScriptedReply[]): void;
  /** A responder that, while set, takes precedence over the queue. Pass `undefined` to clear it. */
  setResponder(responder: Responder | undefined): void;
  /** Resolves once at least `n` requests have arrived; rejects after `timeoutMs` (default 5000). */
  waitForRequests(n: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Empties the queue, returning the replies no request took (see test/support/scripted-replies.ts). */
  drainQueue(): ScriptedReply[];
  /** Stops the server, cutting any open (for example hanging) replies. */
  close(): Promise<void>;
}

/** Replies `Echo: <text of the last user message>`. */
export const echoResponder: Responder = (req) => {
  const lastUser = [...req.messages].reverse().find((message) => message?.role === 'user');
  return { text: `Echo: ${messageText(lastUser)}` };
};

/** The servers started and not yet closed in this module graph (one per test file), for per-test checks. */
const openServers = new Set<ModelServer>();

/** The model servers started and not yet closed. */
export function openModelServers(): ModelServer[] {
  return [...openServers];
}

/**
 * Starts a model server on `127.0.0.1` (an ephemeral port unless `port` is given).
 *
 * @example
 * const server = await startModelServer({ defaultReply: () => ({ text: 'ok' }) });
 * try { ... } finally { await server.close(); }
 */
export async function startModelServer(opts: { defaultReply?: Responder; port?: number } = {}): Promise<ModelServer> {
  const defaultReply = opts.defaultReply ?? echoResponder;
  const requests: ReceivedRequest[] = [];
  const queue: ScriptedReply[] = [];
  const waiters = new Set<() => void>();
  let responder: Responder | undefined;

  const nextReply = (req: ReceivedRequest) => responder?.(req) ?? queue.shift() ?? defaultReply(req);

  async function handleChatCompletion(httpReq: IncomingMessage, res: ServerResponse): Promise<void> {
    // Watch for an early disconnect before reading the body, so no close event can be missed.
    const disconnected = new AbortController();
    let ended!: (how: 'finished' | 'closed') => void;
    const endedPromise = new Promise<'finished' | 'closed'>((resolve) => (ended = resolve));
    res.on('close', () => {
      if (!res.writableFinished) disconnected.abort();
      ended(res.writableFinished ? 'finished' : 'closed');
    });

    let rawBody: string;
    let body: ChatCompletionBody;
    try {
      rawBody = await readBody(httpReq);
      body = JSON.parse(rawBody);
    } catch {
      if (disconnected.signal.aborted) return;
      return sendError(res, 400, 'Request body is not valid JSON. Send a chat completions request body.');
    }
    const received: ReceivedRequest = {
      index: requests.length,
      rawBody,
      body,
      messages: Array.isArray(body?.messages) ? body.messages : [],
      model: String(body?.model ?? ''),
      receivedAt: Date.now(),
      closedEarly: false,
      closed: new Promise((resolve) => whenAborted(disconnected.signal, resolve)),
      ended: endedPromise,
    };
    whenAborted(disconnected.signal, () => (received.closedEarly = true));
    requests.push(received);
    for (const wake of waiters) wake();

    let reply: ScriptedReply;
    try {
      reply = await nextReply(received);
    } catch (error) {
      return sendError(res, 500, `Model server responder failed: ${(error as Error)?.message ?? error}`);
    }
    if (disconnected.signal.aborted) return;
    if (reply.error) return sendError(res, reply.error.status, reply.error.message);

    try {
      if (body.stream === true) await streamReply(res, received, reply, disconnected.signal);
      else await jsonReply(res, received, reply, disconnected.signal);
    } catch (error) {
      // A disconnect interrupts delays and hangs; anything else is a bug in this server.
      if (!disconnected.signal.aborted) throw error;
    }
  }

  const server = createServer({ noDelay: true }, (httpReq, res) => {
    const path = new URL(httpReq.url ?? '/', 'http://localhost').pathname;
    if (httpReq.method === 'POST' && path === '/v1/chat/completions') {
      handleChatCompletion(httpReq, res).catch((error) => {
        if (!res.headersSent) sendError(res, 500, `Model server failed: ${error?.message ?? error}`);
        else res.destroy(error);
      });
    } else if (httpReq.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'test-model', object: 'model', created: nowSeconds(), owned_by: 'threadline-test' }],
      });
    } else {
      sendError(res, 404, `No route for ${httpReq.method} ${path}. Use POST /v1/chat/completions or GET /v1/models.`);
    }
  });
  // Benchmarks should measure the protocol, not Nagle buffering of small SSE writes.
  server.on('connection', (socket) => socket.setNoDelay(true));

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  const modelServer: ModelServer = {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    drainQueue: () => queue.splice(0),
    setResponder: (r) => void (responder = r),
    waitForRequests(n, timeoutMs = 5000) {
      if (requests.length >= n) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const wake = () => {
          if (requests.length < n) return;
          finish();
          resolve(requests);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${n} model requests; got ${requests.length}.`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(wake);
        };
        waiters.add(wake);
      });
    },
    close: () => {
      openServers.delete(modelServer);
      return new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
  openServers.add(modelServer);
  return modelServer;
}

type Delta = Record<string, unknown>;

async function streamReply(
  res: ServerResponse,
  req: ReceivedRequest,
  reply: ScriptedReply,
  signal: AbortSignal,
): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  res.flushHeaders();

  const id = `chatcmpl-${req.index}`;
  const created = nowSeconds();
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  const chunk = (choices: unknown[], extra: object = {}) =>
    send({ id, object: 'chat.completion.chunk', created, model: req.model, choices, ...extra });

  const deltas = replyDeltas(req, reply);
  // OpenAI announces the role on the first delta. It is not sent alone with `content: ''`, as OpenAI does,
  // because the SDK turns that empty string into an empty text part even for tool-only replies.
  const finishDelta: Delta = {};
  (deltas[0] ?? finishDelta).role = 'assistant';

  for (const [i, delta] of deltas.entries()) {
    await pause((i === 0 ? (reply.firstChunkDelayMs ?? 0) : 0) + (reply.chunkDelayMs ?? 0), signal);
    chunk([{ index: 0, delta, finish_reason: null }]);
    if (i === 0 && reply.holdAfterFirstChunk) await Promise.race([reply.holdAfterFirstChunk, hang(signal)]);
  }
  if (deltas.length === 0) await pause(reply.firstChunkDelayMs ?? 0, signal);
  if (reply.hang) return hang(signal);

  chunk([{ index: 0, delta: finishDelta, finish_reason: finishReason(reply) }]);
  if (req.body.stream_options?.include_usage) chunk([], { usage: usageOf(req, reply, deltas.length) });
  res.end('data: [DONE]\n\n');
}

async function jsonReply(
  res: ServerResponse,
  req: ReceivedRequest,
  reply: ScriptedReply,
  signal: AbortSignal,
): Promise<void> {
  const chunks = replyDeltas(req, reply).length;
  await pause((reply.firstChunkDelayMs ?? 0) + (reply.chunkDelayMs ?? 0) * chunks, signal);
  if (reply.hang) return hang(signal);

  const text = textChunks(reply.text).join('');
  const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({
    id: toolCallId(req, call, i),
    type: 'function',
    function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
  }));
  sendJson(res, 200, {
    id: `chatcmpl-${req.index}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model: req.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text.length > 0 || toolCalls.length === 0 ? text : null,
          ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(reply),
      },
    ],
    usage: usageOf(req, reply, chunks),
  });
}

/** The content deltas of a streamed reply: reasoning, then text, then tool calls. */
function replyDeltas(req: ReceivedRequest, reply: ScriptedReply): Delta[] {
  const deltas: Delta[] = [];
  for (const piece of textChunks(reply.reasoning)) deltas.push({ reasoning_content: piece });
  for (const piece of textChunks(reply.text)) deltas.push({ content: piece });
  for (const [index, call] of (reply.toolCalls ?? []).entries()) {
    const args = JSON.stringify(call.args ?? {});
    const cut = Math.ceil(args.length / 2);
    deltas.push({
      tool_calls: [
        {
          index,
          id: toolCallId(req, call, index),
          type: 'function',
          function: { name: call.name, arguments: args.slice(0, cut) },
        },
      ],
    });
    if (cut < args.length) deltas.push({ tool_calls: [{ index, function: { arguments: args.slice(cut) } }] });
  }
  return deltas;
}

/** `'Hello big world'` → `['Hello ', 'big ', 'world']`; the chunks always join back to the input. */
function textChunks(text: string | string[] | undefined): string[] {
  if (text === undefined) return [];
  if (Array.isArray(text)) return text;
  return text.split(/(?<=\s)(?=\S)/).filter((piece) => piece.length > 0);
}

function toolCallId(req: ReceivedRequest, call: { id?: string }, index: number): string {
  return call.id ?? `call_${req.index}_${index}`;
}

function finishReason(reply: ScriptedReply): 'stop' | 'tool_calls' {
  return reply.toolCalls?.length ? 'tool_calls' : 'stop';
}

function usageOf(req: ReceivedRequest, reply: ScriptedReply, chunks: number) {
  const prompt = reply.usage?.promptTokens ?? Math.ceil(JSON.stringify(req.messages).length / 4);
  const completion = reply.usage?.completionTokens ?? chunks;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function messageText(message: { content?: unknown } | undefined): string {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((part) => part?.type === 'text')
    .map((part) => part.text)
    .join('');
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  if (ms > 0) await sleep(ms, undefined, { signal });
}

/** Waits until the client disconnects, then rejects like an interrupted pause. */
function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => whenAborted(signal, () => reject(signal.reason)));
}

function whenAborted(signal: AbortSignal, listener: () => void): void {
  if (signal.aborted) listener();
  else signal.addEventListener('abort', listener, { once: true });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
    req.on('close', () => reject(new Error('The client closed the connection before sending the whole body.')));
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, status: number, message: string): void {
  const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'server_error' : 'invalid_request_error';
  sendJson(res, status, { error: { message, type, param: null, code: null } });
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
