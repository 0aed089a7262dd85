/**
 * State lanes (behaviour §3): each lane's current state and version, and the history of accepted changes (from the
 * stored messages loaded so far and the live `state-updated` events).
 */
import { useState } from 'preact/hooks';
import type { ThreadView } from '../../protocol/views';
import { oneLine, pretty, time } from '../format';
import { useStore } from '../store';
import type { ThreadSession } from '../thread-session';
import { Options } from './controls';

export function LanesPanel({ session, view }: { session: ThreadSession; view: ThreadView | null | undefined }) {
  const history = useStore(session.laneHistory);
  const [lane, setLane] = useState('');
  const lanes = view?.lanes ?? [];
  const changes = lane ? history.filter((c) => c.laneId === lane) : history;

  return (
    <div class="panel-body">
      <h3>Current state</h3>
      {lanes.length === 0 ? <p class="muted">No state lanes. Producers keep them current with state signals.</p> : null}
      <ul class="list">
        {lanes.map((l) => (
          <li key={l.id} class="card" data-lane={l.id}>
            <p>
              <strong>{l.id}</strong> <span class="badge">v{l.version}</span> <span class="muted">{l.currentMode}</span>{' '}
              <span class="muted small">updated {time(l.updatedAt)}</span>
            </p>
            <p class="small">
              cacheKey <code>{l.currentCacheKey}</code> · {l.activeCopies} cop{l.activeCopies === 1 ? 'y' : 'ies'} in
              the latest window
            </p>
            {l.value !== undefined ? (
              <details>
                <summary>
                  Value <code>{oneLine(l.value, 60)}</code>
                </summary>
                <pre>{pretty(l.value)}</pre>
              </details>
            ) : null}
          </li>
        ))}
      </ul>
      <h3>History of changes</h3>
      <div class="row">
        <label class="inline" for="lane-filter">
          Lane
        </label>
        <select id="lane-filter" value={lane} onChange={(e) => setLane(e.currentTarget.value)}>
          <Options values={[...new Set([...lanes.map((l) => l.id), ...history.map((c) => c.laneId)])]} blank="all" />
        </select>
      </div>
      {changes.length === 0 ? <p class="muted">No changes seen yet.</p> : null}
      <ol class="timeline">
        {changes.map((c) => (
          <li key={c.signalId}>
            <span class="badge">v{c.version}</span> <strong>{c.laneId}</strong> <span class="muted">{c.mode}</span>{' '}
            <time>{time(c.at)}</time>
            <div class="small">
              <code>{c.cacheKey}</code>
              {c.delta !== undefined ? (
                <>
                  {' '}
                  delta <code>{oneLine(c.delta, 80)}</code>
                </>
              ) : c.value !== undefined ? (
                <>
                  {' '}
                  value <code>{oneLine(c.value, 80)}</code>
                </>
              ) : null}
            </div>
          </li>
        ))}
      </ol>
    </div>
  );
}
