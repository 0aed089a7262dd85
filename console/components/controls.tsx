/**
 * Small pieces every form of the console uses.
 */

/** An error for the user, announced to screen readers; nothing when there is none. */
export function ErrorText({ error, id }: { error: string | null | undefined; id?: string }) {
  return error ? (
    <p id={id} class="error" role="alert">
      {error}
    </p>
  ) : null;
}

/**
 * The `<option>`s of a select whose values are shown as they are: a first blank option when `blank` names it, and
 * `current` kept when the list does not have it (a value from the URL, an agent no worker announces any more).
 */
export function Options({ values, blank, current }: { values: readonly string[]; blank?: string; current?: string }) {
  const all = current && !values.includes(current) ? [...values, current] : values;
  return (
    <>
      {blank !== undefined ? <option value="">{blank}</option> : null}
      {all.map((value) => (
        <option key={value} value={value}>
          {value}
        </option>
      ))}
    </>
  );
}
