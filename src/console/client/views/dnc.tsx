import { useState } from "preact/hooks";
import { may } from "../access.ts";
import { api } from "../api.ts";
import { dateTime } from "../format.ts";
import { Field, Page, Pager, Problem, Table, useAction, useLoad } from "../ui.tsx";

export function DoNotCall() {
  const [phone, setPhone] = useState("");
  const [offset, setOffset] = useState(0);
  const entries = useLoad(
    () => api.dnc({ phone: phone || undefined, offset, limit: 50 }),
    [phone, offset],
  );
  const adding = useAction();
  const removing = useAction();
  const uploading = useAction();
  const fileProblem = uploading.field("file");
  const [added, setAdded] = useState<string | undefined>();
  const [report, setReport] = useState<Awaited<ReturnType<typeof api.uploadDnc>>["report"]>();
  const canWrite = may("dnc.write");
  return (
    <Page title="Do not call">
      <div class="grid2">
        <form
          class="inline card"
          aria-label="Search the list"
          onSubmit={(event) => {
            event.preventDefault();
            setOffset(0);
            setPhone(
              String(new FormData(event.target as HTMLFormElement).get("search") ?? "").trim(),
            );
          }}
        >
          <Field
            label="Search number"
            name="search"
            type="search"
            hint="the numbers starting with these digits, e.g. +1415"
          />
          <button type="submit">Search</button>
        </form>
        {canWrite && (
          <form
            class="inline card"
            noValidate
            aria-label="Add a number"
            onSubmit={async (event) => {
              event.preventDefault();
              const form = event.target as HTMLFormElement;
              const number = String(new FormData(form).get("phone") ?? "");
              const done = await adding.run(() => api.addDnc(number));
              if (done) {
                setAdded(
                  done.already_listed
                    ? `${done.dnc_entry.phone} was on the list already (since ${dateTime(done.dnc_entry.created_at)}).`
                    : `${done.dnc_entry.phone} added.`,
                );
                form.reset();
                entries.reload();
              }
            }}
          >
            <Field
              label="Number to add"
              name="phone"
              type="tel"
              hint="with its +country code"
              error={adding.field("phone")}
            />
            <button type="submit" class="primary" disabled={adding.busy}>
              Add
            </button>
            <Problem error={adding.field("phone") ? undefined : adding.error} />
            {added && <p role="status">{added}</p>}
          </form>
        )}
      </div>
      {canWrite && (
        <form
          class="inline card"
          aria-label="Upload a list"
          onSubmit={async (event) => {
            event.preventDefault();
            const form = event.target as HTMLFormElement;
            const file = (form.elements.namedItem("file") as HTMLInputElement).files?.[0];
            // Without a file, the form says so next to its field.
            const done = await uploading.submit(form, () => api.uploadDnc(file as File));
            if (done) {
              setReport(done.report);
              form.reset();
              entries.reload();
            }
          }}
        >
          <div class="field">
            <label for="dnc-file">Upload numbers (CSV)</label>
            <input
              id="dnc-file"
              name="file"
              type="file"
              accept=".csv,text/csv"
              required
              aria-invalid={fileProblem ? true : undefined}
              aria-describedby={fileProblem ? "dnc-file-error" : "dnc-file-hint"}
            />
            {fileProblem ? (
              <small id="dnc-file-error" class="field-error">
                {fileProblem}
              </small>
            ) : (
              <small id="dnc-file-hint" class="hint">
                a column named phone, or numbers in the first column
              </small>
            )}
          </div>
          <button type="submit" disabled={uploading.busy}>
            Upload
          </button>
          <Problem error={uploading.error} />
          {report && (
            <div role="status">
              <p>
                {report.rows} rows: {report.added} added, {report.already_listed} already listed,{" "}
                {report.rejected} refused.
              </p>
              {report.rejections.length > 0 && (
                <ul>
                  {report.rejections.map((rejection) => (
                    <li key={rejection.row}>
                      Row {rejection.row}: {rejection.value || "(empty)"} —{" "}
                      {rejection.reason.replace("_", " ")}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
        </form>
      )}
      <Problem error={entries.error ?? removing.error} />
      <section class="card" aria-label="Numbers">
        <Table label="Do-not-call numbers" stacked>
          <thead>
            <tr>
              <th scope="col">Number</th>
              <th scope="col">Source</th>
              <th scope="col">Added by</th>
              <th scope="col">Added</th>
              {canWrite && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {entries.data?.items.map((entry) => (
              <tr key={entry.phone}>
                <th scope="row">{entry.phone}</th>
                <td>{entry.source}</td>
                <td>{entry.added_by ?? "—"}</td>
                <td>{dateTime(entry.created_at)}</td>
                {canWrite && (
                  <td>
                    <button
                      type="button"
                      aria-label={`Remove ${entry.phone}`}
                      onClick={async () => {
                        if (await removing.run(() => api.removeDnc(entry.phone))) entries.reload();
                      }}
                    >
                      Remove
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </Table>
        {entries.data && (
          <Pager
            total={entries.data.total}
            limit={entries.data.limit}
            offset={entries.data.offset}
            onPage={setOffset}
          />
        )}
      </section>
    </Page>
  );
}
