import { useRef, useState } from "preact/hooks";
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
  agent_id?: string;
  outcome?: Cdr["outcome"];
}

/** A `datetime-local` value (the browser's zone) as RFC 3339, or undefined when empty. */
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

/** What the form shows now: the list and the export both use exactly this. */
function filtersOf(form: HTMLFormElement): Filters {
  const data = new FormData(form);
  const text = (name: string) => String(data.get(name) ?? "") || undefined;
  return {
    from: instant(String(data.get("from") ?? "")),
    to: instant(String(data.get("to") ?? "")),
    campaign_id: text("campaign_id"),
    agent_id: text("agent_id"),
    outcome: text("outcome") as Filters["outcome"],
  };
}

const rangeFailure = ({ from, to }: Filters) =>
  from && to && from > to ? { field: "from", message: "must not be after To" } : undefined;

/**
 * The agents a caller may filter by: the workspace's users for those who may list them, the
 * agents signed in now for supervisors.
 */
async function agentChoices(): Promise<{ value: string; label: string }[]> {
  if (may("users.read")) {
    const users = await api.users({ limit: 500 });
    return users.items.map((user) => ({ value: user.id, label: user.email }));
  }
  if (!may("agents.supervise")) return [];
  const board = await api.agentBoard(Intl.DateTimeFormat().resolvedOptions().timeZone);
  return board.agents.map(({ agent }) => ({
    value: agent.user_id,
    label: agent.email ?? agent.user_id,
  }));
}

export function CallRecords() {
  const [filters, setFilters] = useState<Filters>({});
  const [offset, setOffset] = useState(0);
  const campaigns = useLoad(() => api.campaigns({ limit: 500 }), []);
  const agents = useLoad(agentChoices, []);
  const records = useLoad(() => api.cdrs({ ...filters, offset, limit: 50 }), [filters, offset]);
  const action = useAction();
  const form = useRef<HTMLFormElement>(null);
  /** The form's filters, once they pass the checks; the list or the export runs on them. */
  const checked = (run: (given: Filters) => unknown) => {
    const element = form.current;
    if (!element) return;
    const given = filtersOf(element);
    void action.submit(element, async () => run(given), [rangeFailure(given)]);
  };
  return (
    <Page title="Call records">
      <form
        ref={form}
        class="inline card"
        noValidate
        aria-label="Filters"
        onSubmit={(event) => {
          event.preventDefault();
          checked((given) => {
            setOffset(0);
            setFilters(given);
          });
        }}
      >
        <Field label="From" name="from" type="datetime-local" error={action.field("from")} />
        <Field label="To" name="to" type="datetime-local" error={action.field("to")} />
        <Select
          label="Campaign"
          name="campaign_id"
          empty="Every campaign"
          options={(campaigns.data?.items ?? []).map((c) => ({ value: c.id, label: c.name }))}
        />
        <Select label="Agent" name="agent_id" empty="Every agent" options={agents.data ?? []} />
        <Select label="Outcome" name="outcome" empty="Every outcome" options={facts.callOutcomes} />
        <button type="submit" class="primary">
          Apply
        </button>
        <button
          type="button"
          disabled={action.busy}
          onClick={() => checked((given) => api.exportCdrs(given))}
        >
          Export CSV
        </button>
      </form>
      <Problem error={records.error ?? action.error} />
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
              <th scope="col">Agent</th>
              <th scope="col">Hang-up cause</th>
              <th scope="col">Placed under</th>
            </tr>
          </thead>
          <tbody>
            {records.data?.items.map((cdr) => (
              <tr key={cdr.id}>
                <td data-label="Started">{dateTime(cdr.started_at)}</td>
                <th scope="row">{cdr.phone}</th>
                <td data-label="Campaign">{cdr.campaign_name ?? "–"}</td>
                <td data-label="Outcome">{label(cdr.outcome)}</td>
                <td data-label="Disposition">{cdr.disposition ? label(cdr.disposition) : "–"}</td>
                <td data-label="Attempt">{cdr.attempt}</td>
                <td data-label="Ring s">{cdr.ring_seconds}</td>
                <td data-label="Talk s">{cdr.talk_seconds}</td>
                <td data-label="Agent">{cdr.agent_email ?? "–"}</td>
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
