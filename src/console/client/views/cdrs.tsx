import { useState } from "preact/hooks";
import { may } from "../access.ts";
import { api, type Cdr } from "../api.ts";
import { facts } from "../facts.ts";
import { dateTime, label } from "../format.ts";
import { profileLabel } from "../rules.ts";
import { Field, Page, Pager, Problem, Select, Table, useAction, useLoad } from "../ui.tsx";

interface Filters {
  from?: string;
  to?: string;
  campaign_id?: string;
  outcome?: Cdr["outcome"];
}

/** A `datetime-local` value (the browser's zone) as RFC 3339, or undefined when empty. */
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

export function CallRecords() {
  const [filters, setFilters] = useState<Filters>({});
  const [offset, setOffset] = useState(0);
  const campaigns = useLoad(() => api.campaigns({ limit: 500 }), []);
  const users = useLoad(
    () => (may("users.read") ? api.users({ limit: 500 }) : Promise.resolve(undefined)),
    [],
  );
  const records = useLoad(() => api.cdrs({ ...filters, offset, limit: 50 }), [filters, offset]);
  const exporting = useAction();
  const campaignName = new Map(campaigns.data?.items.map((c) => [c.id, c.name]));
  const email = new Map(users.data?.items.map((u) => [u.id, u.email]));
  return (
    <Page title="Call records">
      <form
        class="inline card"
        noValidate
        aria-label="Filters"
        onSubmit={(event) => {
          event.preventDefault();
          const data = new FormData(event.target as HTMLFormElement);
          const text = (name: string) => String(data.get(name) ?? "") || undefined;
          setOffset(0);
          setFilters({
            from: instant(String(data.get("from") ?? "")),
            to: instant(String(data.get("to") ?? "")),
            campaign_id: text("campaign_id"),
            outcome: text("outcome") as Filters["outcome"],
          });
        }}
      >
        <Field label="From" name="from" type="datetime-local" />
        <Field label="To" name="to" type="datetime-local" />
        <Select
          label="Campaign"
          name="campaign_id"
          empty="Every campaign"
          options={(campaigns.data?.items ?? []).map((c) => ({ value: c.id, label: c.name }))}
        />
        <Select label="Outcome" name="outcome" empty="Every outcome" options={facts.callOutcomes} />
        <button type="submit" class="primary">
          Apply
        </button>
        <button
          type="button"
          disabled={exporting.busy}
          onClick={() => exporting.run(() => api.exportCdrs(filters))}
        >
          Export CSV
        </button>
      </form>
      <Problem error={records.error ?? exporting.error} />
      <section class="card" aria-label="Records">
        <Table label="Call records" stacked>
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Phone</th>
              <th scope="col">Campaign</th>
              <th scope="col">Outcome</th>
              <th scope="col">Disposition</th>
              <th scope="col">Attempt</th>
              <th scope="col">Ring s</th>
              <th scope="col">Talk s</th>
              {email.size > 0 && <th scope="col">Agent</th>}
              <th scope="col">Hang-up cause</th>
              <th scope="col">Placed under</th>
            </tr>
          </thead>
          <tbody>
            {records.data?.items.map((cdr) => (
              <tr key={cdr.id}>
                <td data-label="Started">{dateTime(cdr.started_at)}</td>
                <th scope="row">{cdr.phone}</th>
                <td data-label="Campaign">{campaignName.get(cdr.campaign_id) ?? "–"}</td>
                <td data-label="Outcome">{label(cdr.outcome)}</td>
                <td data-label="Disposition">{cdr.disposition ? label(cdr.disposition) : "–"}</td>
                <td data-label="Attempt">{cdr.attempt}</td>
                <td data-label="Ring s">{cdr.ring_seconds}</td>
                <td data-label="Talk s">{cdr.talk_seconds}</td>
                {email.size > 0 && (
                  <td data-label="Agent">{(cdr.agent_id && email.get(cdr.agent_id)) || "–"}</td>
                )}
                <td data-label="Hang-up cause">{cdr.hangup_cause ?? "–"}</td>
                <td data-label="Placed under">
                  {/* One element: a stacked table's cell lays out its children as grid items. */}
                  <span class="small">
                    {cdr.profile ? (
                      <span title={profileLabel(cdr.profile.name)}>
                        {cdr.profile.name} {cdr.profile.version}
                      </span>
                    ) : (
                      "–"
                    )}
                    {cdr.governor_held && (
                      <>
                        <br />
                        <strong data-governor-held>held by the governor</strong>
                      </>
                    )}
                  </span>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
        {records.data && (
          <Pager
            total={records.data.total}
            limit={records.data.limit}
            offset={records.data.offset}
            onPage={setOffset}
          />
        )}
      </section>
    </Page>
  );
}
