/**
 * `threadline doctor`: checks what a deployment needs, with the same settings as the worker, each as a line that
 * passes or fails, a failure with its fix. Checks that need an earlier one (the namespace needs the server) are
 * skipped when it failed.
 */
import type { Connection } from '@temporalio/client';
import { searchAttributeTypeName } from '../../protocol/search-attributes';
import { temporalAddress, type Settings } from '../../config/settings';
import { EXIT, type Command } from './command';
import { json } from './format';
import { commandSettings, connectTemporal, createNamespaceFix, namespaceExists } from './session';

/** Temporal API enum values (temporal.api.enums.v1), which @temporalio/client does not export by name. */
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPE_WORKFLOW = 1;

/** How long the Redis and model endpoint checks wait for an answer. */
const PROBE_TIMEOUT_MS = 3_000;

export interface Check {
  name: string;
  status: 'pass' | 'fail' | 'skip';
  detail: string;
  /** What to do about a failure. */
  fix?: string;
}

export const doctorCommand: Command = {
  summary:
    'Check the setup: Temporal reachable, namespace, search attributes, workers polling, Redis and the model endpoint.',
  usage: '[--json]',
  options: { json: { type: 'boolean' } },
  optionHelp: { '--json': '{ ok, checks: [{ name, status: pass|fail|skip, detail, fix? }] }.' },
  examples: ['threadline doctor', 'TEMPORAL_PROFILE=prod REDIS_URL=redis://redis:6379 threadline doctor --json'],
  async run({ values, env, out }) {
    const checks = await runChecks(commandSettings(env));
    const ok = checks.every((check) => check.status !== 'fail');
    out(values.json ? json({ ok, checks }) : describeChecks(checks, ok));
    return ok ? EXIT.ok : EXIT.failure;
  },
};

export async function runChecks(settings: Settings): Promise<Check[]> {
  const { namespace, taskQueue } = settings.temporal;
  const names = {
    temporal: 'Temporal reachable',
    namespace: `Namespace "${namespace}"`,
    attributes: 'Search attributes',
    pollers: `Workers polling "${taskQueue}"`,
  };
  const checks: Check[] = [];
  const skip = (reason: string) =>
    [names.namespace, names.attributes, names.pollers].map((name): Check => ({ name, status: 'skip', detail: reason }));
  let connection: Connection | null = null;
  try {
    connection = await connectTemporal(settings);
    const { serverVersion } = await connection.workflowService.getSystemInfo({});
    checks.push(
      pass(names.temporal, `${temporalAddress(settings)}${serverVersion ? `, server ${serverVersion}` : ''}`),
    );
  } catch (err) {
    const reason = ((err as Error).cause as Error | undefined)?.message ?? (err as Error).message;
    checks.push(
      fail(
        names.temporal,
        `${temporalAddress(settings)} (${settings.temporal.addressSource ?? 'the default address'}): ${reason}`,
        'Start the server (`threadline start`, or `temporal server start-dev`), or point TEMPORAL_ADDRESS or a temporal.toml profile (TEMPORAL_PROFILE) at it.',
      ),
    );
    checks.push(...skip('Temporal is not reachable.'));
  }
  if (connection) {
    try {
      if (await namespaceExists(connection, namespace)) {
        checks.push(pass(names.namespace, 'exists'));
        checks.push(await searchAttributeCheck(names.attributes, connection, namespace));
        checks.push(await pollerCheck(names.pollers, connection, namespace, taskQueue));
      } else {
        checks.push(
          fail(names.namespace, `does not exist on ${temporalAddress(settings)}`, createNamespaceFix(namespace)),
        );
        checks.push(...skip('The namespace does not exist.').slice(1));
      }
    } finally {
      await connection.close();
    }
  }
  checks.push(await redisCheck(settings.redisUrl));
  checks.push(await modelCheck(settings));
  return checks;
}

