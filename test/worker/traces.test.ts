/**
 * Traces across processes (issue 11 part 5): a gateway process and a worker process, started from their real entry
 * points (gateway/main.ts, worker/main.ts) with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a collector in this test
 * process: a loopback OTLP/HTTP receiver that decodes the protobuf requests with its own copy of the OTLP schema and
 * keeps the spans in memory. A message sent with a W3C `traceparent` must come back as one trace, from the gateway's
 * request to the model call, each span the child of the one before; a second message to the same thread gets a trace
 * of its own down to its model call. No message contents appear in any span.
 *
 * Also: the committed histories replay with the tracing interceptors in the bundle (turning tracing on for live
 * threads is safe), and the bundle size with and without them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { threadKey } from '../../protocol/ids';
import { threadBundleOptions, tracingWorkflowModules } from '../../worker/index';
import { startChild, type ChildProcessHandle } from '../support/child-process';
import { startModelServer, type ModelServer } from '../support/model-server';
import { startRedis, type RedisServer } from '../support/redis';

const WAIT_MS = 60_000;
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The part of OTLP's trace service (opentelemetry-proto, trace/v1 and common/v1) a collector needs to read spans. */
const OTLP_TRACES = `
syntax = "proto3";
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  bytes parent_span_id = 4;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
`;
const ExportTraceServiceRequest = protobuf.parse(OTLP_TRACES).root.lookupType('ExportTraceServiceRequest');

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  service: string;
  scope: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP collector on loopback that keeps every span it receives. */
