import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { CAMPAIGN_DEFAULTS } from "../../../modules/campaigns/defaults.ts";
import { windowOrderFailure } from "../../../modules/campaigns/window-order.ts";
import { may } from "../access.ts";
import {
  ApiError,
  api,
  type Campaign,
  type CampaignStats,
  type CampaignWithStats,
  type Compliance,
} from "../api.ts";
import { facts } from "../facts.ts";
import { dateTime, fieldLabel, label, percent } from "../format.ts";
import { navigate } from "../router.ts";
import { governorHold, profileOptions, UNREGULATED_NOTE } from "../rules.ts";
import { workspace } from "../session.ts";
import { Field, Page, Pager, Problem, Select, Table, useAction, useLoad } from "../ui.tsx";
import { DispositionCodesEditor } from "./disposition-codes.tsx";
import { EffectiveWindow, GovernorStatus } from "./rules.tsx";

type Settings = Omit<
  Campaign,
  | "id"
  | "tenant_id"
  | "status"
  | "version"
  | "created_at"
  | "updated_at"
  | "effective_calling_window"
  | "messages"
>;

const MACHINE_ACTION_LABELS: Record<string, string> = {
  hangup: "Hang up",
  voicemail: "Leave the voicemail message after the beep",
  connect: "Put through to an agent",
};

const DEFAULTS: Omit<Settings, "regulatory_profile"> = {
  name: "",
  ...CAMPAIGN_DEFAULTS,
  calling_window: { ...CAMPAIGN_DEFAULTS.calling_window },
};

/** What a setting takes, as the API checks it; a number left empty is refused at once. */
const limitsOf = (name: string) => {
  const limits = facts.inputLimits.campaign[name] ?? {};
  return { ...limits, required: limits.step !== undefined || name === "name" };
};

/** The API's first complaint about the disposition codes, if any. */
const codesError = (error: unknown) =>
  error instanceof ApiError
    ? error.fieldErrors.find((failure) => failure.field.startsWith("disposition_codes"))
    : undefined;

function settingsOf(form: HTMLFormElement): Settings {
  const data = new FormData(form);
  const text = (name: string) => String(data.get(name) ?? "");
  const number = (name: string) => (text(name).trim() === "" ? Number.NaN : Number(text(name)));
  return {
    name: text("name"),
    dial_mode: text("dial_mode") as Settings["dial_mode"],
    caller_id: text("caller_id").trim() || null,
    calling_window: { start: text("calling_window.start"), end: text("calling_window.end") },
    max_attempts: number("max_attempts"),
    retry_delay_seconds: number("retry_delay_seconds"),
    dial_ratio: number("dial_ratio"),
    max_abandon_rate: number("max_abandon_rate"),
    regulatory_profile: text("regulatory_profile"),
    opt_out_digit: text("opt_out_digit"),
    amd_enabled: text("amd_enabled") === "on",
    amd_budget_ms: number("amd_budget_ms"),
    machine_action: text("machine_action") as Settings["machine_action"],
    amd_sample_percent: number("amd_sample_percent"),
    wrap_up_seconds: number("wrap_up_seconds"),
    disposition_codes: JSON.parse(text("disposition_codes") || "[]"),
    default_disposition: text("default_disposition"),
    after_call_pause_seconds: number("after_call_pause_seconds"),
    preview_timeout_seconds: number("preview_timeout_seconds"),
    screen_pop_url: text("screen_pop_url").trim() || null,
  };
}

/**
 * Every setting of a campaign, with the API's message beside each field. Those who may change
 * only the regulatory profile (supervisors) see the rest read-only.
 */
