import { useEffect, useRef, useState } from "preact/hooks";
import { may } from "../access.ts";
import { api, type Eligibility, type Import, type Lead } from "../api.ts";
import { type FileProblem, previewRows, problemOf } from "../csv-preview.ts";
import { facts } from "../facts.ts";
import { dateTime, zonedDateTime } from "../format.ts";
import { profileLabel, reasonLabel, zoneSourceLabel } from "../rules.ts";
import { Field, Page, Pager, Problem, Select, Table, useAction, useLoad } from "../ui.tsx";

const PREVIEW_ROWS = 5;

const PREVIEW_BYTES = 64 * 1024;

/** The header and first rows of a CSV file, read in the browser before it is sent. */
async function previewOf(file: File): Promise<string[][]> {
  return previewRows(await file.slice(0, PREVIEW_BYTES).text(), PREVIEW_ROWS + 1);
}

/** What the import would refuse only after the upload, found before it. */
async function fileProblemOf(file: File): Promise<FileProblem | undefined> {
  const bytes = new Uint8Array(await file.slice(0, PREVIEW_BYTES).arrayBuffer());
  return problemOf(bytes, file.size <= PREVIEW_BYTES);
}

const guess = (header: string[], pattern: RegExp, otherwise = header[0] ?? "") =>
  header.find((name) => pattern.test(name)) ?? otherwise;

/** The zones the browser knows, offered as the default zone's suggestions. */
const ZONES: readonly string[] = (() => {
  try {
    return Intl.supportedValuesOf("timeZone");
  } catch {
    return [];
  }
})();

