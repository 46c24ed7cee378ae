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
          <Field label="Search number" name="search" type="search" />
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
              if (await adding.run(() => api.addDnc(number))) {
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
          </form>
        )}
      </div>
      <Problem error={entries.error ?? removing.error} />
      <section class="card" aria-label="Numbers">
        <Table label="Do-not-call numbers">
          <thead>
            <tr>
              <th scope="col">Number</th>
              <th scope="col">Source</th>
              <th scope="col">Added</th>
              {canWrite && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {entries.data?.items.map((entry) => (
              <tr key={entry.phone}>
                <th scope="row">{entry.phone}</th>
                <td>{entry.source}</td>
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
