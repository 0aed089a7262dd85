/**
 * A thread's or step's status as a small labelled badge (its text is the status, so colour is never the only cue).
 */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status.replace(/[^a-z-]/gi, '').toLowerCase()}`}>{status}</span>;
}
