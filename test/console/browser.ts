/**
 * The system Chromium, driven by playwright-core. Browser downloads are not possible here (and not wanted in CI), so
 * the tests use Debian's `chromium` package (`.ci/run` installs it): `CHROMIUM_PATH` names another binary.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

const CANDIDATES = [
  // The binary itself: Debian's /usr/bin/chromium is a shell launcher around it.
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
];

export function chromiumPath(): string {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH is ${configured}, which does not exist.`);
    return configured;
  }
  const found = CANDIDATES.find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      'No Chromium found for the console tests. Install it (`apt-get install -y chromium`; .ci/run does) or set ' +
        'CHROMIUM_PATH to a Chromium or Chrome binary.',
    );
  }
  return found;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // CI runs as root, where Chromium's sandbox cannot start; /dev/shm is small in containers.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** Collects what the page logs and throws, so a failing test shows the browser's side too. */
export function watchPage(page: Page): string[] {
  const lines: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning')
      lines.push(`console.${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (err) => lines.push(`page error: ${err.message}`));
  return lines;
}
