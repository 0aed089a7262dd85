/**
 * The signal model (behaviour §2.2) at unit level: what `sendSignal` accepts at ingress, the `ThreadInput` it becomes,
 * and the text the model finally sees. No Temporal involved.
 */
import { describe, expect, it } from 'vitest';
import { toModelMessages } from '../../activities/prompt';
import { ValidationError } from '../../protocol/errors';
import { signalInput } from '../../client/inputs';
import type { SignalInput, ThreadInput } from '../../protocol/schemas';
import type { InputMessage } from '../../protocol/messages';
import { renderInput } from '../../protocol/render';

const target = { resourceId: 'tenant-a', threadId: 'thread-1' };

const ingest = (signal: SignalInput): ThreadInput => signalInput('agent', signal, target);

/** The parts the model receives for a signal sent through `sendSignal`. */
const rendered = (signal: SignalInput) => renderInput(ingest(signal));

/** The single text part the model receives for a signal. */
function renderedText(signal: SignalInput): string {
  const parts = rendered(signal);
  expect(parts).toHaveLength(1);
  expect(parts[0].type).toBe('text');
  return (parts[0] as { text: string }).text;
}

/** The thrown ingress error's message (and that it is a 400-class ValidationError). */
function ingressError(signal: unknown): string {
  try {
    ingest(signal as SignalInput);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as Error).message;
  }
  throw new Error('expected the signal to be rejected at ingress');
}

const png = { type: 'file' as const, url: 'https://example.com/chart.png', mediaType: 'image/png' };
const pdf = { type: 'file' as const, data: 'JVBERi0xLjQK', mediaType: 'application/pdf', filename: 'report.pdf' };

describe('sendSignal rendering', () => {
  it('escapes contents so markup in them stays text', () => {
    expect(renderedText({ type: 'reactive', contents: 'Use <safe> content & continue' })).toBe(
      '<system-reminder>Use &lt;safe&gt; content &amp; continue</system-reminder>',
    );
  });

  it('leaves out null attributes', () => {
    expect(
      renderedText({ type: 'notification', contents: 'x', attributes: { a: 'kept', gone: null, b: 'kept' } }),
    ).toBe('<notification a="kept" b="kept">x</notification>');
  });

  it('renders booleans and numbers with String()', () => {
    expect(
      renderedText({ type: 'reactive', contents: 'x', attributes: { enabled: true, off: false, n: 1.5, big: 1e21 } }),
    ).toBe('<system-reminder enabled="true" off="false" n="1.5" big="1e+21">x</system-reminder>');
  });

  it('renders empty contents as a self-closing tag', () => {
    expect(renderedText({ type: 'reactive', tagName: 'tag', contents: '', attributes: { a: 1 } })).toBe(
      '<tag a="1" />',
    );
    expect(renderedText({ type: 'reactive', tagName: 'tag', contents: [{ type: 'text', text: '' }] })).toBe('<tag />');
  });

  it('escapes " in attribute values as &quot; (and <, >, & too)', () => {
    expect(renderedText({ type: 'notification', contents: 'x', attributes: { title: 'say "hi" <b> & bye' } })).toBe(
      '<notification title="say &quot;hi&quot; &lt;b&gt; &amp; bye">x</notification>',
    );
  });

  it('keeps attributes in insertion order', () => {
    expect(renderedText({ type: 'notification', contents: 'x', attributes: { z: 1, a: 2, m: 3, _b: 4 } })).toBe(
      '<notification z="1" a="2" m="3" _b="4">x</notification>',
    );
  });

  it('passes file-only contents through without an empty wrapper', () => {
    expect(rendered({ type: 'reactive', contents: [png, pdf], attributes: { a: 1 } })).toEqual([png, pdf]);
  });

  it('joins text parts with \\n in one wrapper and passes file parts beside it', () => {
    expect(
      rendered({
        type: 'notification',
        contents: [{ type: 'text', text: 'first' }, png, { type: 'text', text: 'second & last' }, pdf],
        attributes: { source: 'ci' },
      }),
    ).toEqual([{ type: 'text', text: '<notification source="ci">first\nsecond &amp; last</notification>' }, png, pdf]);
  });
});

