import type { ComponentChildren, InputHTMLAttributes, SelectHTMLAttributes } from "preact";
import { useCallback, useEffect, useId, useLayoutEffect, useRef, useState } from "preact/hooks";
import { ApiError, type FieldError } from "./api.ts";
import { failureOf, focusField, formFailures, isNamedControl } from "./field-checks.ts";
import { fieldLabel } from "./format.ts";

/** A labelled input with the API's message for its field beside it. */
export function Field(
  props: {
    label: string;
    error?: string | undefined;
    hint?: ComponentChildren;
  } & InputHTMLAttributes<HTMLInputElement>,
) {
  const { label, error, hint, ...input } = props;
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
        {...input}
      />
      {hint && !error && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {error && (
        <small id={`${id}-error`} class="field-error">
          {error}
        </small>
      )}
    </div>
  );
}

export function Select(
  props: {
    label: string;
    options: readonly (string | { value: string; label: string; disabled?: boolean })[];
    error?: string | undefined;
    hint?: ComponentChildren;
    /** A hint that warns: drawn to stand out, and read with the field. */
    warning?: boolean;
    empty?: string;
  } & SelectHTMLAttributes<HTMLSelectElement>,
) {
  const { label, options, error, hint, warning, empty, defaultValue, ...select } = props;
  const id = useId();
  // An uncontrolled select takes its first value from its options, rendered after it.
  const chosen = (value: string) =>
    defaultValue !== undefined ? value === defaultValue : undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select
        id={id}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
        {...select}
      >
        {empty !== undefined && <option value="">{empty}</option>}
        {options.map((option) =>
          typeof option === "string" ? (
            <option key={option} value={option} selected={chosen(option)}>
              {option.replaceAll("_", " ")}
            </option>
          ) : (
            <option
              key={option.value}
              value={option.value}
              selected={chosen(option.value)}
              disabled={option.disabled}
            >
              {option.label}
            </option>
          ),
        )}
      </select>
      {hint && !error && (
        <small id={`${id}-hint`} class={warning ? "hint warning" : "hint"}>
          {hint}
        </small>
      )}
      {error && (
        <small id={`${id}-error`} class="field-error">
          {error}
        </small>
      )}
    </div>
  );
}

/**
 * An error the page shows: the API's own message, or each field's (also shown beside the
 * field where the form has one).
 */
export function Problem({ error }: { error: unknown }) {
  if (!error) return null;
  const fields = error instanceof ApiError ? error.fieldErrors : [];
  const message =
    fields.length > 0
      ? fields.map((failure) => `${fieldLabel(failure.field)} ${failure.message}`).join("; ")
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <p class="problem" role="alert">
      {message}
    </p>
  );
}

/** A table that scrolls sideways on a narrow screen, reachable by the keyboard. */
export function Table({
  label,
  children,
  stacked,
}: {
  label: string;
  children: ComponentChildren;
  /**
   * On a phone, each row becomes a card of labelled values: a cell without its own
   * `data-label` takes its column's heading.
   */
  stacked?: boolean;
}) {
  const table = useRef<HTMLTableElement>(null);
  // Every render: rows come and go with the data the parent passes.
  useLayoutEffect(() => {
    if (stacked && table.current) labelCells(table.current);
  });
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus to scroll by keyboard
    <section class={stacked ? "table-wrap stacked" : "table-wrap"} tabIndex={0} aria-label={label}>
      <table ref={table}>{children}</table>
    </section>
  );
}

/** Gives each body cell without a `data-label` the heading of its column. */
function labelCells(table: HTMLTableElement) {
  const headings = [...(table.tHead?.rows[0]?.cells ?? [])].flatMap((cell) =>
    Array<string>(cell.colSpan).fill(cell.textContent?.trim() ?? ""),
  );
  for (const body of table.tBodies) {
    for (const row of body.rows) {
      let column = 0;
      for (const cell of row.cells) {
        const heading = headings[column];
        if (cell.tagName === "TD" && heading && !cell.hasAttribute("data-label"))
          cell.setAttribute("data-label", heading);
        column += cell.colSpan;
      }
    }
  }
}

