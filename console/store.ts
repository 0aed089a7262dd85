/**
 * The smallest observable the console needs: a value and its listeners. Components read one with `useStore`, so a
 * change re-renders only what shows it (a streaming answer re-renders its own message, not the conversation).
 */
import { useEffect, useState } from 'preact/hooks';

export class Store<T> {
  private readonly listeners = new Set<() => void>();

  constructor(private value: T) {}

  get(): T {
    return this.value;
  }

  set(value: T): void {
    if (Object.is(value, this.value)) return;
    this.value = value;
    this.emit();
  }

  update(change: (value: T) => T): void {
    this.set(change(this.value));
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells the listeners that the value changed in place. */
  emit(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** The store's value; the component re-renders when it changes. */
export function useStore<T>(store: Store<T>): T {
  const [, setTick] = useState(0);
  useEffect(() => store.subscribe(() => setTick((n) => n + 1)), [store]);
  return store.get();
}

/**
 * Changes signalled at most once per animation frame: thousands of tokens a second become one re-render per frame.
 * `touch(listener)` schedules `listener` for the next frame (once, however often it is touched).
 */
class FrameBatch {
  private readonly due = new Set<() => void>();
  private scheduled = false;

  touch(listener: () => void): void {
    this.due.add(listener);
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      const listeners = [...this.due];
      this.due.clear();
      for (const l of listeners) l();
    };
    if (typeof document !== 'undefined' && document.visibilityState === 'visible') {
      requestAnimationFrame(run);
    } else {
      setTimeout(run, 50);
    }
  }
}

export const frameBatch = new FrameBatch();
