/**
 * Asks for an API key when the gateway has keys configured, and checks it before using it.
 */
import { useState } from 'preact/hooks';
import { ConsoleApi, describeError } from '../api';
import { ErrorText } from '../components/controls';

export function KeyPage({ refused, onKey }: { refused: string | null; onKey: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(refused);
  const [checking, setChecking] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const value = key.trim();
    if (!value) return setError('Enter the API key.');
    setChecking(true);
    setError(null);
    let unauthorized = false;
    try {
      await new ConsoleApi(location.origin, value, () => (unauthorized = true)).listThreads({ pageSize: 1 });
      onKey(value);
    } catch (err) {
      setError(unauthorized ? 'The gateway does not know this key (401).' : describeError(err));
    } finally {
      setChecking(false);
    }
  };

  return (
    <section class="page narrow">
      <h1>API key</h1>
      <p>
        This gateway checks API keys. Enter yours: the console shows the threads of the resources it is bound to. The
        key stays in this browser tab only (session storage of this origin) and is sent as an <code>Authorization</code>{' '}
        header; it is forgotten when the tab closes.
      </p>
      <form class="stack" onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          aria-describedby={error ? 'api-key-error' : undefined}
          autoFocus
        />
        <ErrorText id="api-key-error" error={error} />
        <div>
          <button type="submit" class="primary" disabled={checking}>
            {checking ? 'Checking…' : 'Use this key'}
          </button>
        </div>
      </form>
    </section>
  );
}