function ImportForm({
  campaignId,
  listId,
  onDone,
}: {
  campaignId: string;
  listId: string;
  onDone: () => void;
}) {
  const [rows, setRows] = useState<string[][]>([]);
  const [phone, setPhone] = useState("");
  const [zone, setZone] = useState("");
  const [progress, setProgress] = useState<number | undefined>();
  const [report, setReport] = useState<Import | undefined>();
  const [problem, setProblem] = useState<FileProblem | undefined>();
  const action = useAction();
  const header = rows[0] ?? [];
  return (
    <section class="card" aria-labelledby="import-title">
      <h2 id="import-title">Import leads</h2>
      <form
        class="stack"
        noValidate
        onSubmit={async (event) => {
          event.preventDefault();
          const form = new FormData(event.target as HTMLFormElement);
          setReport(undefined);
          setProgress(0);
          const done = await action.run(() =>
            api.importLeads(campaignId, listId, form, setProgress),
          );
          if (done) {
            setReport(done.import);
            onDone();
          }
        }}
      >
        <Field
          label="CSV file"
          name="file"
          type="file"
          accept=".csv,text/csv,text/plain"
          onChange={async (event) => {
            const file = (event.target as HTMLInputElement).files?.[0];
            setReport(undefined);
            setProgress(undefined);
            setProblem(undefined);
            if (!file) return setRows([]);
            const found = await fileProblemOf(file);
            setProblem(found);
            if (found?.kind === "not_text") return setRows([]);
            const preview = await previewOf(file);
            setRows(preview);
            const names = preview[0] ?? [];
            setPhone(guess(names, /phone|number|tel/i));
            // No zone column: each lead's zone is inferred from its number.
            setZone(guess(names, /zone|tz/i, ""));
          }}
        />
        {problem && (
          <p class="problem" role="alert">
            {problem.message}
          </p>
        )}
        {rows.length > 0 && (
          <Table label="Preview of the first rows">
            <caption class="muted small">
              The file's first {Math.min(PREVIEW_ROWS, rows.length - 1)} rows
            </caption>
            <thead>
              <tr>
                {header.map((name, index) => (
                  <th key={index} scope="col">
                    {name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody class="preview">
              {rows.slice(1).map((row, index) => (
                <tr key={index}>
                  {row.map((cell, column) => (
                    <td key={column}>{cell}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </Table>
        )}
        <div class="grid2">
          <Select
            label="Phone column"
            name="phone_column"
            options={header}
            value={phone}
            onChange={(event) => setPhone((event.target as HTMLSelectElement).value)}
            error={action.field("phone_column")}
          />
          <Select
            label="Time zone column"
            name="timezone_column"
            options={header}
            empty="None: infer from the number"
            value={zone}
            onChange={(event) => setZone((event.target as HTMLSelectElement).value)}
            hint="optional; an empty cell is also inferred from the number"
            error={action.field("timezone_column")}
          />
          <Field
            label="Default region"
            name="default_region"
            maxLength={2}
            hint="two letters, e.g. US, for numbers without +"
            error={action.field("default_region")}
          />
          <Field
            label="Default time zone"
            name="default_timezone"
            list="known-zones"
            autoComplete="off"
            spellcheck={false}
            hint="IANA, e.g. America/Chicago: for numbers no zone is known for (toll-free); without it they are rejected"
            error={action.field("default_timezone")}
          />
          <datalist id="known-zones">
            {ZONES.map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </div>
        {progress !== undefined && (
          <div class="field">
            <label for="upload-progress">Upload progress</label>
            <progress id="upload-progress" max={1} value={progress}>
              {Math.round(progress * 100)} %
            </progress>
          </div>
        )}
        <div class="buttons">
          <button
            type="submit"
            class="primary"
            disabled={action.busy || rows.length === 0 || problem !== undefined}
          >
            Import
          </button>
        </div>
        <Problem error={action.error} />
      </form>
      {report && (
        <section aria-label="Import report" class="report">
          <h3>Import report</h3>
          <p role="status">
            <strong data-imported>{report.imported}</strong> imported,{" "}
            <strong data-rejected>{report.rejected}</strong> rejected.
          </p>
          {report.errors.length > 0 && (
            <Table label="Rejected rows">
              <thead>
                <tr>
                  <th scope="col">Row</th>
                  <th scope="col">Column</th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {report.errors.slice(0, 20).map((error) => (
                  <tr key={`${error.row}-${error.column}`}>
                    <td>{error.row}</td>
                    <td>{error.column ?? "–"}</td>
                    <td>{error.reason.replaceAll("_", " ")}</td>
                  </tr>
                ))}
              </tbody>
            </Table>
          )}
          {report.rejected > 0 && (
            <a
              href={`/api/v1/campaigns/${campaignId}/lead-lists/${listId}/imports/${report.id}/rejected.csv`}
              onClick={(event) => {
                event.preventDefault();
                void action.run(() => api.downloadRejected(campaignId, listId, report.id));
              }}
            >
              Download rejected rows
            </a>
          )}
        </section>
      )}
    </section>
  );
}

/** Every import into the list, with its rejected rows to download. */
function PastImports({
  campaignId,
  listId,
  version,
}: {
  campaignId: string;
  listId: string;
  version: number;
}) {
  const [offset, setOffset] = useState(0);
  const imports = useLoad(
    () => api.imports(campaignId, listId, { offset, limit: 10 }),
    [campaignId, listId, offset, version],
  );
  const downloading = useAction();
  if (!imports.data?.total) return null;
  return (
    <section class="card" aria-labelledby="imports-title">
      <h2 id="imports-title">Past imports</h2>
      <Problem error={imports.error ?? downloading.error} />
      <Table label="Past imports" stacked>
        <thead>
          <tr>
            <th scope="col">Finished</th>
            <th scope="col">Imported</th>
            <th scope="col">Rejected</th>
            <th scope="col">Rejected rows</th>
          </tr>
        </thead>
        <tbody>
          {imports.data.items.map((done) => (
            <tr key={done.id}>
              <td>{dateTime(done.finished_at)}</td>
              <td>{done.imported}</td>
              <td>{done.rejected}</td>
              <td>
                {done.rejected > 0 ? (
                  <button
                    type="button"
                    class="link"
                    disabled={downloading.busy}
                    aria-label={`Download the rejected rows of the import of ${dateTime(done.finished_at)}`}
                    onClick={() =>
                      downloading.run(() => api.downloadRejected(campaignId, listId, done.id))
                    }
                  >
                    Download
                  </button>
                ) : (
                  "–"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </Table>
      <Pager
        total={imports.data.total}
        limit={imports.data.limit}
        offset={imports.data.offset}
        onPage={setOffset}
      />
    </section>
  );
}

/** An instant in the reader's own time, with the lead's wall clock beside it; "—" for none. */
function When({ at, zone }: { at: string | null; zone: string }) {
  if (!at) return <>—</>;
  const there = zonedDateTime(at, zone);
  // One element: a stacked table's cell lays out its children as grid items.
  return (
    <span>
      <time dateTime={at}>{dateTime(at)}</time>
      {there && <span class="muted small"> ({there} for the lead)</span>}
    </span>
  );
}

function EligibilityDetails({ eligibility }: { eligibility: Eligibility }) {
  const zone = eligibility.zone.value;
  return (
    <>
      <p class={eligibility.dialable ? "verdict yes" : "verdict no"} data-verdict>
        {eligibility.dialable ? "Dialable now" : "Not dialable now"}
      </p>
      {eligibility.reasons.length > 0 && (
        <Table label="Why not" stacked>
          <thead>
            <tr>
              <th scope="col">Reason</th>
              <th scope="col">Why</th>
              <th scope="col">Until</th>
            </tr>
          </thead>
          <tbody>
            {eligibility.reasons.map((reason) => (
              <tr key={reason.code} data-reason={reason.code}>
                <th scope="row">{reasonLabel(reason.code)}</th>
                <td data-label="Why">{reason.message}</td>
                <td data-label="Until">
                  <When at={reason.until} zone={zone} />
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <dl class="details narrow-stack">
        <dt>Next eligible</dt>
        <dd data-next-eligible>
          <When at={eligibility.next_eligible_at} zone={zone} />
          {!eligibility.next_eligible_at && (
            <span class="muted small"> nothing makes it dialable by itself</span>
          )}
        </dd>
        <dt>Time zone</dt>
        <dd data-zone>
          {zone} <span class="muted small">({zoneSourceLabel(eligibility.zone.source)})</span>
        </dd>
        <dt>Regulatory profile</dt>
        <dd data-profile>
          {profileLabel(eligibility.profile.name)}{" "}
          <span class="muted small">version {eligibility.profile.version}</span>
        </dd>
      </dl>
    </>
  );
}

/** Why a lead may or may not be dialled now, in a dialog opened from its row. */
function EligibilityDialog({
  campaignId,
  lead,
  onClose,
}: {
  campaignId: string;
  lead: Lead;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [checkedAt, setCheckedAt] = useState<number | undefined>();
  const result = useLoad(async () => {
    const eligibility = await api.eligibility(campaignId, lead.id);
    setCheckedAt(Date.now());
    return eligibility;
  }, [campaignId, lead.id]);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} class="panel" aria-labelledby="eligibility-title" onClose={onClose}>
      <div class="panel-head">
        <h2 id="eligibility-title">Eligibility of {lead.phone}</h2>
        <button type="button" onClick={() => dialog.current?.close()}>
          Close
        </button>
      </div>
      <Problem error={result.error} />
      {result.data ? <EligibilityDetails eligibility={result.data} /> : <p>Checking…</p>}
      <div class="buttons">
        <button type="button" onClick={result.reload}>
          Check again
        </button>
        {checkedAt && (
          <span class="muted small" role="status">
            Checked at {new Date(checkedAt).toLocaleTimeString()}
          </span>
        )}
      </div>
    </dialog>
  );
}

export function LeadListView({ campaignId, listId }: { campaignId: string; listId: string }) {
  const list = useLoad(() => api.leadList(campaignId, listId), [campaignId, listId]);
  const [state, setState] = useState("");
  const [offset, setOffset] = useState(0);
  const leads = useLoad(
    () =>
      api.leads(campaignId, listId, {
        offset,
        limit: 50,
        ...(state ? { state: state as "Fresh" } : {}),
      }),
    [campaignId, listId, state, offset],
  );
  const current = list.data?.lead_list;
  const [imported, setImported] = useState(0);
  const [checking, setChecking] = useState<Lead | undefined>();
  return (
    <Page title={current ? `Lead list ${current.name}` : "Lead list"}>
      <p>
        <a href={`/campaigns/${campaignId}`}>Back to the campaign</a>
        {current && (
          <span class="muted">
            {" "}
            · caller ID {current.caller_id} · {current.lead_count} leads
          </span>
        )}
      </p>
      <Problem error={list.error} />
      {may("leads.write") && (
        <ImportForm
          campaignId={campaignId}
          listId={listId}
          onDone={() => {
            list.reload();
            leads.reload();
            setImported((count) => count + 1);
          }}
        />
      )}
      <PastImports campaignId={campaignId} listId={listId} version={imported} />
      <section class="card" aria-labelledby="leads-title">
        <h2 id="leads-title">Leads</h2>
        <Select
          label="State"
          options={facts.leadStates}
          empty="Every state"
          value={state}
          onChange={(event) => {
            setState((event.target as HTMLSelectElement).value);
            setOffset(0);
          }}
        />
        <Problem error={leads.error} />
        <Table label="Leads" stacked>
          <thead>
            <tr>
              <th scope="col">Phone</th>
              <th scope="col">Time zone</th>
              <th scope="col">State</th>
              <th scope="col">Attempts</th>
              <th scope="col">Next attempt</th>
              <th scope="col">Last outcome</th>
              <th scope="col">Fields</th>
              <th scope="col">Eligibility</th>
            </tr>
          </thead>
          <tbody>
            {leads.data?.items.map((lead) => (
              <tr key={lead.id} data-lead={lead.phone}>
                <th scope="row">{lead.phone}</th>
                <td data-label="Time zone">
                  <span>
                    {lead.timezone}
                    <br />
                    <span class="muted small">{zoneSourceLabel(lead.zone_source)}</span>
                  </span>
                </td>
                <td data-label="State">{lead.state}</td>
                <td data-label="Attempts">{lead.attempts}</td>
                <td data-label="Next attempt">{dateTime(lead.next_attempt_at)}</td>
                <td data-label="Last outcome">{lead.last_outcome ?? "–"}</td>
                <td data-label="Fields">
                  <span class="small">
                    {Object.entries(lead.fields)
                      .map(([name, value]) => `${name}: ${value}`)
                      .join(" · ") || "–"}
                  </span>
                </td>
                <td data-label="Eligibility">
                  <button
                    type="button"
                    aria-label={`Check the eligibility of ${lead.phone}`}
                    aria-haspopup="dialog"
                    onClick={() => setChecking(lead)}
                  >
                    Check
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
        {checking && (
          <EligibilityDialog
            key={checking.id}
            campaignId={campaignId}
            lead={checking}
            onClose={() => setChecking(undefined)}
          />
        )}
        {leads.data && (
          <Pager
            total={leads.data.total}
            limit={leads.data.limit}
            offset={leads.data.offset}
            onPage={setOffset}
          />
        )}
      </section>
    </Page>
  );
}
