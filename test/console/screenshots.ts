/**
 * `npm run console:screenshots`: the screenshots in docs/console.md, taken from the current build. Starts the whole
 * stack in this process (a Temporal dev server in memory, the scripted model, a worker, the gateway), gives a few
 * threads something to show (a conversation, state lanes, notifications, a parked tool call, an answer streaming),
 * and photographs each screen with the system Chromium into docs/console/*.png.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { ThreadTarget } from '../../protocol/schemas';
import { launchBrowser } from './browser';
import { startConsoleStack, type ConsoleStack } from './stack';

const out = join(import.meta.dirname, '../../docs/console');
const enc = encodeURIComponent;
const wide = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function idle(stack: ConsoleStack, t: ThreadTarget): Promise<void> {
  await until(`${t.threadId} to be idle`, async () => (await stack.client.getThread(t))?.status === 'idle');
}

async function populate(stack: ConsoleStack) {
  const { client, model } = stack;
  const assistant = client.agent('assistant');
  const trip = { resourceId: 'user-42', threadId: 'trip-planning' };
  const turns: [string, string][] = [
    [
      'I fly to Lisbon on May 3 and back on May 9. Can you plan the first day?',
      'Welcome to Lisbon! For May 3: land, drop your bags in Baixa, an early dinner in Alfama, then the sunset at Miradouro da Senhora do Monte.',
    ],
    [
      'I prefer museums to viewpoints.',
      'Then swap the viewpoint for the Museu Nacional do Azulejo (open until 18:00) and keep the dinner in Alfama.',
    ],
  ];
  for (const [question, answer] of turns) {
    model.enqueue({ text: answer, chunkDelayMs: 5 });
    await assistant.sendMessage(question, trip);
    await idle(stack, trip);
  }
  const persist = { ...trip, ifIdle: { behavior: 'persist' as const } };
  await assistant.sendStateSignal(
    {
      id: 'calendar',
      cacheKey: 'cal:1',
      contents: 'Calendar: flight TP 1351 lands 10:40 on May 3.',
      value: { flight: 'TP 1351', lands: '10:40' },
    },
    persist,
  );
  await assistant.sendStateSignal(
    {
      id: 'calendar',
      cacheKey: 'cal:2',
      contents: 'Calendar: flight TP 1351 delayed, lands 12:15 on May 3.',
      value: { flight: 'TP 1351', lands: '12:15', delayed: true },
    },
    persist,
  );
  await assistant.sendStateSignal(
    {
      id: 'browser',
      cacheKey: 'tab:azulejo',
      contents: 'Browser: open tab museudoazulejo.gov.pt, opening hours page.',
      value: { url: 'https://museudoazulejo.gov.pt', tabs: 2 },
    },
    persist,
  );
  await assistant.sendNotificationSignal(
    [
      { source: 'airline', kind: 'delay', priority: 'low', summary: 'TP 1351 delayed by 95 minutes.' },
      { source: 'calendar', kind: 'reminder', priority: 'low', summary: 'Check-in opens 24 h before departure.' },
      {
        source: 'email',
        kind: 'booking',
        priority: 'low',
        summary: 'Hotel booking confirmed: 6 nights in Baixa.',
        payload: { nights: 6 },
      },
    ],
    trip,
  );
  await idle(stack, trip);

  const repo = { resourceId: 'user-42', threadId: 'repo-cleanup' };
  model.enqueue({
    text: 'I will delete the archived repository.',
    toolCalls: [{ id: 'call-del-1', name: 'deleteRepo', args: { repo: 'acme/legacy-site' } }],
  });
  await client.agent('admin').sendMessage('Delete acme/legacy-site, it has been archived for a year.', repo);
  await until('the approval', async () => (await client.getThread(repo))?.activeRun?.status === 'awaiting-approval');

  const support = { resourceId: 'acme', threadId: 'support-1183' };
  const long =
    'Thanks for the details. The export fails because the report has more than 10,000 rows and the CSV writer times out after 30 seconds. ' +
    'Two options: split the export by month, which finishes in about 4 seconds per month, or schedule it overnight, ' +
    'when the limit is 10 minutes. I would start with the monthly split, since you need the numbers today. ';
  model.enqueue({ text: long, chunkDelayMs: 60, hang: true });
  await assistant.sendMessage('Our CSV export of the Q1 report fails every time. What can we do?', support);

  const standup = { resourceId: 'acme', threadId: 'standup' };
  model.enqueue({ text: 'Noted: the deploy moves to Thursday.', chunkDelayMs: 5 });
  await assistant.sendMessage('Note for the standup: the deploy moves to Thursday.', standup);
  await idle(stack, standup);
  await assistant.sendNotificationSignal(
    { source: 'github', kind: 'ci-status', priority: 'low', summary: 'CI failed on main: 3 tests failed.' },
    standup,
  );
  return { trip, repo, support, standup };
}

async function shot(page: Page, name: string): Promise<void> {
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: join(out, `${name}.png`) });
  console.log(`docs/console/${name}.png`);
}

async function live(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.locator('.connection[data-state="live"]').waitFor();
}

async function main(): Promise<void> {
  await mkdir(out, { recursive: true });
  const stack = await startConsoleStack({ defaultReply: () => ({ text: 'Noted.' }) });
  const browser = await launchBrowser();
  try {
    const threads = await populate(stack);
    const base = stack.gateway.url;
    const url = (t: ThreadTarget, query = '') =>
      `${base}/console/threads/${enc(t.resourceId)}/${enc(t.threadId)}${query}`;
    const page = await browser.newPage({ viewport: wide, colorScheme: 'light' });

    await page.goto(`${base}/console`);
    await until('the list', async () => (await page.locator('table.threads tbody tr').count()) >= 4);
    await until('the statuses', async () =>
      (await page.locator('td[data-label="Status"]').allTextContents()).every((s) => s !== 'new'),
    );
    await shot(page, 'threads');

    await live(page, url(threads.trip, '?agent=assistant'));
    await page.locator('.msg.step').first().waitFor();
    await shot(page, 'thread');

    await live(page, url(threads.support, '?agent=assistant'));
    await page.waitForFunction(() => (document.querySelector('.msg.step .answer')?.textContent ?? '').length > 120);
    await shot(page, 'streaming');

    await live(page, url(threads.repo, '?agent=admin'));
    await page.locator('.approval').waitFor();
    await shot(page, 'approval');

    await live(page, url(threads.trip, '?agent=assistant&tab=state'));
    await page.locator('[data-lane]').first().waitFor();
    await shot(page, 'state');

    await live(page, url(threads.trip, '?agent=assistant&tab=inbox'));
    await page.locator('[data-notification]').first().waitFor();
    await shot(page, 'inbox');

    await live(page, url(threads.trip, '?agent=assistant&tab=steps'));
    // The first inspection of a step has a worker bundle the workflow code: give it a minute.
    await page.getByRole('button', { name: 'What the model saw' }).first().click();
    await page.locator('.prompt').waitFor({ timeout: 60_000 });
    await shot(page, 'steps');

    const keyed = await stack.keyedGateway({ 'key-user-42': ['user-42'] });
    await page.goto(`${keyed.url}/console`);
    await page.getByLabel('API key').waitFor();
    await shot(page, 'api-key');

    const mobile = await browser.newPage({ viewport: phone, colorScheme: 'light', deviceScaleFactor: 2 });
    await live(mobile, url(threads.trip, '?agent=assistant'));
    await mobile.locator('.msg.step').first().waitFor();
    await shot(mobile, 'phone-thread');
    await mobile.goto(`${base}/console`);
    await until('the list', async () => (await mobile.locator('table.threads tbody tr').count()) >= 4);
    await shot(mobile, 'phone-threads');
  } finally {
    await browser.close();
    await stack.close();
  }
}

await main();
