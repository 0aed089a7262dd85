/**
 * `threadline history export` writes a thread's whole history (every execution across continue-as-new) to one
 * file; `threadline history replay` replays such a file, or a live thread, against the current workflow code and
 * names the first event where the code and the history part ways. The replay check of docs/operations.md, for one
 * thread of a running deployment. `threadline history repair` (history-repair.ts) resets a thread whose running execution
 * no longer replays.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import type { WorkflowClient } from '@temporalio/client';
import { threadKey } from '../../protocol/ids';
import type { ThreadTarget } from '../../protocol/schemas';
import { EXIT, type Command, type CommandContext, type CommandGroup } from './command';
import { locateDivergence, type Divergence } from './divergence';
import { json } from './format';
import {
  HISTORY_FORMAT,
  executionsOf,
  readHistoryChain,
  type ExportedExecution,
  type HistoryExport,
} from './history-file';
import { bundleOption, makeReplayer } from './replayer';
import { repairCommand } from './history-repair';
import { withSession } from './session';
import {
  formatThreadName,
  noMore,
  parseThreadName,
  threadArgument,
  threadOptionHelp,
  threadOptions,
} from './thread-name';

const exportCommand: Command = {
  summary: "Write a thread's whole history (every execution across continue-as-new) to one JSON file.",
  usage: 'RESOURCE/THREAD [--out FILE] [--json]',
  options: { out: { type: 'string' }, json: { type: 'boolean' }, ...threadOptions },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--out <file>': 'Write the file here (default: print it).',
    '--json': 'With --out: print { file, workflowId, executions, events }.',
  },
  examples: [
    'threadline history export user-42/support --out support.history.json',
    'threadline history export user-42/support > support.history.json',
  ],
  async run(context) {
    const { target, rest } = threadArgument(context);
    noMore(rest);
    const document = await withSession(context.env, async ({ temporal, settings }) => {
      const workflowId = threadKey(target.resourceId, target.threadId);
      const executions = await readChainOf(temporal.workflow, target, settings.temporal.namespace);
      const exported: HistoryExport = {
        format: HISTORY_FORMAT,
        version: 1,
        exportedAt: new Date().toISOString(),
        namespace: settings.temporal.namespace,
        workflowId,
        ...target,
        executions,
      };
      return exported;
    });
    const out = context.values.out as string | undefined;
    if (!out) {
      context.out(JSON.stringify(document));
      return EXIT.ok;
    }
    await writeFile(out, JSON.stringify(document, null, 2) + '\n');
    const events = document.executions.reduce((sum, e) => sum + e.eventCount, 0);
    const summary = { file: out, workflowId: document.workflowId, executions: document.executions.length, events };
    context.out(
      context.values.json
        ? json(summary)
        : `Exported ${formatThreadName(target)}: ${summary.executions} execution(s), ${events} events, to ${out}.`,
    );
    return EXIT.ok;
  },
};

async function readChainOf(
  workflow: WorkflowClient,
  target: ThreadTarget,
  namespace: string,
): Promise<ExportedExecution[]> {
  const { WorkflowNotFoundError } = await import('@temporalio/client');
  try {
    return await readHistoryChain(workflow, threadKey(target.resourceId, target.threadId));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      throw new Error(`No thread ${formatThreadName(target)} in namespace "${namespace}".`, { cause: err });
    }
    throw err;
  }
}

const replayCommand: Command = {
  summary:
    'Replay a history file (or a live thread) against the current workflow code; on a divergence, name the first event that differs (exit 1).',
  usage: 'FILE | RESOURCE/THREAD [--bundle FILE] [--json]',
  options: { bundle: { type: 'string' }, json: { type: 'boolean' }, ...threadOptions },
  positionals: true,
  optionHelp: {
    ...threadOptionHelp,
    '--bundle <file>':
      'Replay against this workflow bundle (`bundleWorkflowCode` output) instead of bundling the workflow code of this installation.',
    '--json': '{ workflowId, ok, executions: [{ runId, eventCount, ok, divergence? }] }.',
  },
  examples: [
    'threadline history replay support.history.json',
    'threadline history replay user-42/support',
    'threadline history replay test/replay/histories/thread-signals.json --bundle dist/workflow-bundle.js',
  ],
  async run(context) {
    const bundle = bundleOption(context);
    const source = await replaySource(context);
    const outcomes = await replayAll(source.executions, source.workflowId, bundle);
    const ok = outcomes.every((o) => !o.divergence);
    if (context.values.json) {
      context.out(json({ workflowId: source.workflowId, ok, executions: outcomes }));
    } else {
      context.out(describeReplay(source.workflowId, outcomes, bundle));
    }
    return ok ? EXIT.ok : EXIT.failure;
  },
};

/** The executions to replay: from the file named, or read from the thread named. */
async function replaySource(context: CommandContext): Promise<{ workflowId: string; executions: ExportedExecution[] }> {
  const [first] = context.positionals;
  const named = context.values.resource !== undefined || context.values.thread !== undefined;
  if (!named && first !== undefined && (existsSync(first) || first.endsWith('.json'))) {
    noMore(context.positionals.slice(1));
    let text: string;
    try {
      text = await readFile(first, 'utf8');
    } catch (err) {
      throw new Error(`Cannot read ${first}: ${(err as Error).message}`, { cause: err });
    }
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch (err) {
      throw new Error(`${first} is not JSON: ${(err as Error).message}`, { cause: err });
    }
    return executionsOf(document, first);
  }
  const { target, rest } = named ? threadArgument(context) : { target: parseThreadName(first ?? ''), rest: [] };
  noMore(named ? rest : context.positionals.slice(1));
  return withSession(context.env, async ({ temporal, settings }) => ({
    workflowId: threadKey(target.resourceId, target.threadId),
    executions: await readChainOf(temporal.workflow, target, settings.temporal.namespace),
  }));
}