describe('sendSignal types and tags', () => {
  it('stores user as user with tag <user>', () => {
    const input = ingest({ type: 'user', contents: 'hi', attributes: { name: 'Jane' } });
    expect(input.type).toBe('user');
    expect(renderInput(input)).toEqual([{ type: 'text', text: '<user name="Jane">hi</user>' }]);
  });

  it('normalises legacy user-message to stored type user, tag <user>', () => {
    const input = ingest({ type: 'user-message', contents: 'hi', attributes: { name: 'Jane' } });
    expect(input.type).toBe('user');
    expect(input.tagName).toBeUndefined();
    expect(renderInput(input)).toEqual([{ type: 'text', text: '<user name="Jane">hi</user>' }]);
  });

  it('leaves a user signal without attributes or tagName unwrapped, like a message', () => {
    expect(rendered({ type: 'user-message', contents: 'hi' })).toEqual([{ type: 'text', text: 'hi' }]);
  });

  it('stores reactive as reactive with tag <system-reminder>', () => {
    const input = ingest({ type: 'reactive', contents: 'check the build' });
    expect(input.type).toBe('reactive');
    expect(renderInput(input)).toEqual([{ type: 'text', text: '<system-reminder>check the build</system-reminder>' }]);
  });

  it('normalises legacy system-reminder to stored type reactive, tag <system-reminder>', () => {
    const input = ingest({ type: 'system-reminder', contents: 'check the build' });
    expect(input.type).toBe('reactive');
    expect(input.tagName).toBeUndefined();
    expect(renderInput(input)).toEqual([{ type: 'text', text: '<system-reminder>check the build</system-reminder>' }]);
  });

  it('stores notification as notification with tag <notification>', () => {
    const input = ingest({ type: 'notification', contents: 'CI failed', attributes: { source: 'github' } });
    expect(input.type).toBe('notification');
    expect(renderInput(input)).toEqual([
      { type: 'text', text: '<notification source="github">CI failed</notification>' },
    ]);
  });

  it('lets an explicit tagName override the default tag', () => {
    expect(renderedText({ type: 'reactive', tagName: 'build-status', contents: 'green' })).toBe(
      '<build-status>green</build-status>',
    );
    expect(renderedText({ type: 'user', tagName: 'slack.message', contents: 'hello' })).toBe(
      '<slack.message>hello</slack.message>',
    );
    expect(renderedText({ type: 'system-reminder', tagName: '_ctx', contents: 'x' })).toBe('<_ctx>x</_ctx>');
  });

  it('rejects an unknown type with a message that says how to get a custom tag', () => {
    const message = ingressError({ type: 'X', contents: 'x' });
    expect(message).toContain(
      'Invalid signal type: X. Use a supported signal type and set tagName for custom XML tags.',
    );
    expect(ingressError({ type: 'custom-tag', contents: 'x' })).toContain('Invalid signal type: custom-tag.');
  });

  it('rejects state signals sent through sendSignal', () => {
    expect(ingressError({ type: 'state', contents: 'x' })).toContain('sendStateSignal');
  });
});

describe('sendSignal name checks at ingress', () => {
  it('rejects an invalid tag name before it can reach a prompt', () => {
    expect(ingressError({ type: 'reactive', tagName: 'system reminder', contents: 'x' })).toContain(
      'Invalid signal XML tag name: system reminder',
    );
    for (const tagName of ['1abc', '-x', 'a>b', 'a"b', 'user><system-reminder', '']) {
      expect(() => ingest({ type: 'reactive', tagName, contents: 'x' }), tagName).toThrow(ValidationError);
    }
  });

  it('rejects an invalid attribute name', () => {
    expect(ingressError({ type: 'notification', contents: 'x', attributes: { ok: 1, 'bad name': 'v' } })).toContain(
      'Invalid signal XML attribute name: bad name',
    );
    // `__proto__` passes the name rule but would vanish while parsing: rejected, never silently dropped.
    expect(ingressError(JSON.parse('{"type":"notification","contents":"x","attributes":{"__proto__":"v"}}'))).toContain(
      'Invalid signal XML attribute name: __proto__',
    );
    for (const name of ['1a', 'a=b', 'a"', 'a>', '']) {
      expect(() => ingest({ type: 'notification', contents: 'x', attributes: { [name]: 'v' } }), name).toThrow(
        ValidationError,
      );
    }
  });
});

describe('sendSignal carries options into the ThreadInput', () => {
  it('carries providerOptions, metadata and transient', () => {
    const providerOptions = { anthropic: { cacheControl: { type: 'ephemeral' } } };
    const metadata = { origin: 'ci', build: 42 };
    const input = ingest({ type: 'reactive', contents: 'x', providerOptions, metadata, transient: true });
    expect(input.providerOptions).toEqual(providerOptions);
    expect(input.metadata).toEqual(metadata);
    expect(input.transient).toBe(true);
    expect(input.delivery).toBe('send');
    expect(input.agentId).toBe('agent');
  });

  it('leaves transient off unless asked for', () => {
    expect(ingest({ type: 'reactive', contents: 'x' }).transient).toBeUndefined();
    expect(ingest({ type: 'reactive', contents: 'x', transient: false }).transient).toBeUndefined();
  });

  it('keeps the caller-given id (the idempotency key)', () => {
    expect(ingest({ id: 'sig-1', type: 'reactive', contents: 'x' }).id).toBe('sig-1');
  });
});

describe('toModelMessages for a signal', () => {
  const asStored = (input: ThreadInput): InputMessage => ({
    id: input.id,
    role: 'user',
    type: input.type,
    ...(input.tagName ? { tagName: input.tagName } : {}),
    contents: input.contents,
    ...(input.attributes ? { attributes: input.attributes } : {}),
    ...(input.providerOptions ? { providerOptions: input.providerOptions } : {}),
    at: 0,
  });

  it('puts providerOptions on the user model message and file parts beside the XML text part', () => {
    const providerOptions = { anthropic: { cacheControl: { type: 'ephemeral' } } };
    const input = ingest({
      type: 'notification',
      contents: [{ type: 'text', text: 'see <chart>' }, png, pdf],
      attributes: { source: 'grafana' },
      providerOptions,
    });
    expect(toModelMessages([asStored(input)])).toEqual([
      {
        role: 'user',
        providerOptions,
        content: [
          { type: 'text', text: '<notification source="grafana">see &lt;chart&gt;</notification>' },
          { type: 'file', data: new URL(png.url), mediaType: 'image/png' },
          { type: 'file', data: pdf.data, mediaType: 'application/pdf', filename: 'report.pdf' },
        ],
      },
    ]);
  });

  it('adds no providerOptions key when none were sent', () => {
    const [message] = toModelMessages([asStored(ingest({ type: 'reactive', contents: 'x' }))]);
    expect(message).toEqual({
      role: 'user',
      content: [{ type: 'text', text: '<system-reminder>x</system-reminder>' }],
    });
    expect('providerOptions' in message).toBe(false);
  });
});
