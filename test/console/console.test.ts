/**
 * The web console in a real browser: Debian's Chromium driven by playwright-core, against a real gateway, worker,
 * Temporal dev server and the scripted model. Each test does what a person would (types, clicks, reads the page)
 * and checks what the page shows, and, where it matters, what the thread or the model received.
 */
import { randomUUID } from 'node:crypto';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { summarizeAgents } from '../../agents/summary';
import { serveGateway, type ServedGateway } from '../../gateway/serve';
import type { ThreadTarget } from '../../protocol/schemas';
import { startHarness, testAgent, userTurns, type Harness } from '../support/harness';
import { adminAgent } from '../support/test-agents';
import { launchBrowser, watchPage } from './browser';

const agents = summarizeAgents([testAgent, adminAgent]);
let h: Harness;
let gateway: ServedGateway;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let logs: string[];

beforeAll(async () => {
  h = await startHarness({ agents: [testAgent, adminAgent] });
  gateway = await serveGateway({ client: h.client, agents, port: 0 });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await h?.close();
});

beforeEach(async () => {
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  logs = watchPage(page);
});

afterEach(async (test) => {
  if (test.task.result?.state === 'fail' && logs.length > 0) console.log(`Browser said:\n${logs.join('\n')}`);
  await context?.close();
});

const enc = encodeURIComponent;
/** How long a page may take to show what a test waits for (streams, visibility's eventual consistency). */
const eventually = { timeout: 30_000, interval: 100 };
const text = async (locator: Locator) => (await locator.allTextContents()).join('');
const count = (locator: Locator) => locator.count();
const attribute = (locator: Locator, name: string) =>
  locator
    .first()
    .getAttribute(name, { timeout: 1_000 })
    .catch(() => null);
const threadUrl = (base: string, t: ThreadTarget, query = '') =>
  `${base}/console/threads/${enc(t.resourceId)}/${enc(t.threadId)}${query}`;

/** Opens a thread page and waits until its event stream is live. */
async function openThread(t: ThreadTarget, query = '', base = gateway.url): Promise<void> {
  await page.goto(threadUrl(base, t, query));
  await page.locator('.connection[data-state="live"]').waitFor();
}

async function compose(text: string, button: 'Send' | 'Queue' | 'Interrupt' = 'Send'): Promise<void> {
  await page.locator('#composer-text').fill(text);
  await page.getByRole('button', { name: button, exact: true }).click();
}

/** The text of the answer of the step `key` (`step:<runId>:<n>`), or of the last step. */
function answerText(selector = '.msg.step'): Promise<string> {
  return page.evaluate((sel) => {
    const steps = document.querySelectorAll(sel);
    return steps[steps.length - 1]?.querySelector('.answer')?.textContent ?? '';
  }, selector);
}