interface ReplayOutcome {
  runId: string;
  eventCount: number;
  ok: boolean;
  divergence?: Divergence;
}

/** Replays each execution in turn (bundling the workflow code once); a failing one is located by `locateDivergence`. */
async function replayAll(
  executions: ExportedExecution[],
  workflowId: string,
  bundlePath: string | undefined,
): Promise<ReplayOutcome[]> {
  const replay = await makeReplayer(workflowId, bundlePath);
  const outcomes: ReplayOutcome[] = [];
  for (const execution of executions) {
    const { events } = execution.history;
    const error = await replay(events);
    outcomes.push({
      runId: execution.runId,
      eventCount: events.length,
      ok: !error,
      ...(error ? { divergence: await locateDivergence(events, error, replay) } : {}),
    });
  }
  return outcomes;
}

function describeReplay(workflowId: string, outcomes: ReplayOutcome[], bundle: string | undefined): string {
  const lines = [
    `Replaying ${outcomes.length} execution(s) of ${workflowId} against ${bundle ? `the bundle ${bundle}` : 'the workflow code of this installation'}:`,
  ];
  outcomes.forEach((o, i) => {
    const where = `  ${i + 1}/${outcomes.length}  run ${o.runId}  ${o.eventCount} events  `;
    lines.push(where + (o.divergence ? `DIVERGES at ${eventLabel(o.divergence)}: ${o.divergence.message}` : 'ok'));
  });
  const failed = outcomes.filter((o) => o.divergence);
  if (failed.length === 0) {
    lines.push(`All ${outcomes.length} execution(s) replay: the current code is compatible with this history.`);
  } else {
    const first = failed[0];
    lines.push(
      `${failed.length} of ${outcomes.length} execution(s) diverge; the first at ${eventLabel(first.divergence!)} of run ${first.runId}. ` +
        'Running threads with this history would fail their workflow tasks on the new code: gate the change (docs/operations.md, versioning).',
    );
  }
  return lines.join('\n');
}

function eventLabel(divergence: Divergence): string {
  return `event ${divergence.eventId} (${divergence.eventType}${divergence.name ? ` ${divergence.name}` : ''})`;
}

export const historyCommand: CommandGroup = {
  summary:
    "Export a thread's history to a file, replay it against the current workflow code, and repair a thread stuck on a divergence.",
  subcommands: { export: exportCommand, replay: replayCommand, repair: repairCommand },
};
