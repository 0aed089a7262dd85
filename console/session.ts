/**
 * The API key, for this tab only. It lives in sessionStorage (this origin, this tab; gone when the tab closes) and
 * travels as `Authorization: Bearer`, never in a cookie: another site cannot make the browser send it, and no other
 * origin can read it. docs/console.md ("Auth") has the reasoning.
 */
const STORAGE_KEY = 'threadline.console.apiKey';

export function storedApiKey(): string | undefined {
  try {
    return sessionStorage.getItem(STORAGE_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function storeApiKey(key: string): void {
  try {
    sessionStorage.setItem(STORAGE_KEY, key);
  } catch {
    // Storage refused (a private window's quota): the key lasts until the page is reloaded.
  }
}

export function forgetApiKey(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Nothing stored.
  }
}
