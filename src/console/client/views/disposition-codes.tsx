import { useId, useState } from "preact/hooks";
import type { Campaign } from "../api.ts";
import { facts } from "../facts.ts";
import { label } from "../format.ts";

type DispositionCode = Campaign["disposition_codes"][number];

const OUTCOME_LABELS: Record<string, string> = {
  done: "Done: not called again",
  retry: "Retry later",
  callback: "Callback at a time",
  do_not_call: "Do not call",
};

/**
 * A campaign's disposition codes as rows to edit: what agents pick at the end of a call,
 * with its key and what it does to the lead. The form reads them from a hidden field.
 */
export function DispositionCodesEditor({
  initial,
  disabled,
  error,
}: {
  initial: readonly DispositionCode[];
  disabled: boolean;
  /** The API's message about a code, with the row and column it names. */
  error: { field: string; message: string } | undefined;
}) {
  const [codes, setCodes] = useState<DispositionCode[]>(() => initial.map((code) => ({ ...code })));
  const id = useId();
  const change = (index: number, patch: Partial<DispositionCode>) =>
    setCodes(codes.map((code, at) => (at === index ? { ...code, ...patch } : code)));
  const row = error && /^disposition_codes\.(\d+)/.exec(error.field)?.[1];
  return (
    <fieldset class="codes plain" aria-describedby={`${id}-hint`}>
      <legend>Disposition codes</legend>
      <small id={`${id}-hint`} class="hint">
        What agents pick at the end of a call; the key works in wrap-up (not r, p or a).
      </small>
      <input type="hidden" name="disposition_codes" value={JSON.stringify(codes)} />
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus to scroll by keyboard */}
      <section class="table-wrap" tabIndex={0} aria-label="Disposition codes">
        <table>
          <thead>
            <tr>
              <th scope="col">Code</th>
              <th scope="col">Label</th>
              <th scope="col">Key</th>
              <th scope="col">What it does to the lead</th>
              <th scope="col">
                <span class="sr-only">Remove</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {codes.map((code, index) => (
              <tr key={index} aria-invalid={row === String(index) ? "true" : undefined}>
                <td>
                  <input
                    aria-label={`Code ${index + 1}`}
                    value={code.code}
                    disabled={disabled}
                    onInput={(event) =>
                      change(index, { code: (event.target as HTMLInputElement).value })
                    }
                  />
                </td>
                <td>
                  <input
                    aria-label={`Label of code ${index + 1}`}
                    value={code.label}
                    disabled={disabled}
                    onInput={(event) =>
                      change(index, { label: (event.target as HTMLInputElement).value })
                    }
                  />
                </td>
                <td>
                  <input
                    aria-label={`Key of code ${index + 1}`}
                    class="key"
                    maxLength={1}
                    value={code.hotkey ?? ""}
                    disabled={disabled}
                    onInput={(event) => {
                      const key = (event.target as HTMLInputElement).value.toLowerCase();
                      change(index, { hotkey: key === "" ? null : key });
                    }}
                  />
                </td>
                <td>
                  <select
                    aria-label={`What code ${index + 1} does to the lead`}
                    value={code.outcome}
                    disabled={disabled}
                    onChange={(event) =>
                      change(index, {
                        outcome: (event.target as HTMLSelectElement)
                          .value as DispositionCode["outcome"],
                      })
                    }
                  >
                    {facts.dispositionOutcomes.map((outcome) => (
                      <option key={outcome} value={outcome}>
                        {OUTCOME_LABELS[outcome] ?? label(outcome)}
                      </option>
                    ))}
                  </select>
                </td>
                <td>
                  <button
                    type="button"
                    disabled={disabled || codes.length === 1}
                    onClick={() => setCodes(codes.filter((_, at) => at !== index))}
                  >
                    Remove<span class="sr-only"> code {index + 1}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {!disabled && (
        <button
          type="button"
          onClick={() =>
            setCodes([...codes, { code: "", label: "", hotkey: null, outcome: "done" }])
          }
        >
          Add a code
        </button>
      )}
      {error && <small class="field-error">{error.message}</small>}
    </fieldset>
  );
}