function SettingsForm({
  initial,
  submitLabel,
  canWrite,
  canChangeProfile,
  windowSummary,
  version,
  onSubmit,
}: {
  initial: Settings;
  submitLabel: string;
  /** Every setting may be changed. */
  canWrite: boolean;
  /** The regulatory profile and the pacing may be changed, alone when `canWrite` is false. */
  canChangeProfile: boolean;
  /** Shown beside the calling window: the hours in force under the profile. */
  windowSummary?: ComponentChildren;
  /** The version `initial` is of: a new one resets the fields to it. */
  version?: number;
  onSubmit: (settings: Settings) => Promise<unknown>;
}) {
  const action = useAction();
  const [saved, setSaved] = useState(false);
  const [profile, setProfile] = useState(initial.regulatory_profile);
  useEffect(() => setProfile(initial.regulatory_profile), [version]);
  const readOnly = !canWrite;
  const profileOnly = !canWrite && canChangeProfile;
  /** The pacing, which supervisors set too. */
  const pacingReadOnly = !canWrite && !canChangeProfile;
  return (
    <form
      class="stack"
      noValidate
      {...action.checks}
      onSubmit={async (event) => {
        event.preventDefault();
        setSaved(false);
        const form = event.target as HTMLFormElement;
        const settings = settingsOf(form);
        // A read-only window is not in the form's data, and not sent.
        const windowRule = readOnly ? undefined : windowOrderFailure(settings.calling_window);
        const done = await action.submit(form, () => onSubmit(settings), [windowRule]);
        if (done !== undefined) setSaved(true);
      }}
    >
      {/* Keyed by version: the uncontrolled fields take a saved campaign's values again. */}
      <fieldset class="grid2 plain" key={version}>
        <legend class="sr-only">Campaign settings</legend>
        <Field
          label="Name"
          name="name"
          {...limitsOf("name")}
          defaultValue={initial.name}
          disabled={readOnly}
          error={action.field("name")}
        />
        <Select
          label="Dial mode"
          name="dial_mode"
          options={facts.dialModes}
          defaultValue={initial.dial_mode}
          disabled={pacingReadOnly}
          error={action.field("dial_mode")}
        />
        <Field
          label="Caller ID"
          name="caller_id"
          {...limitsOf("caller_id")}
          defaultValue={initial.caller_id ?? ""}
          hint="E.164, e.g. +14155550100; empty: each list's own"
          disabled={readOnly}
          error={action.field("caller_id")}
        />
        <Select
          label="Regulatory profile"
          name="regulatory_profile"
          options={profileOptions(initial.regulatory_profile)}
          value={profile}
          onChange={(event) => {
            setProfile((event.target as HTMLSelectElement).value);
            setSaved(false);
          }}
          disabled={!canChangeProfile}
          hint={
            profile === "none" ? UNREGULATED_NOTE : "the rules every call of the campaign follows"
          }
          warning={profile === "none"}
          error={action.field("regulatory_profile")}
        />
        <Field
          label="Calling window start"
          name="calling_window.start"
          {...limitsOf("calling_window.start")}
          type="time"
          defaultValue={initial.calling_window.start}
          hint="the lead's local time"
          disabled={readOnly}
          error={action.field("calling_window.start") ?? action.field("calling_window")}
        />
        <Field
          label="Calling window end"
          name="calling_window.end"
          {...limitsOf("calling_window.end")}
          type="time"
          defaultValue={initial.calling_window.end}
          disabled={readOnly}
          error={action.field("calling_window.end")}
        />
        {windowSummary && <div class="span-all">{windowSummary}</div>}
        <Field
          label="Max attempts"
          name="max_attempts"
          {...limitsOf("max_attempts")}
          type="number"
          defaultValue={String(initial.max_attempts)}
          disabled={readOnly}
          error={action.field("max_attempts")}
        />
        <Field
          label="Retry delay (seconds)"
          name="retry_delay_seconds"
          {...limitsOf("retry_delay_seconds")}
          type="number"
          defaultValue={String(initial.retry_delay_seconds)}
          disabled={readOnly}
          error={action.field("retry_delay_seconds")}
        />
        <Field
          label="Dial ratio"
          name="dial_ratio"
          {...limitsOf("dial_ratio")}
          type="number"
          step="0.1"
          defaultValue={String(initial.dial_ratio)}
          hint="the profile's governor caps what is used"
          disabled={pacingReadOnly}
          error={action.field("dial_ratio")}
        />
        <Field
          label="Max abandon rate"
          name="max_abandon_rate"
          {...limitsOf("max_abandon_rate")}
          type="number"
          step="0.001"
          defaultValue={String(initial.max_abandon_rate)}
          hint="a share: 0.03 is 3 %"
          disabled={pacingReadOnly}
          error={action.field("max_abandon_rate")}
        />
        <Field
          label="Opt-out key"
          name="opt_out_digit"
          {...limitsOf("opt_out_digit")}
          defaultValue={initial.opt_out_digit}
          hint="pressed during the abandon message, puts the number on the do-not-call list"
          disabled={readOnly}
          error={action.field("opt_out_digit")}
        />
        <Select
          label="Answering-machine detection"
          name="amd_enabled"
          options={[
            { value: "off", label: "Off" },
            { value: "on", label: "On" },
          ]}
          defaultValue={initial.amd_enabled ? "on" : "off"}
          disabled={readOnly}
          error={action.field("amd_enabled")}
        />
        <Field
          label="Detection budget (ms)"
          name="amd_budget_ms"
          {...limitsOf("amd_budget_ms")}
          type="number"
          defaultValue={String(initial.amd_budget_ms)}
          hint="no verdict by then: put through to an agent"
          disabled={readOnly}
          error={action.field("amd_budget_ms")}
        />
        <Select
          label="On a machine"
          name="machine_action"
          options={facts.machineActions.map((value) => ({
            value,
            label: MACHINE_ACTION_LABELS[value] ?? value,
          }))}
          defaultValue={initial.machine_action}
          disabled={readOnly}
          error={action.field("machine_action")}
        />
        <Field
          label="Machine verdicts sent to agents (%)"
          name="amd_sample_percent"
          {...limitsOf("amd_sample_percent")}
          type="number"
          step="0.1"
          defaultValue={String(initial.amd_sample_percent)}
          hint="their dispositions estimate how often detection hangs up on a person"
          disabled={readOnly}
          error={action.field("amd_sample_percent")}
        />
        <Field
          label="Wrap-up limit (seconds)"
          name="wrap_up_seconds"
          {...limitsOf("wrap_up_seconds")}
          type="number"
          defaultValue={String(initial.wrap_up_seconds)}
          hint="0: no limit; at the limit the default disposition is recorded for the agent"
          disabled={readOnly}
          error={action.field("wrap_up_seconds")}
        />
        <Select
          label="Default disposition"
          name="default_disposition"
          options={initial.disposition_codes
            .filter((code) => code.outcome !== "callback")
            .map((code) => ({ value: code.code, label: code.label }))}
          defaultValue={initial.default_disposition}
          hint="recorded when the wrap-up limit runs out; from the saved codes"
          disabled={readOnly}
          error={action.field("default_disposition")}
        />
        <Field
          label="Pause after each call (seconds)"
          name="after_call_pause_seconds"
          {...limitsOf("after_call_pause_seconds")}
          type="number"
          defaultValue={String(initial.after_call_pause_seconds)}
          hint="a breath before the next call; 0: none"
          disabled={readOnly}
          error={action.field("after_call_pause_seconds")}
        />
        <Field
          label="Preview time to dial (seconds)"
          name="preview_timeout_seconds"
          {...limitsOf("preview_timeout_seconds")}
          type="number"
          defaultValue={String(initial.preview_timeout_seconds)}
          hint="in preview, a lead not dialled in this time is skipped and goes back"
          disabled={readOnly}
          error={action.field("preview_timeout_seconds")}
        />
        <div class="span-all">
          <Field
            label="Screen pop URL"
            name="screen_pop_url"
            type="url"
            {...limitsOf("screen_pop_url")}
            required={false}
            defaultValue={initial.screen_pop_url ?? ""}
            placeholder="https://crm.example/contacts?phone={phone}&id={lead.external_id}"
            hint="opened for the agent when a call connects; {phone}, {lead.id}, {lead.<column>}, {call.id}, {campaign.id}"
            disabled={readOnly}
            error={action.field("screen_pop_url")}
          />
        </div>
      </fieldset>
      <DispositionCodesEditor
        key={version}
        initial={initial.disposition_codes}
        disabled={readOnly}
        error={codesError(action.error)}
      />
      {(canWrite || canChangeProfile) && (
        <div class="buttons">
          <button type="submit" class="primary" disabled={action.busy}>
            {profileOnly ? "Save rules and pacing" : submitLabel}
          </button>
          <span role="status">{saved ? "Saved" : ""}</span>
          {profileOnly && (
            <span class="muted small">
              The profile, dial mode, ratio and abandon cap are yours to change; an admin sets the
              rest.
            </span>
          )}
        </div>
      )}
      <Problem error={action.error} />
    </form>
  );
}