export function Pager({
  total,
  limit,
  offset,
  onPage,
}: {
  total: number;
  limit: number;
  offset: number;
  onPage: (offset: number) => void;
}) {
  const last = Math.min(offset + limit, total);
  return (
    <nav class="pager" aria-label="Pages">
      <button
        type="button"
        disabled={offset === 0}
        onClick={() => onPage(Math.max(0, offset - limit))}
      >
        Previous
      </button>
      <span>
        {total ? offset + 1 : 0}–{last} of {total}
      </span>
      <button type="button" disabled={last >= total} onClick={() => onPage(offset + limit)}>
        Next
      </button>
    </nav>
  );
}

/** Loads data for a view and reloads it on demand; errors are kept to be shown. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const reload = useCallback(() => {
    load().then(
      (value) => {
        setData(value);
        setError(undefined);
      },
      (failure) => setError(failure),
    );
  }, deps);
  useEffect(reload, [reload]);
  return { data, error, reload, setData };
}

/** `useLoad`, read again every `everyMs` while the view is shown. */
export function usePolled<T>(load: () => Promise<T>, deps: unknown[], everyMs: number) {
  const loaded = useLoad(load, deps);
  useEffect(() => {
    const timer = setInterval(loaded.reload, everyMs);
    return () => clearInterval(timer);
  }, [loaded.reload, everyMs]);
  return loaded;
}

/** A form held back in the browser: what the API would have said, field by field. */
export const refused = (failures: FieldError[]) =>
  new ApiError("some fields need changing", 422, "validation_failed", failures);

/**
 * Runs a form's action, keeping its error (with field messages) and a busy flag. `submit`
 * checks every field first and shows all that fail at once; `checks` (spread on the
 * form) takes a message away once its field is put right, and adds one when a
 * field is left with a value the API would refuse.
 */
export function useAction() {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (failure) {
      setError(failure);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  const field = (name: string) => (error instanceof ApiError ? error.field(name) : undefined);
  const submit = async <T,>(
    form: HTMLFormElement,
    action: () => Promise<T>,
    rules: (FieldError | undefined)[] = [],
  ): Promise<T | undefined> => {
    const failures = [
      ...formFailures(form),
      ...rules.filter((rule): rule is FieldError => rule !== undefined),
    ];
    const first = failures[0];
    if (!first) return run(action);
    setError(refused(failures));
    focusField(form, first.field);
    return undefined;
  };
  const recheck = (event: Event) => {
    const control = event.target;
    if (!isNamedControl(control)) return;
    const message = failureOf(control);
    const shown = field(control.name) !== undefined;
    // Typing only takes a message away: one that appeared mid-word would move the page.
    if (message ? event.type !== "focusout" : !shown) return;
    const others =
      error instanceof ApiError
        ? error.fieldErrors.filter((failure) => failure.field !== control.name)
        : [];
    const failures = message ? [...others, { field: control.name, message }] : others;
    setError(failures.length > 0 ? refused(failures) : undefined);
  };
  /** Spread on the form: its fields are checked as they change and as they are left. */
  const checks = { onInput: recheck, onFocusOut: recheck };
  return { error, busy, run, field, submit, checks };
}

/**
 * Keeps the keyboard's place after an action disabled the button pressed (a campaign's
 * Start, an agent's Pause): once the page has drawn its result, the first button of `group`
 * still enabled takes the focus, if the focus was lost to the page.
 */
export function refocusWithin(group: Element | null): void {
  requestAnimationFrame(() => {
    const lost = document.activeElement === null || document.activeElement === document.body;
    if (lost) group?.querySelector<HTMLButtonElement>("button:not(:disabled)")?.focus();
  });
}

/** A secret the API shows once, with a button that copies it. */
export function ShownOnce({ label, secret }: { label: string; secret: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <section class="shown-once" aria-label={label}>
      <p>
        <strong>{label}</strong> — shown this once; store it now.
      </p>
      <code data-secret>{secret}</code>
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(secret);
            setCopied(true);
          } catch {
            setCopied(false);
          }
        }}
      >
        Copy
      </button>
      <span role="status">{copied ? "Copied" : ""}</span>
    </section>
  );
}

export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Dialer console`;
  }, [title]);
  return (
    <>
      <h1>{title}</h1>
      {children}
    </>
  );
}
