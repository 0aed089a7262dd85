/**
 * The thread's step timeline: every model step across its runs, each opening "what the model saw" (the prompt the
 * step sent: system, tools, messages, and the provider request itself) and linking to the workflow in the Temporal
 * UI. A gateway without the step routes says so instead.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { threadKey } from '../../protocol/ids';
import type { StepListing, StepPrompt } from '../../protocol/time-travel';
import { describeError, isMissingRoute } from '../api';
import { temporalWorkflowUrl } from '../config';
import { useApp } from '../context';
import { oneLine, pretty, time } from '../format';
import { useStore } from '../store';
import type { ThreadSession } from '../thread-session';
import { StatusBadge } from './status-badge';
import { ErrorText } from './controls';

export function StepsPanel({
  session,
  openStep,
  onOpen,
}: {
  session: ThreadSession;
  openStep: number | null;
  onOpen: (step: number | null) => void;
}) {
  const { api, config } = useApp();
  const changed = useStore(session.stepsChanged);
  const [steps, setSteps] = useState<StepListing[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const workflowUrl = temporalWorkflowUrl(config, threadKey(session.target.resourceId, session.target.threadId));

  useEffect(() => {
    let live = true;
    api
      .steps(session.target)
      .then((answer) => {
        if (!live) return;
        setSteps(answer.steps);
        setError(null);
      })
      .catch((err: unknown) => {
        if (!live) return;
        if (isMissingRoute(err)) setMissing(true);
        else setError(describeError(err));
        setSteps([]);
      });
    return () => {
      live = false;
    };
  }, [api, session, changed]);

  if (missing) {
    return (
      <div class="panel-body">
        <p class="muted">
          This gateway does not serve the step timeline (<code>GET /api/threads/:resourceId/:threadId/steps</code>).
          Upgrade it to inspect steps; the workflow is still in the{' '}
          <a href={workflowUrl} target="_blank" rel="noreferrer noopener">
            Temporal UI ↗
          </a>
          .
        </p>
      </div>
    );
  }

  return (
    <div class="panel-body">
      <ErrorText error={error} />
      {steps === null ? <p class="muted">Loading…</p> : null}
      {steps?.length === 0 && !error ? <p class="muted">No steps yet.</p> : null}
      <ol class="timeline steps">
        {(steps ?? []).map((s) => (
          <li key={s.step} data-step={s.step}>
            <div class="row">
              <strong>#{s.step}</strong> <StatusBadge status={s.status} /> <span>{s.agentId}</span>
              <span class="muted small">
                run {s.runId.slice(0, 8)} · step {s.stepNumber}
                {s.startedAt ? ` · ${time(Date.parse(s.startedAt))}` : ''}
              </span>
            </div>
            <p class="small">{oneLine(s.summary, 140)}</p>
            <div class="row">
              <button type="button" onClick={() => onOpen(s.step)}>
                What the model saw
              </button>
              <a href={workflowUrl} target="_blank" rel="noreferrer noopener">
                Temporal UI ↗
              </a>
            </div>
          </li>
        ))}
      </ol>
      {openStep !== null ? (
        <PromptDialog session={session} step={openStep} workflowUrl={workflowUrl} onClose={() => onOpen(null)} />
      ) : null}
    </div>
  );
}

function PromptDialog({
  session,
  step,
  workflowUrl,
  onClose,
}: {
  session: ThreadSession;
  step: number;
  workflowUrl: string;
  onClose: () => void;
}) {
  const { api } = useApp();
  const dialog = useRef<HTMLDialogElement>(null);
  const [prompt, setPrompt] = useState<StepPrompt | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    let live = true;
    api
      .stepPrompt(session.target, step)
      .then((answer) => live && setPrompt(answer))
      .catch(
        (err: unknown) =>
          live &&
          setError(
            isMissingRoute(err)
              ? 'This gateway does not serve step prompts (GET …/steps/:step/prompt).'
              : describeError(err),
          ),
      );
    return () => {
      live = false;
    };
  }, [api, session, step]);

  const tools = toolList(prompt?.tools);

  return (
    <dialog
      ref={dialog}
      class="prompt-dialog"
      aria-labelledby="prompt-title"
      onClose={onClose}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <div class="dialog-head">
        <h2 id="prompt-title">What the model saw at step #{step}</h2>
        <button type="button" class="quiet" onClick={onClose}>
          Close
        </button>
      </div>
      <ErrorText error={error} />
      {!prompt && !error ? <p class="muted">Loading…</p> : null}
      {prompt ? (
        <div class="prompt">
          <dl class="facts">
            <dt>Agent</dt>
            <dd>{prompt.agentId}</dd>
            <dt>Model</dt>
            <dd>
              <code>{prompt.model}</code>
            </dd>
            <dt>Workflow</dt>
            <dd>
              <a href={workflowUrl} target="_blank" rel="noreferrer noopener">
                Temporal UI ↗
              </a>
            </dd>
          </dl>
          <h3>System</h3>
          <pre class="system">{prompt.system || '(none)'}</pre>
          <h3>Tools ({tools.length})</h3>
          {tools.length === 0 ? <p class="muted">None.</p> : null}
          <ul class="list">
            {tools.map((t) => (
              <li key={t.name}>
                <code>{t.name}</code> <span class="muted">{t.description}</span>
              </li>
            ))}
          </ul>
          <h3>Messages ({prompt.messages.length})</h3>
          <ol class="prompt-messages">
            {prompt.messages.map((message, i) => {
              return (
                <li key={i} class={`prompt-message role-${message.role ?? 'unknown'}`}>
                  <span class="badge">{message.role ?? '?'}</span>
                  <pre>{messageText(message.content)}</pre>
                </li>
              );
            })}
          </ol>
          {prompt.settings ? (
            <>
              <h3>Settings</h3>
              <pre>{pretty(prompt.settings)}</pre>
            </>
          ) : null}
          {prompt.notes?.length ? (
            <ul class="small muted">
              {prompt.notes.map((note, i) => (
                <li key={i}>{note}</li>
              ))}
            </ul>
          ) : null}
          <details>
            <summary>Provider request{prompt.request ? ` (POST ${prompt.request.url})` : ': not available'}</summary>
            <pre class="request">{prompt.request ? requestBody(prompt.request.body) : '—'}</pre>
          </details>
        </div>
      ) : null}
    </dialog>
  );
}

function toolList(tools: StepPrompt['tools'] | undefined): { name: string; description: string }[] {
  return Object.entries(tools ?? {}).map(([name, t]) => ({ name, description: t?.description ?? '' }));
}

/** The request body as sent, indented when it is JSON. */
function requestBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        const p = part as { type?: string; text?: string };
        return p.type === 'text' && typeof p.text === 'string' ? p.text : pretty(part);
      })
      .join('\n');
  }
  return pretty(content);
}
