/**
 * The console's frame: the API key gate (when the gateway has keys), the header, and the page for the route.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { AgentSummary } from '../protocol/api';
import { ConsoleApi, describeError } from './api';
import type { ConsoleConfig } from './config';
import { AppContext } from './context';
import { KeyPage } from './pages/key-page';
import { ThreadPage } from './pages/thread-page';
import { ThreadsPage } from './pages/threads-page';
import { BASE, onLinkClick, useRoute } from './router';
import { forgetApiKey, storeApiKey, storedApiKey } from './session';

export function App({ config }: { config: ConsoleConfig }) {
  const [apiKey, setApiKey] = useState<string | undefined>(() => (config.authRequired ? storedApiKey() : undefined));
  const [refused, setRefused] = useState<string | null>(null);
  const [agents, setAgents] = useState<AgentSummary[]>([]);
  const route = useRoute();
  const needsKey = config.authRequired && !apiKey;

  const api = useMemo(
    () =>
      new ConsoleApi(location.origin, apiKey, () => {
        forgetApiKey();
        setApiKey(undefined);
        setRefused('The gateway refused the API key (401). Enter a valid key.');
      }),
    [apiKey],
  );

  useEffect(() => {
    if (needsKey) return;
    let live = true;
    api.http
      .listAgents()
      .then((byId) => live && setAgents(Object.values(byId)))
      .catch((err: unknown) => live && console.warn(`Listing agents failed: ${describeError(err)}`));
    return () => {
      live = false;
    };
  }, [api, needsKey]);

  const signOut = () => {
    forgetApiKey();
    setApiKey(undefined);
    setRefused(null);
  };

  return (
    <AppContext.Provider value={{ config, api, agents }}>
      <div class="app" onClick={onLinkClick}>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href={BASE}>
            Threadline <span>console</span>
          </a>
          <nav aria-label="Console">
            <a href={BASE} aria-current={route.page === 'threads' ? 'page' : undefined}>
              Threads
            </a>
          </nav>
          {config.authRequired && apiKey ? (
            <button type="button" class="quiet" onClick={signOut}>
              Forget key
            </button>
          ) : null}
        </header>
        <main id="main" tabIndex={-1}>
          {needsKey ? (
            <KeyPage
              refused={refused}
              onKey={(key) => {
                storeApiKey(key);
                setRefused(null);
                setApiKey(key);
              }}
            />
          ) : route.page === 'threads' ? (
            <ThreadsPage params={route.params} />
          ) : route.page === 'thread' ? (
            <ThreadPage
              key={`${route.resourceId}\u0000${route.threadId}`}
              target={{ resourceId: route.resourceId, threadId: route.threadId }}
              params={route.params}
            />
          ) : (
            <section class="page narrow">
              <h1>Not found</h1>
              <p>
                Nothing lives at <code>{route.path}</code>. <a href={BASE}>Back to the threads</a>.
              </p>
            </section>
          )}
        </main>
      </div>
    </AppContext.Provider>
  );
}
