/**
 * `npx tsx test/console/measure.ts`: how the console holds up with a large thread, in the system Chromium. Builds a
 * thread of 2,000 stored messages (the default maxStoredMessages), opens it, scrolls up through all of it, then streams
 * a 10,000-token answer at its bottom while typing into the composer; prints JSON (open time, long tasks, frame gaps,
 * key-to-frame latency, and whether every character arrived once). Figures in docs/console.md ("Quality").
 */
import { launchBrowser } from './browser';
import { startConsoleStack } from './stack';

const stack = await startConsoleStack({
  defaultReply: () => ({ text: 'A short answer from the assistant, with a few words in it.' }),
});
const browser = await launchBrowser();
const out: Record<string, unknown> = {};
try {
  const a = stack.client.agent('assistant');
  const t = { resourceId: 'perf', threadId: 'two-thousand' };
  let t0 = Date.now();
  for (let i = 0; i < 10; i++) {
    await a.sendMessage(`Question ${i}: what about item ${i}?`, t);
    for (;;) {
      const v = await stack.client.getThread(t);
      if (v?.status === 'idle') break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < 1980; i++) {
    sends.push(
      a.sendMessage(
        `Note ${i}: the customer mentioned detail number ${i} about the order, the delivery and the invoice.`,
        { ...t, ifIdle: { behavior: 'persist' } },
      ),
    );
  }
  await Promise.all(sends);
  const view = await stack.client.getThread(t);
  out.messages = view?.messageCount;
  out.buildSeconds = (Date.now() - t0) / 1000;

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.addInitScript(() => {
    const w = window as unknown as { __long: number[] };
    w.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  t0 = Date.now();
  await page.goto(`${stack.gateway.url}/console/threads/perf/two-thousand?agent=assistant`);
  await page.locator('.connection[data-state="live"]').waitFor();
  await page.locator('.msg').first().waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.msg').length >= 80);
  out.openMs = Date.now() - t0;
  out.renderedAtOpen = await page.locator('.msg').count();
  t0 = Date.now();
  for (let i = 0; i < 100; i++) {
    const before = await page.locator('.msg').count();
    if (before >= 2000) break;
    await page.evaluate(() => {
      const el = document.querySelector('.conversation')!;
      el.scrollTop = 0;
      el.dispatchEvent(new Event('scroll'));
    });
    await page
      .waitForFunction(
        (n) => document.querySelectorAll('.msg').length > n || !document.querySelector('.earlier'),
        before,
        { timeout: 10_000 },
      )
      .catch(() => undefined);
  }
  out.scrollAllMs = Date.now() - t0;
  out.renderedAfterScroll = await page.locator('.msg').count();
  out.longTasksOpenAndScroll = await page.evaluate(() => {
    const l = (window as unknown as { __long: number[] }).__long;
    return { count: l.length, maxMs: Math.round(Math.max(0, ...l)) };
  });
  await page.evaluate(() => {
    (window as unknown as { __long: number[] }).__long.length = 0;
    const el = document.querySelector('.conversation')!;
    el.scrollTop = el.scrollHeight;
  });

  // A 10,000-token answer, streamed as fast as the model server sends it, at the bottom of the 2,000-message thread.
  const tokens = Array.from({ length: 10_000 }, (_, i) => `tok${i} `);
  stack.model.enqueue({ text: tokens, chunkDelayMs: 0 });
  await page.evaluate(`(() => {
    window.__frames = []; window.__lat = [];
    const tick = (ts) => { window.__frames.push(ts); requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    document.addEventListener('keydown', () => { const at = performance.now(); requestAnimationFrame(() => setTimeout(() => window.__lat.push(performance.now() - at), 0)); }, true);
  })()`);
  await page.locator('#composer-text').fill('Now write the long report please');
  t0 = Date.now();
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.waitForFunction(
    () => (document.querySelector('.msg.step.status-streaming .answer')?.textContent ?? '').length > 1000,
    undefined,
    { timeout: 60_000 },
  );
  await page.locator('#composer-text').focus();
  await page.keyboard.type('typing while it streams', { delay: 30 });
  await page.waitForFunction(() => document.querySelectorAll('.msg.step.status-streaming').length === 0, undefined, {
    timeout: 180_000,
  });
  out.stream10kMs = Date.now() - t0;
  out.answerChars = await page.evaluate(() => {
    const s = document.querySelectorAll('.msg.step .answer');
    return s[s.length - 1]?.textContent?.length;
  });
  out.expectedChars = tokens.join('').length;
  out.duringStream = await page.evaluate(() => {
    const w = window as unknown as { __frames: number[]; __lat: number[]; __long: number[] };
    const gaps = w.__frames.slice(1).map((f, i) => f - w.__frames[i]);
    const sorted = [...gaps].sort((x, y) => x - y);
    const lat = [...w.__lat].sort((x, y) => x - y);
    return {
      frames: w.__frames.length,
      frameGapP50: Math.round(sorted[Math.floor(sorted.length * 0.5)]),
      frameGapP99: Math.round(sorted[Math.floor(sorted.length * 0.99)]),
      frameGapMax: Math.round(sorted.at(-1) ?? 0),
      longTasks: w.__long.length,
      longTaskMaxMs: Math.round(Math.max(0, ...w.__long)),
      keyLatencyP50: Math.round(lat[Math.floor(lat.length * 0.5)]),
      keyLatencyMax: Math.round(lat.at(-1) ?? 0),
      keys: lat.length,
    };
  });
  out.composerValue = await page.locator('#composer-text').inputValue();
} finally {
  console.log(JSON.stringify(out, null, 2));
  await browser.close();
  await stack.close();
}