interface Collector {
  url: string;
  spans: ReceivedSpan[];
  /** Waits until `done(spans of the trace)` holds. */
  trace(traceId: string, done: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- decoded protobuf objects */
function valueOf(v: any): unknown {
  if (!v) return undefined;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return v.stringValue ?? v.boolValue ?? v.intValue ?? v.doubleValue ?? v.bytesValue;
}

function attributesOf(list: any[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

async function startCollector(): Promise<Collector> {
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        req.headers['content-type'] !== 'application/x-protobuf'
      ) {
        res.writeHead(404).end();
        return;
      }
      const request = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(Buffer.concat(chunks)), {
        longs: String,
        bytes: Buffer,
      }) as any;
      for (const resourceSpans of request.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            spans.push({
              traceId: Buffer.from(span.traceId).toString('hex'),
              spanId: Buffer.from(span.spanId).toString('hex'),
              parentSpanId: span.parentSpanId ? Buffer.from(span.parentSpanId).toString('hex') : '',
              name: span.name,
              kind: span.kind ?? 0,
              service,
              scope: scopeSpans.scope?.name ?? '',
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      // An empty ExportTraceServiceResponse: everything accepted.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    async trace(traceId, done) {
      const deadline = Date.now() + WAIT_MS;
      for (;;) {
        const found = spans.filter((s) => s.traceId === traceId);
        if (done(found)) return found;
        if (Date.now() > deadline) {
          throw new Error(`Trace ${traceId} incomplete: ${JSON.stringify(found.map((s) => s.name))}`);
        }
        await sleep(100);
      }
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
/* eslint-enable @typescript-eslint/no-explicit-any */

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/** Runs a Threadline entry point (`worker/main.ts`, `gateway/main.ts`) until the test file ends. */
const children: ChildProcessHandle[] = [];
async function startEntry(script: string, env: Record<string, string>, ready: RegExp) {
  const child = await startChild(join(root, script), env, { name: script, ready, readyTimeoutMs: 120_000 });
  children.push(child);
  return child;
}

let redis: RedisServer;
let model: ModelServer;
let collector: Collector;
let gatewayUrl: string;
let taskQueue: string;

beforeAll(async () => {
  [redis, model, collector] = await Promise.all([startRedis(), startModelServer(), startCollector()]);
  taskQueue = `traces-${randomUUID()}`;
  const common = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    REDIS_URL: redis.url,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    // The batch span processor's delay (default 5 s), read by the OpenTelemetry SDK itself.
    OTEL_BSP_SCHEDULE_DELAY: '50',
    LOG_LEVEL: 'info',
  };
  const [, gateway] = await Promise.all([
    startEntry(
      'worker/main.ts',
      {
        ...common,
        MODEL: 'openai/test-model',
        OPENAI_BASE_URL: model.url,
        OPENAI_API_KEY: 'test',
        THREADLINE_WORKER_HTTP_PORT: '0',
      },
      // Logged once the worker exists (its workflow code bundled with the tracing interceptors).
      /"msg":"health and metrics"/,
    ),
    startEntry(
      'gateway/main.ts',
      { ...common, PORT: '0', HOST: '127.0.0.1' },
      /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*"msg":"threadline gateway serving"/,
    ),
  ]);
  gatewayUrl = gateway.ready[1];
  // The gateway knows the worker's agents once the worker has announced them on the bus.
  for (const deadline = Date.now() + WAIT_MS; ; await sleep(200)) {
    const agents = (await (await fetch(`${gatewayUrl}/api/agents`)).json()) as Record<string, unknown>;
    if ('assistant' in agents) break;
    if (Date.now() > deadline)
      throw new Error(`The gateway never listed the worker's agent: ${JSON.stringify(agents)}`);
  }
});

afterAll(async () => {
  for (const child of children) await child.kill('SIGKILL');
  await Promise.all([redis?.stop(), model?.close(), collector?.close()]);
});

/** Sends a message through the gateway as a caller whose own span is `traceparent`'s. */
async function send(message: string, target: { resourceId: string; threadId: string }, traceparent: string) {
  const response = await fetch(`${gatewayUrl}/api/agents/assistant/send-message`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent },
    body: JSON.stringify({ message, ...target }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  expect(
    found.map((s) => s.name),
    `one ${name} in ${JSON.stringify(spans.map((s) => s.name))}`,
  ).toEqual([name]);
  return found[0];
}

/**
 * The chain a message's trace must hold, each span the parent of the next, and the processes that made them. The
 * gateway's client sends by update-with-start to a thread it has not seen running, by a plain update once it has.
 */
function expectChain(
  spans: ReceivedSpan[],
  callerSpanId: string,
  clientSpan = 'UpdateWithStartWorkflow:submitInput',
): Record<string, ReceivedSpan> {
  const http = one(spans, 'POST /api/agents/:agentId/send-message');
  const client = one(spans, clientSpan);
  const update = one(spans, 'HandleUpdate:submitInput');
  const schedule = one(spans, 'StartActivity:runStep');
  const step = one(spans, 'RunActivity:runStep');
  const modelCall = one(spans, 'ai.streamText');
  const modelStream = one(spans, 'ai.streamText.doStream');
  const chain = [http, client, update, schedule, step, modelCall, modelStream];
  expect(chain.map((s) => s.parentSpanId)).toEqual([callerSpanId, ...chain.slice(0, -1).map((s) => s.spanId)]);
  expect(chain.map((s) => s.service)).toEqual([
    'threadline-gateway',
    'threadline-gateway',
    'threadline-worker',
    'threadline-worker',
    'threadline-worker',
    'threadline-worker',
    'threadline-worker',
  ]);
  expect(http.kind).toBe(2); // SERVER
  expect(http.attributes).toMatchObject({ 'http.route': '/api/agents/:agentId/send-message' });
  expect(http.attributes['http.response.status_code']).toBe('200');
  expect(modelCall.attributes).toMatchObject({ 'ai.model.id': 'test-model', 'resource.name': 'assistant' });
  return { http, client, update, schedule, step, modelCall, modelStream };
}

describe('traces across the gateway and worker processes', () => {
  it('one trace from the gateway request through the update (with start), the workflow and the step to the model call', async () => {
    const target = { resourceId: `user-${randomUUID()}`, threadId: `thread-${randomUUID()}` };
    const first = { traceId: hex(16), spanId: hex(8) };
    model.enqueue({ text: 'Secret answer alpha' });
    await send('Secret question one', target, `00-${first.traceId}-${first.spanId}-01`);
    const firstTrace = await collector.trace(first.traceId, (spans) =>
      spans.some((s) => s.name === 'StartActivity:runStep'),
    );
    const chain = expectChain(firstTrace, first.spanId);

    // A later message: its step and model call are in its own trace, not in the first request's. The gateway's client
    // saw the thread running, so it sends a plain update.
    const second = { traceId: hex(16), spanId: hex(8) };
    model.enqueue({ text: 'Secret answer beta' });
    await send('Secret question two', target, `00-${second.traceId}-${second.spanId}-01`);
    const secondTrace = await collector.trace(second.traceId, (spans) =>
      spans.some((s) => s.name === 'StartActivity:runStep'),
    );
    expectChain(secondTrace, second.spanId, 'StartWorkflowUpdate:submitInput');

    const connection = await Connection.connect({ address: inject('temporalAddress') });
    onTestFinished(() => connection.close());
    const handle = new Client({ connection }).workflow.getHandle(threadKey(target.resourceId, target.threadId));

    // A history recorded with tracing replays on a worker without it (the global setup's plain bundle).
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      await handle.fetchHistory(),
      'traced',
    );

    // The workflow's own span lasts as long as the execution: it is exported when the execution ends, here when it is
    // cancelled, in the trace of the request that started it. (A cancelled thread fails its workflow task and retries
    // it, ending the span again each time; hence at least one.)
    await handle.cancel();
    const withRun = await collector.trace(first.traceId, (spans) =>
      spans.some((s) => s.name === 'RunWorkflow:threadWorkflow'),
    );
    const runs = withRun.filter((s) => s.name === 'RunWorkflow:threadWorkflow');
    expect(runs.map((s) => [s.parentSpanId, s.service])).toEqual(
      runs.map(() => [chain.client.spanId, 'threadline-worker']),
    );

    // What is never recorded: the messages and the answers.
    const everything = JSON.stringify(collector.spans);
    for (const secret of ['Secret question', 'Secret answer']) expect(everything).not.toContain(secret);
  });
});

describe('the tracing workflow interceptors', () => {
  const dir = join(root, 'test/replay/histories');
  const noop = () => undefined;
  const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };

  it('replay every committed history: tracing can be turned on for live threads', async () => {
    // Temporal's own workflow interceptors fail two of them (workflows/tracing.ts says why).
    const { code } = await bundleWorkflowCode({
      ...threadBundleOptions,
      workflowInterceptorModules: tracingWorkflowModules,
      logger: quietLogger,
    });
    const plain = await readFile(inject('workflowBundlePath'), 'utf8');
    console.log(
      `workflow bundle: ${Buffer.byteLength(plain)} bytes, ${Buffer.byteLength(code)} bytes with the tracing interceptors`,
    );
    // The span sink a tracing worker registers (replay calls no sink; without one the worker logs that it is missing).
    const sinks = { exporter: { export: { fn: () => undefined } } };
    const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const history = historyFromJSON(JSON.parse(await readFile(join(dir, file), 'utf8')));
      await Worker.runReplayHistory({ workflowBundle: { code }, sinks }, history, file);
    }
  });
});