describe('the web console', () => {
  it('starts a thread from the list and shows the answer streaming in, token by token, without layout shift', async () => {
    const chunks = Array.from({ length: 60 }, (_, i) => `w${i} `);
    h.model.enqueue({ text: chunks, chunkDelayMs: 40 });
    const t = { resourceId: `res-${randomUUID()}`, threadId: `console-${randomUUID().slice(0, 8)}` };
    await page.addInitScript(() => {
      const shifts: { value: number; at: number }[] = [];
      (window as unknown as { __shifts: typeof shifts }).__shifts = shifts;
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries() as (PerformanceEntry & { value: number; hadRecentInput: boolean })[]) {
          if (!entry.hadRecentInput) shifts.push({ value: entry.value, at: entry.startTime });
        }
      }).observe({ type: 'layout-shift', buffered: true });
    });

    await page.goto(`${gateway.url}/console`);
    await page.getByRole('button', { name: 'New thread' }).click();
    await page.locator('#new-agent').selectOption('tester');
    await page.locator('#new-resource').fill(t.resourceId);
    await page.locator('#new-thread-id').fill(t.threadId);
    await page.locator('#new-message').fill('Hello from the console');
    await page.getByRole('button', { name: 'Start thread' }).click();
    await page.waitForURL(/\/console\/threads\//);
    expect(decodeURIComponent(new URL(page.url()).pathname)).toBe(`/console/threads/${t.resourceId}/${t.threadId}`);
    await expect
      .poll(() => text(page.locator('.msg.input.user .text').first()), eventually)
      .toBe('Hello from the console');

    // Part of the answer is on the page while the rest is still on its way.
    await page.waitForFunction(
      () => {
        const text = document.querySelector('.msg.step .answer')?.textContent ?? '';
        return text.includes('w5 ') && !text.includes('w59');
      },
      undefined,
      { polling: 'raf', timeout: 30_000 },
    );
    const streamingFrom = await page.evaluate(() => performance.now());
    // Until the last token is on the page: what changes when the step then finishes (its badge, the run's status) is
    // not streaming (a CI run measured one 0.011 shift at that moment).
    await page.waitForFunction(
      () => (document.querySelector('.msg.step .answer')?.textContent ?? '').includes('w59'),
      undefined,
      { polling: 'raf', timeout: 30_000 },
    );
    const streamingTo = await page.evaluate(() => performance.now());
    await expect.poll(() => count(page.locator('.msg.step.status-done')), eventually).toBe(1);
    expect(await answerText()).toBe(chunks.join(''));
    const shifts = await page.evaluate(
      () => (window as unknown as { __shifts: { value: number; at: number }[] }).__shifts,
    );
    expect(shifts.filter((s) => s.at >= streamingFrom && s.at <= streamingTo)).toEqual([]);

    // The list shows it from the search attributes (visibility is eventually consistent: the page refreshes).
    await page.goto(`${gateway.url}/console`);
    const row = page.locator('tr', { has: page.getByRole('link', { name: new RegExp(t.threadId) }) });
    await expect.poll(() => text(row.locator('td[data-label="Status"]')), eventually).toBe('idle');
    await expect.poll(() => text(row.locator('td[data-label="Agent"]')), eventually).toBe('tester');
    await page.locator('#filter-status').selectOption('running');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.url(), eventually).toMatch(/status=running/);
    await expect.poll(() => count(page.getByRole('link', { name: new RegExp(t.threadId) })), eventually).toBe(0);
  });

  it('interrupts the step in flight: its partial answer is dropped and a fresh step answers the new message', async () => {
    const t = h.thread();
    const first = h.model.requests.length;
    h.model.enqueue(
      { text: ['Once ', 'upon ', 'a ', 'time'], chunkDelayMs: 20, hang: true },
      { text: 'Fresh answer.' },
    );
    await openThread(t, '?agent=tester');
    await compose('Tell me a long story');
    await page.waitForFunction(() => (document.querySelector('.msg.step .answer')?.textContent ?? '').includes('time'));

    await compose('Stop, answer this instead', 'Interrupt');

    await expect.poll(() => count(page.locator('.msg.step.status-interrupted')), eventually).toBe(1);
    await expect.poll(() => text(page.locator('.msg.step.status-done .answer')), eventually).toBe('Fresh answer.');
    await expect.poll(() => count(page.locator('.msg.step.status-interrupted .answer')), eventually).toBe(0);
    const requests = await h.model.waitForRequests(first + 2);
    expect(requests[first].closedEarly).toBe(true);
    expect(userTurns(requests[first + 1].messages)).toEqual(['Tell me a long story', 'Stop, answer this instead']);
  });

  it('approves a parked tool call with resume data, and the run continues', async () => {
    const t = h.thread();
    h.model.enqueue(
      { toolCalls: [{ id: 'del-1', name: 'deleteRepo', args: { repo: 'acme/app' } }] },
      { text: 'Deleted acme/app.' },
    );
    await openThread(t, '?agent=admin');
    await compose('delete acme/app');

    const card = page.locator('.approval[data-tool-call="del-1"]');
    await expect.poll(() => text(card), eventually).toContain('deleteRepo');
    await expect.poll(() => text(page.getByRole('tab', { name: /Run/ })), eventually).toContain('1');
    await card.getByLabel('Resume data (JSON, optional)').fill('{"confirmedBy":"console"}');
    await card.getByRole('button', { name: 'Approve' }).click();

    await expect.poll(() => text(page.locator('.msg.tool')), eventually).toContain('deleted acme/app');
    await expect.poll(() => text(page.locator('.msg.step .answer').last()), eventually).toBe('Deleted acme/app.');
    await expect.poll(() => count(card), eventually).toBe(0);
    await expect.poll(() => text(page.locator('[data-tool-call="del-1"] .badge')), eventually).toBe('approved');
  });

  it('dismisses a notification from the inbox, at phone width', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const t = h.thread();
    const sent = await h.client
      .agent('tester')
      .sendNotificationSignal(
        { source: 'github', kind: 'ci-status', priority: 'low', summary: 'CI failed on main' },
        t,
      );
    const id = sent.notifications[0].id;
    await openThread(t, '?agent=tester');

    await page.getByRole('tab', { name: /Inbox/ }).click();
    const record = page.locator(`[data-notification="${id}"]`);
    await expect.poll(() => text(record), eventually).toContain('CI failed on main');
    await record.getByRole('button', { name: 'Dismiss' }).click();

    await expect.poll(() => count(record), eventually).toBe(0);
    const page1 = await h.client.listNotifications(t, { status: ['dismissed'] });
    expect(page1?.notifications.map((n) => n.id)).toEqual([id]);
    await page.getByLabel('dismissed').check();
    await expect.poll(() => text(record.locator('.badge').nth(1)), eventually).toBe('dismissed');
    // Nothing is wider than the phone.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  });

  it("opens a step's prompt: what the model saw, with a link to the workflow in the Temporal UI", async () => {
    const t = h.thread();
    h.model.enqueue({ text: 'Inspected.' });
    await h.client.agent('tester').sendMessage('Hello, inspector', t);
    await openThread(t, '?tab=steps');
    await expect.poll(() => text(page.locator('.msg.step .answer')), eventually).toBe('Inspected.');

    await page.getByRole('button', { name: 'What the model saw' }).first().click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => text(dialog), eventually).toContain('You are a test agent.');
    await expect.poll(() => text(dialog), eventually).toContain('Hello, inspector');
    expect(await attribute(dialog.getByRole('link', { name: /Temporal UI/ }), 'href')).toMatch(
      new RegExp(`/namespaces/default/workflows/${enc(`thread:${enc(t.resourceId)}:${enc(t.threadId)}`)}$`),
    );
    await page.keyboard.press('Escape');
    await expect.poll(() => count(dialog), eventually).toBe(0);
  });

  it("asks for an API key, lists only that key's threads, and answers 403 for another tenant's thread", async () => {
    const a = { resourceId: `tenant-a-${randomUUID()}`, threadId: 'shared-name' };
    const b = { resourceId: `tenant-b-${randomUUID()}`, threadId: 'shared-name' };
    const keyed = await serveGateway({
      client: h.client,
      agents,
      port: 0,
      apiKeys: { 'key-a': [a.resourceId], 'key-b': [b.resourceId] },
    });
    try {
      await h.client.agent('tester').sendMessage('Hello from tenant a', a);
      await h.client.agent('tester').sendMessage('Hello from tenant b', b);

      await page.goto(`${keyed.url}/console`);
      await page.getByLabel('API key').fill('wrong-key');
      await page.getByRole('button', { name: 'Use this key' }).click();
      await expect.poll(() => text(page.getByRole('alert')), eventually).toContain('does not know this key');
      await page.getByLabel('API key').fill('key-a');
      await page.getByRole('button', { name: 'Use this key' }).click();

      await expect.poll(() => count(page.getByRole('link', { name: new RegExp(a.resourceId) })), eventually).toBe(1);
      await expect.poll(() => count(page.getByRole('link', { name: new RegExp(b.resourceId) })), eventually).toBe(0);
      expect(await page.evaluate(() => document.cookie)).toBe('');
      expect(await page.evaluate(() => sessionStorage.getItem('threadline.console.apiKey'))).toBe('key-a');

      await page.goto(threadUrl(keyed.url, b));
      await expect
        .poll(() => text(page.getByRole('alert').first()), eventually)
        .toContain(`may not act on resourceId "${b.resourceId}"`);
      await expect.poll(() => attribute(page.locator('.connection'), 'data-state'), eventually).toBe('refused');
      await expect.poll(() => count(page.locator('.msg')), eventually).toBe(0);
      const status = await page.evaluate(
        async (path) => (await fetch(path, { headers: { authorization: 'Bearer key-a' } })).status,
        `/api/threads/${enc(b.resourceId)}/${enc(b.threadId)}`,
      );
      expect(status).toBe(403);

      await page.goto(threadUrl(keyed.url, a));
      await expect.poll(() => text(page.locator('.msg.input.user .text')), eventually).toBe('Hello from tenant a');
    } finally {
      await keyed.close();
    }
  });

  it('shows "reconnecting" while the gateway restarts and resumes the answer without a duplicate token', async () => {
    let restartable = await serveGateway({ client: h.client, agents, port: 0 });
    const port = restartable.port;
    try {
      const t = h.thread();
      const chunks = Array.from({ length: 80 }, (_, i) => `t${i} `);
      h.model.enqueue({ text: chunks, chunkDelayMs: 50 });
      await openThread(t, '?agent=tester', restartable.url);
      await compose('Stream through a restart');
      await page.waitForFunction(() =>
        (document.querySelector('.msg.step .answer')?.textContent ?? '').includes('t10 '),
      );

      await restartable.close();
      await expect.poll(() => attribute(page.locator('.connection'), 'data-state'), eventually).toBe('reconnecting');
      await expect.poll(() => text(page.locator('.connection')), eventually).toBe('Reconnecting…');
      restartable = await serveGateway({ client: h.client, agents, port });

      await expect.poll(() => attribute(page.locator('.connection'), 'data-state'), eventually).toBe('live');
      await expect.poll(() => count(page.locator('.msg.step.status-done')), eventually).toBe(1);
      expect(await answerText()).toBe(chunks.join(''));
      await expect.poll(() => count(page.locator('.msg.input.user')), eventually).toBe(1);
    } finally {
      await restartable.close();
    }
  });
});