async function searchAttributeCheck(name: string, connection: Connection, namespace: string): Promise<Check> {
  const { inspectSearchAttributes } = await import('../../client/search-attributes');
  try {
    const { present, missing, mismatched } = await inspectSearchAttributes(connection, namespace);
    if (missing.length === 0 && mismatched.length === 0) return pass(name, present.join(', '));
    const problems = [
      ...(missing.length ? [`missing ${missing.map((key) => key.name).join(', ')}`] : []),
      ...mismatched.map(
        ({ key, registered }) => `${key.name} is ${registered}, Threadline needs ${searchAttributeTypeName(key.type)}`,
      ),
    ];
    const fix = mismatched.length
      ? 'Temporal cannot change a type: remove the attribute (`temporal operator search-attribute remove --name …`), then run `threadline setup`.'
      : 'Run `threadline setup` (it registers them in the namespace).';
    return fail(name, problems.join('; '), fix);
  } catch (err) {
    return fail(
      name,
      `Listing them failed: ${(err as Error).message}`,
      'Run `threadline setup` with a user allowed to.',
    );
  }
}

async function pollerCheck(name: string, connection: Connection, namespace: string, taskQueue: string): Promise<Check> {
  let pollers: { identity?: string | null }[] | null | undefined;
  try {
    ({ pollers } = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: TASK_QUEUE_KIND_NORMAL },
      taskQueueType: TASK_QUEUE_TYPE_WORKFLOW,
    }));
  } catch (err) {
    return fail(
      name,
      `Describing the task queue failed: ${(err as Error).message}`,
      'Check the server and your permissions.',
    );
  }
  const identities = [...new Set((pollers ?? []).map((poller) => poller.identity ?? '?'))];
  if (identities.length === 0) {
    return fail(
      name,
      `no worker polls task queue "${taskQueue}" in namespace "${namespace}": threads there make no progress.`,
      `Start a worker with the same settings (\`threadline worker\`; TEMPORAL_TASK_QUEUE=${taskQueue}).`,
    );
  }
  return pass(name, `${identities.length} worker(s): ${identities.join(', ')}`);
}

async function redisCheck(redisUrl: string | undefined): Promise<Check> {
  const name = 'Redis';
  if (!redisUrl) {
    return {
      name,
      status: 'skip',
      detail: 'REDIS_URL is not set: the in-process bus (one process only; `threadline tail` needs Redis).',
    };
  }
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: PROBE_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const reply = await redis.ping();
    return pass(name, `${redactUrl(redisUrl)} answers PING (${reply})`);
  } catch (err) {
    return fail(
      name,
      `${redactUrl(redisUrl)}: ${(err as Error).message}`,
      'Start Redis there, or set REDIS_URL to the Redis the workers and gateways share.',
    );
  } finally {
    redis.disconnect();
  }
}

async function modelCheck(settings: Settings): Promise<Check> {
  const name = 'Model endpoint';
  const base = settings.models.openaiBaseUrl;
  if (!base) return { name, status: 'skip', detail: 'OPENAI_BASE_URL is not set.' };
  const url = `${base.replace(/\/+$/, '')}/models`;
  const key = settings.models.openaiApiKey;
  try {
    const response = await fetch(url, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.ok) return pass(name, `GET ${url}: ${response.status}`);
    const fix =
      response.status === 401 || response.status === 403
        ? 'Set OPENAI_API_KEY to a key the endpoint accepts.'
        : 'Set OPENAI_BASE_URL to the base of an OpenAI-compatible API (the URL that ends in /v1).';
    return fail(name, `GET ${url}: HTTP ${response.status}`, fix);
  } catch (err) {
    const reason = (err as Error).name === 'TimeoutError' ? `no answer within ${PROBE_TIMEOUT_MS} ms` : causeOf(err);
    return fail(name, `GET ${url}: ${reason}`, 'Start the model server, or set OPENAI_BASE_URL to where it listens.');
  }
}

function causeOf(err: unknown): string {
  const cause = (err as { cause?: { message?: string } }).cause;
  return cause?.message ?? (err as Error).message;
}

/** The URL without its password. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '****';
    return parsed.toString();
  } catch {
    return url;
  }
}

function pass(name: string, detail: string): Check {
  return { name, status: 'pass', detail };
}

function fail(name: string, detail: string, fix: string): Check {
  return { name, status: 'fail', detail, fix };
}

function describeChecks(checks: Check[], ok: boolean): string {
  const label = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP' } as const;
  const lines = checks.flatMap((check) => [
    `${label[check.status]}  ${check.name}: ${check.detail}`,
    ...(check.fix ? [`      fix: ${check.fix}`] : []),
  ]);
  const failed = checks.filter((check) => check.status === 'fail').length;
  lines.push(ok ? 'All checks passed.' : `${failed} check(s) failed.`);
  return lines.join('\n');
}
