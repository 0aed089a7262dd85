/**
 * The console's routes, in the browser's history under `/console` (the gateway serves the page for every path below
 * it): `/console` lists threads, `/console/threads/:resourceId/:threadId` shows one (`?tab=` picks its panel,
 * `&step=` opens a step's prompt).
 */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

export type Route =
  | { page: 'threads'; params: URLSearchParams }
  | { page: 'thread'; resourceId: string; threadId: string; params: URLSearchParams }
  | { page: 'not-found'; path: string };

export function parseRoute(pathname: string, search: string): Route {
  const params = new URLSearchParams(search);
  const path = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  if (path === '' || path === '/') return { page: 'threads', params };
  const match = /^\/threads\/([^/]+)\/([^/]+)\/?$/.exec(path);
  if (match) {
    try {
      return {
        page: 'thread',
        resourceId: decodeURIComponent(match[1]),
        threadId: decodeURIComponent(match[2]),
        params,
      };
    } catch {
      // A malformed escape: not a thread path.
    }
  }
  return { page: 'not-found', path: pathname };
}

export function threadHref(target: { resourceId: string; threadId: string }, params?: Record<string, string>): string {
  const query = params ? `?${new URLSearchParams(params).toString()}` : '';
  return `${BASE}/threads/${encodeURIComponent(target.resourceId)}/${encodeURIComponent(target.threadId)}${query}`;
}

const listeners = new Set<() => void>();

export function navigate(href: string, options: { replace?: boolean } = {}): void {
  if (href === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  for (const listener of [...listeners]) listener();
}

/** The current route; re-renders on navigation (links, back and forward). */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname, location.search));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname, location.search));
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/**
 * Follows a same-origin link inside the console without reloading the page; modified clicks (new tab, download)
 * and other targets go to the browser.
 */
export function onLinkClick(event: MouseEvent): void {
  if (
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  ) {
    return;
  }
  const anchor = (event.target as Element | null)?.closest?.('a');
  if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
  const url = new URL(anchor.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}