/** Stopping is for good: a stopped campaign is not started again. */
const confirmed = (verb: string, name: string) =>
  verb !== "stop" ||
  window.confirm(
    `Stop ${name}? A stopped campaign cannot be started again; pause it to resume later.`,
  );

/**
 * A new workspace's first steps, each checked off as it is done: a campaign, leads, agents,
 * an edge node. Gone once all four are.
 */
function FirstRun() {
  const steps = useLoad(async () => {
    const [campaigns, users, nodes] = await Promise.all([
      api.campaigns({ limit: 50 }),
      api.users({ limit: 500 }),
      api.edgeNodes(),
    ]);
    const withLeads = await Promise.all(
      campaigns.items.slice(0, 10).map((campaign) => api.leadLists(campaign.id)),
    );
    return [
      { done: campaigns.total > 0, text: "Create a campaign", href: "/campaigns/new" },
      {
        done: withLeads.some((lists) => lists.items.some((list) => list.lead_count > 0)),
        text: "Import leads into a lead list of the campaign",
        href: campaigns.items[0] ? `/campaigns/${campaigns.items[0].id}` : "/campaigns/new",
      },
      {
        done: users.items.some((user) => user.role === "agent"),
        text: "Add agents (and give each a phone)",
        href: "/admin/users",
      },
      { done: nodes.items.length > 0, text: "Register an edge node", href: "/admin/edge-nodes" },
    ];
  }, []).data;
  if (!steps || steps.every((step) => step.done)) return null;
  return (
    <section class="card" aria-labelledby="first-run-title">
      <h2 id="first-run-title">Getting started</h2>
      <ol class="checklist">
        {steps.map((step) => (
          <li key={step.text} class={step.done ? "done" : ""}>
            {step.done ? (
              <>
                <span aria-hidden="true">✓ </span>
                {step.text} <span class="sr-only">(done)</span>
              </>
            ) : (
              <a href={step.href}>{step.text}</a>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}

export function CampaignList() {
  const [offset, setOffset] = useState(0);
  const [status, setStatus] = useState("");
  const { data, error } = useLoad(
    () =>
      api.campaigns({
        offset,
        limit: 50,
        ...(status ? { status: status as Campaign["status"] } : {}),
      }),
    [offset, status],
  );
  return (
    <Page title="Campaigns">
      {may("campaigns.write") && <FirstRun />}
      <div class="buttons">
        {may("campaigns.write") && (
          <a class="button primary" href="/campaigns/new">
            New campaign
          </a>
        )}
        <Select
          label="Status"
          options={facts.campaignStatuses.map((value) => ({ value, label: fieldLabel(value) }))}
          empty="Any status"
          value={status}
          onChange={(event) => {
            setStatus((event.target as HTMLSelectElement).value);
            setOffset(0);
          }}
        />
      </div>
      <Problem error={error} />
      <section class="card" aria-label="Campaign list">
        <Table label="Campaigns" stacked>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Dial mode</th>
              <th scope="col">Calling window</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {data?.items.map((campaign) => (
              <tr key={campaign.id}>
                <th scope="row">
                  <a href={`/campaigns/${campaign.id}`}>{campaign.name}</a>
                </th>
                <td class={`status status-${campaign.status}`}>{campaign.status}</td>
                <td>{campaign.dial_mode}</td>
                <td>
                  {campaign.calling_window.start}–{campaign.calling_window.end}
                </td>
                <td>{dateTime(campaign.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </Table>
        {data && (
          <Pager total={data.total} limit={data.limit} offset={data.offset} onPage={setOffset} />
        )}
      </section>
    </Page>
  );
}

export function CampaignNew() {
  // A new campaign starts with the workspace's default profile.
  const tenant = useLoad(workspace, []);
  const profile = tenant.data?.regulatory_profile ?? (tenant.error ? "us" : undefined);
  return (
    <Page title="New campaign">
      <Problem error={tenant.error} />
      <section class="card">
        {profile === undefined ? (
          <p>Loading…</p>
        ) : (
          <SettingsForm
            initial={{ ...DEFAULTS, regulatory_profile: profile }}
            submitLabel="Create campaign"
            canWrite
            canChangeProfile
            onSubmit={async (settings) => {
              const { campaign } = await api.createCampaign(settings);
              navigate(`/campaigns/${campaign.id}`);
              return campaign;
            }}
          />
        )}
      </section>
    </Page>
  );
}

function ComplianceView({ compliance }: { compliance: Compliance }) {
  const views = [
    ["Legal window", compliance.window],
    ["Last 24 hours", compliance.last_24_hours],
  ] as const;
  return (
    <>
      <p>
        Basis: <strong>{label(compliance.basis)}</strong>; limit{" "}
        {percent(compliance.max_abandon_rate)}; as of {dateTime(compliance.at)}.
      </p>
      <Table label="Compliance" stacked>
        <thead>
          <tr>
            <th scope="col">Period</th>
            <th scope="col">From</th>
            <th scope="col">Live answers</th>
            <th scope="col">Abandons</th>
            <th scope="col">Abandon rate</th>
            <th scope="col">Abandons left</th>
          </tr>
        </thead>
        <tbody>
          {views.map(([name, view]) => (
            <tr key={name}>
              <th scope="row">{name}</th>
              <td>{dateTime(view.from)}</td>
              <td>{view.live_answers}</td>
              <td>{view.abandons}</td>
              <td class={view.abandon_rate > compliance.max_abandon_rate ? "over" : undefined}>
                {percent(view.abandon_rate)}
              </td>
              <td>{String(view.abandon_budget ?? "–")}</td>
            </tr>
          ))}
        </tbody>
      </Table>
    </>
  );
}

function LeadLists({ campaignId }: { campaignId: string }) {
  const lists = useLoad(() => api.leadLists(campaignId), [campaignId]);
  const action = useAction();
  return (
    <section class="card" aria-labelledby="lists-title">
      <h2 id="lists-title">Lead lists</h2>
      <Problem error={lists.error} />
      <Table label="Lead lists" stacked>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Caller ID</th>
            <th scope="col">Leads</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {lists.data?.items.map((list) => (
            <tr key={list.id}>
              <th scope="row">
                <a href={`/campaigns/${campaignId}/lists/${list.id}`}>{list.name}</a>
              </th>
              <td>{list.caller_id}</td>
              <td>{list.lead_count}</td>
              <td>{dateTime(list.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </Table>
      {may("leads.write") && (
        <form
          class="inline"
          noValidate
          onSubmit={async (event) => {
            event.preventDefault();
            const form = event.target as HTMLFormElement;
            const data = new FormData(form);
            const created = await action.run(() =>
              api.createLeadList(campaignId, {
                name: String(data.get("name")),
                caller_id: String(data.get("caller_id")),
              }),
            );
            if (created) {
              form.reset();
              lists.reload();
            }
          }}
        >
          <Field label="List name" name="name" error={action.field("name")} />
          <Field
            label="List caller ID"
            name="caller_id"
            hint="E.164"
            error={action.field("caller_id")}
          />
          <button type="submit" disabled={action.busy}>
            Create list
          </button>
          <Problem error={action.error} />
        </form>
      )}
    </section>
  );
}

export function CampaignDetail({ id }: { id: string }) {
  const campaign = useLoad(() => api.campaign(id), [id]);
  const [historyOffset, setHistoryOffset] = useState(0);
  const history = useLoad(
    () => api.campaignHistory(id, { offset: historyOffset, limit: 20 }),
    [id, historyOffset],
  );
  const compliance = useLoad(() => api.compliance(id), [id]);
  const action = useAction();
  const [stats, setStats] = useState<CampaignStats | undefined>();
  useEffect(() => {
    // The pacing and the governor's hold change as calls go: read again now and then.
    const timer = setInterval(() => {
      api.campaign(id).then(
        (reply) => setStats(reply.campaign.stats),
        () => {},
      );
    }, 10_000);
    return () => clearInterval(timer);
  }, [id]);
  const current: CampaignWithStats | undefined = campaign.data?.campaign;
  if (!current)
    return (
      <Page title="Campaign">
        {campaign.error ? <Problem error={campaign.error} /> : <p>Loading…</p>}
      </Page>
    );
  const allowed = facts.campaignActions[current.status] ?? [];
  const pacing = stats ?? current.stats;
  return (
    <Page title={current.name}>
      <section class="card" aria-labelledby="status-title">
        <h2 id="status-title">
          Status: <span class={`status status-${current.status}`}>{current.status}</span>
        </h2>
        {may("campaigns.status") && (
          <div class="buttons">
            {(["start", "pause", "stop"] as const).map((verb) => (
              <button
                key={verb}
                type="button"
                disabled={!allowed.includes(verb) || action.busy}
                onClick={async () => {
                  if (!confirmed(verb, current.name)) return;
                  const done = await action.run(() => api.campaignAction(id, { action: verb }));
                  if (done) {
                    campaign.reload();
                    history.reload();
                  }
                }}
              >
                {`${verb[0]?.toUpperCase()}${verb.slice(1)}`}
              </button>
            ))}
          </div>
        )}
        {pacing && (
          <p class="small">
            Dial ratio <strong>{pacing.dial_ratio.toFixed(2)}</strong>
            {governorHold(pacing.dial_ratio_reason) === undefined && (
              <span class="muted"> · {pacing.dial_ratio_reason}</span>
            )}
          </p>
        )}
        <GovernorStatus reason={pacing?.dial_ratio_reason} />
        <Problem error={action.error} />
      </section>
      <section class="card" aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <SettingsForm
          version={current.version}
          initial={current}
          submitLabel="Save changes"
          canWrite={may("campaigns.write")}
          canChangeProfile={may("campaigns.rules")}
          windowSummary={<EffectiveWindow campaign={current} />}
          onSubmit={async (settings) => {
            // Supervisors send the rules and the pacing; every other setting is an admin's.
            // A profile they may not choose (none) is a disabled option, which a form leaves
            // out of its data: the profile is sent only when they changed it.
            const profileChanged =
              settings.regulatory_profile !== "" &&
              settings.regulatory_profile !== current.regulatory_profile;
            const changes = may("campaigns.write")
              ? settings
              : {
                  ...(profileChanged ? { regulatory_profile: settings.regulatory_profile } : {}),
                  dial_mode: settings.dial_mode,
                  dial_ratio: settings.dial_ratio,
                  max_abandon_rate: settings.max_abandon_rate,
                };
            const { campaign: saved } = await api.patchCampaign(id, {
              version: current.version,
              ...changes,
            });
            campaign.setData({ campaign: { ...current, ...saved } });
            return saved;
          }}
        />
      </section>
      <LeadLists campaignId={id} />
      <div class="grid2">
        <section class="card" aria-labelledby="history-title">
          <h2 id="history-title">Status history</h2>
          <Problem error={history.error} />
          <Table label="Status history" stacked>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Action</th>
                <th scope="col">From → to</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {history.data?.items.map((change) => (
                <tr key={change.id}>
                  <td>{dateTime(change.created_at)}</td>
                  <td>{change.action}</td>
                  <td>
                    {change.from} → {change.to}
                  </td>
                  <td>
                    {change.actor_email ??
                      (change.actor_type === "system" ? "the service" : label(change.actor_type))}
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
          {history.data && (
            <Pager
              total={history.data.total}
              limit={history.data.limit}
              offset={history.data.offset}
              onPage={setHistoryOffset}
            />
          )}
        </section>
        <section class="card" aria-labelledby="compliance-title">
          <h2 id="compliance-title">Compliance</h2>
          <Problem error={compliance.error} />
          {compliance.data && <ComplianceView compliance={compliance.data.compliance} />}
          <button
            type="button"
            class="link"
            onClick={() => action.run(() => api.complianceEvidence(id))}
          >
            Download the counted calls (CSV)
          </button>
        </section>
      </div>
    </Page>
  );
}
