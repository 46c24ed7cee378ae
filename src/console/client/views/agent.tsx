import { useEffect, useRef, useState } from "preact/hooks";
import { CAMPAIGN_DEFAULTS } from "../../../modules/campaigns/defaults.ts";
import {
  type Agent,
  api,
  type Campaign,
  type NotReadyReason,
  type Preview,
  type ServerMessage,
} from "../api.ts";
import {
  dateTime,
  duration,
  fieldLabel,
  instantToZoned,
  label,
  timeIn,
  zonedToInstant,
} from "../format.ts";
import { type Link, liveSocket, useToldInOrder } from "../live.ts";
import { Page, Problem, refused, useAction, useLoad, usePolled } from "../ui.tsx";

type Offered = Extract<ServerMessage, { type: "call.offered" }>;
type Connected = Extract<ServerMessage, { type: "call.connected" }>;
type CallInfo = {
  call: Connected["call"];
  lead: Connected["lead"];
  since: number;
  /** The lead's page in the CRM, where the campaign has a screen pop. */
  screenPop?: string | undefined;
};
type OwnCall = {
  agent: Agent;
  call: Connected["call"] | null;
  lead: Connected["lead"] | null;
  screen_pop_url?: string | null;
  preview?: Preview | null | undefined;
};
/** A transfer of the agent's call, as the page shows it. */
type Transfer = {
  callId: string;
  status: "pending" | "done" | "failed";
  to: string;
  reason: string | null;
};

const CAMPAIGN_KEY = "dialer.agent.campaign";
const REASON_KEY = "dialer.agent.reason";
/** The service's own reason for the breath a campaign gives after each call. */
const AFTER_CALL = "after_call";
const STOPPED = new Set(["paused", "stopped", "completed"]);
type DispositionCode = Campaign["disposition_codes"][number];
/** A campaign the page has not loaded (no longer running, say) offers the defaults. */
const DEFAULT_CODES = CAMPAIGN_DEFAULTS.disposition_codes as readonly DispositionCode[];

function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** Columns that name a person, in the order a name is built from them. */
const NAME_COLUMNS = [
  ["name"],
  ["full_name"],
  ["fullname"],
  ["first_name", "last_name"],
  ["firstname", "lastname"],
];

/** A column's name as the name columns are written: `First Name` is `first_name`. */
const columnKey = (name: string) => name.toLowerCase().replace(/[\s-]+/g, "_");

const byColumnKey = (fields: Record<string, string>) =>
  new Map(Object.entries(fields).map(([key, value]) => [columnKey(key), value.trim()]));

/** The columns the lead's name is built from, when the list has some. */
function nameColumnsOf(fields: Record<string, string>): string[] {
  const byKey = byColumnKey(fields);
  return NAME_COLUMNS.find((columns) => columns.some((column) => byKey.get(column))) ?? [];
}

/** The lead's name from its columns, when the list has one. */
export function leadName(fields: Record<string, string>): string | undefined {
  const byKey = byColumnKey(fields);
  const parts = nameColumnsOf(fields).map((column) => byKey.get(column) ?? "");
  return parts.some(Boolean) ? parts.filter(Boolean).join(" ") : undefined;
}

function LeadDetails({
  lead,
  attempt,
  now,
}: {
  lead: Connected["lead"];
  attempt: number;
  now: number;
}) {
  const name = leadName(lead.fields);
  // A name taken whole from one column is not listed again; first and last names still are.
  const columns = nameColumnsOf(lead.fields);
  const named = new Set(columns.length === 1 ? columns : []);
  return (
    <dl class="details">
      {name && (
        <>
          <dt>Name</dt>
          <dd class="headline" data-field="name">
            {name}
          </dd>
        </>
      )}
      <dt>Number</dt>
      <dd data-field="phone">{lead.phone}</dd>
      {Object.entries(lead.fields)
        .filter(([column]) => !name || !named.has(columnKey(column)))
        .map(([column, value]) => (
          <>
            <dt key={`${column}-name`}>{fieldLabel(column)}</dt>
            <dd key={`${column}-value`}>{value}</dd>
          </>
        ))}
      <dt>Lead's local time</dt>
      <dd>
        {timeIn(now, lead.timezone)} <span class="muted">({lead.timezone})</span>
      </dd>
      <dt>Attempt</dt>
      <dd>{attempt}</dd>
    </dl>
  );
}

function WrapUp({
  callId,
  info,
  codes,
  onDone,
}: {
  callId: string;
  info: CallInfo | undefined;
  codes: readonly DispositionCode[];
  onDone: () => void;
}) {
  const action = useAction();
  const zone = info?.lead.timezone ?? browserZone;
  const [when, setWhen] = useState(() => instantToZoned(Date.now() + 3_600_000, zone));
  const [notes, setNotes] = useState("");
  const at = zonedToInstant(when, zone);
  const submit = async (code: DispositionCode) => {
    const callback = code.outcome === "callback";
    const callbackAt = callback && at !== undefined ? new Date(at).toISOString() : undefined;
    const done = await action.run(async () => {
      if (callback && (at === undefined || at <= Date.now()))
        throw refused([{ field: "callback_at", message: "must be a time to come" }]);
      return api.disposition(callId, {
        disposition: code.code,
        ...(callbackAt ? { callback_at: callbackAt } : {}),
        ...(notes.trim() ? { notes } : {}),
      });
    });
    if (done) onDone();
  };
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (
        event.target instanceof HTMLInputElement ||
        event.target instanceof HTMLTextAreaElement ||
        event.altKey ||
        event.ctrlKey ||
        event.metaKey
      )
        return;
      const code = codes.find((known) => known.hotkey === event.key);
      if (code) {
        event.preventDefault();
        void submit(code);
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  });
  const callbackProblem = action.field("callback_at");
  return (
    <section class="card" aria-labelledby="wrap-title" {...action.checks}>
      <h2 id="wrap-title">Wrap-up</h2>
      {info && <p>Call with {info.lead.phone} ended. How did it go?</p>}
      <div class="field">
        <label for="callback-time">Callback time</label>
        <input
          id="callback-time"
          name="callback_at"
          type="datetime-local"
          value={when}
          onInput={(event) => setWhen((event.target as HTMLInputElement).value)}
          aria-invalid={callbackProblem ? true : undefined}
          aria-describedby={callbackProblem ? "callback-error callback-zones" : "callback-zones"}
        />
        {callbackProblem && (
          <small id="callback-error" class="field-error">
            {callbackProblem}
          </small>
        )}
        <small id="callback-zones" class="hint">
          In the lead's zone ({zone}).
          {at !== undefined &&
            ` That is ${new Date(at).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" })} for you (${browserZone}).`}
        </small>
      </div>
      <div class="field">
        <label for="call-notes">Notes</label>
        <textarea
          id="call-notes"
          rows={3}
          maxLength={2000}
          value={notes}
          onInput={(event) => setNotes((event.target as HTMLTextAreaElement).value)}
          aria-describedby="call-notes-hint"
        />
        <small id="call-notes-hint" class="hint">
          Kept on the call record with the disposition.
        </small>
      </div>
      <div class="buttons">
        {codes.map((code) => (
          <button
            key={code.code}
            type="button"
            disabled={action.busy}
            aria-keyshortcuts={code.hotkey ?? undefined}
            onClick={() => submit(code)}
          >
            {code.label} {code.hotkey && <kbd>{code.hotkey}</kbd>}
          </button>
        ))}
      </div>
      <Problem error={action.error} />
    </section>
  );
}

/** The lead's earlier calls: when, how each ended, its code, who took it and their notes. */
function EarlierCalls({ callId }: { callId: string }) {
  const attempts = useLoad(
    async () => (await api.ownHistory()).items.filter((attempt) => attempt.call_id !== callId),
    [callId],
  ).data;
  if (!attempts) return null;
  return (
    <section aria-labelledby={`history-${callId}`}>
      <h3 id={`history-${callId}`}>Earlier calls</h3>
      {attempts.length === 0 ? (
        <p class="muted">None: this is the first call to this lead.</p>
      ) : (
        <ul class="history">
          {attempts.map((attempt) => (
            <li key={attempt.call_id} data-attempt={attempt.attempt}>
              <strong>{dateTime(attempt.started_at)}</strong> · {label(attempt.outcome)}
              {attempt.disposition && <> · {label(attempt.disposition)}</>}
              {attempt.agent_email && <span class="muted"> · {attempt.agent_email}</span>}
              {attempt.notes && <p class="notes">{attempt.notes}</p>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/**
 * Single-key shortcuts while the component is shown, ignored while typing in a field or with
 * a modifier held.
 */
function useShortcuts(keys: Record<string, (() => unknown) | undefined>) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement;
      if (
        target.closest("input, select, textarea") ||
        event.altKey ||
        event.ctrlKey ||
        event.metaKey
      )
        return;
      keys[event.key]?.();
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  });
}

/** Why an agent passes on a lead offered in preview. */
const SKIP_REASONS = ["Not the right time", "Wrong region", "Recently contacted", "Other"];

/**
 * A lead offered in preview: nothing is dialled until the agent dials it. Its fields, earlier
 * calls and whether the rules allow it now; Dial, or Skip with a reason, before the offer's
 * time runs out.
 */
function PreviewCard({
  preview,
  now,
  onDone,
}: {
  preview: Preview;
  now: number;
  onDone: () => void;
}) {
  const action = useAction();
  const [reason, setReason] = useState(SKIP_REASONS[0] as string);
  const eligibility = useLoad(
    async () => (await api.agentPreview()).eligibility,
    [preview.lead.id],
  ).data;
  const left = Math.max(0, Math.ceil((Date.parse(preview.expires_at) - now) / 1000));
  const dial = () => action.run(() => api.dialPreview()).then((done) => done && onDone());
  const skip = () => action.run(() => api.skipPreview(reason)).then((done) => done && onDone());
  useShortcuts({ d: dial, s: skip });
  return (
    <section class="card" aria-labelledby="preview-title">
      <h2 id="preview-title">Preview: {leadName(preview.lead.fields) ?? preview.lead.phone}</h2>
      <p class="muted" id="preview-help">
        Nothing is dialled until you press Dial. Skipped in {left} s if you do neither; a skipped
        lead goes back to the campaign.
      </p>
      <LeadDetails lead={preview.lead} attempt={preview.lead.attempts + 1} now={now} />
      {eligibility && !eligibility.dialable && (
        <div class="problem" role="alert">
          <p>The rules do not allow this call now:</p>
          <ul>
            {eligibility.reasons.map((reason) => (
              <li key={reason.code}>{reason.message}</li>
            ))}
          </ul>
        </div>
      )}
      <EarlierCalls callId={preview.lead.id} />
      <div class="buttons">
        <button
          type="button"
          class="primary"
          disabled={action.busy}
          aria-keyshortcuts="d"
          aria-describedby="preview-help"
          onClick={dial}
        >
          Dial <kbd>d</kbd>
        </button>
      </div>
      <div class="inline-form">
        <div class="field">
          <label for="skip-reason">Skip reason</label>
          <select
            id="skip-reason"
            value={reason}
            onChange={(event) => setReason((event.target as HTMLSelectElement).value)}
          >
            {SKIP_REASONS.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        </div>
        <button type="button" disabled={action.busy} aria-keyshortcuts="s" onClick={skip}>
          Skip <kbd>s</kbd>
        </button>
      </div>
      <Problem error={action.error} />
    </section>
  );
}

/** Hang up, and a blind transfer to a ready agent of the campaign or an allowed number. */
function CallControls({
  callId,
  transfer,
  connected,
}: {
  callId: string;
  transfer: Transfer | undefined;
  /** A call still ringing can only be hung up. */
  connected: boolean;
}) {
  const action = useAction();
  const [choosing, setChoosing] = useState(false);
  const targets = useLoad(
    async () => (choosing ? await api.transferTargets() : undefined),
    [choosing],
  ).data;
  const [target, setTarget] = useState("");
  const hangUp = () => action.run(() => api.hangUp(callId));
  const send = () =>
    action.run(async () => {
      const [kind, value] = target.split(":", 2) as [string, string];
      await api.transfer(callId, kind === "agent" ? { agent_id: value } : { phone: value });
      setChoosing(false);
    });
  useShortcuts({ h: hangUp, t: connected ? () => setChoosing(true) : undefined });
  const options = [
    ...(targets?.agents ?? []).map((agent) => ({
      value: `agent:${agent.user_id}`,
      label: agent.email,
    })),
    ...(targets?.numbers ?? []).map((phone) => ({ value: `phone:${phone}`, label: phone })),
  ];
  return (
    <div>
      {transfer && (
        <p aria-live="polite" class={transfer.status === "failed" ? "problem" : "pending"}>
          {transfer.status === "pending"
            ? `Transferring to ${transfer.to}…`
            : transfer.status === "failed"
              ? `The transfer to ${transfer.to} failed${transfer.reason ? `: ${transfer.reason}` : ""}. The caller is still with you.`
              : `Transferred to ${transfer.to}.`}
        </p>
      )}
      <div class="buttons">
        <button
          type="button"
          class="danger"
          disabled={action.busy}
          aria-keyshortcuts="h"
          onClick={hangUp}
        >
          Hang up <kbd>h</kbd>
        </button>
        {connected && (
          <button
            type="button"
            disabled={action.busy || transfer?.status === "pending"}
            aria-keyshortcuts="t"
            aria-expanded={choosing}
            onClick={() => setChoosing(!choosing)}
          >
            Transfer <kbd>t</kbd>
          </button>
        )}
      </div>
      {choosing && targets && (
        <div class="inline-form">
          <div class="field">
            <label for="transfer-target">Transfer to</label>
            <select
              id="transfer-target"
              value={target}
              onChange={(event) => setTarget((event.target as HTMLSelectElement).value)}
            >
              <option value="">
                {options.length ? "Choose an agent or a number" : "No ready agent or number"}
              </option>
              {options.map((option) => (
                <option key={option.value} value={option.value}>
                  {option.label}
                </option>
              ))}
            </select>
          </div>
          <button type="button" class="primary" disabled={!target || action.busy} onClick={send}>
            Transfer now
          </button>
        </div>
      )}
      <Problem error={action.error} />
    </div>
  );
}

/** A number typed by the agent, checked by the service against do-not-call and the rules. */
function ManualDial() {
  const action = useAction();
  const [phone, setPhone] = useState("");
  const submit = (event: Event) => {
    event.preventDefault();
    void action
      .run(() => api.dialByHand({ phone: phone.trim() }))
      .then((done) => {
        if (done) setPhone("");
      });
  };
  const phoneProblem = action.field("phone");
  return (
    <form
      class="card inline-form"
      aria-labelledby="manual-title"
      onSubmit={submit}
      {...action.checks}
    >
      <h2 id="manual-title">Dial a number</h2>
      <div class="field">
        <label for="manual-phone">Number</label>
        <input
          id="manual-phone"
          name="phone"
          type="tel"
          value={phone}
          placeholder="+14155550100"
          aria-describedby={phoneProblem ? "manual-error manual-hint" : "manual-hint"}
          aria-invalid={phoneProblem ? true : undefined}
          onInput={(event) => setPhone((event.target as HTMLInputElement).value)}
        />
        {phoneProblem && (
          <small id="manual-error" class="field-error">
            {phoneProblem}
          </small>
        )}
        <small id="manual-hint" class="hint">
          In international form. Checked against the do-not-call list and the campaign's calling
          hours first.
        </small>
      </div>
      <button type="submit" class="primary" disabled={!phone.trim() || action.busy}>
        Dial
      </button>
      <Problem error={action.error} />
    </form>
  );
}

/** The callbacks this agent set, soonest first, with the time in the lead's zone and here. */
function OwnCallbacks({ refreshKey }: { refreshKey: string }) {
  const callbacks = usePolled(
    async () => (await api.ownCallbacks()).items,
    [refreshKey],
    60_000,
  ).data;
  if (!callbacks || callbacks.length === 0) return null;
  return (
    <section class="card" aria-labelledby="callbacks-title">
      <h2 id="callbacks-title">Your callbacks</h2>
      <ul class="history">
        {callbacks.map((callback) => (
          <li key={callback.lead_id}>
            <strong>{dateTime(callback.due_at, callback.timezone)}</strong>{" "}
            <span class="muted">
              ({callback.timezone}; {dateTime(callback.due_at)} here)
            </span>{" "}
            · {leadName(callback.fields) ?? callback.phone}
            {leadName(callback.fields) && <span class="muted"> · {callback.phone}</span>}
            {callback.notes && <p class="notes">{callback.notes}</p>}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** What the agent did today, in the browser's zone: calls, talk, wrap-up and pauses. */
function TodayFigures({ refreshKey, reasons }: { refreshKey: string; reasons: NotReadyReason[] }) {
  const figures = usePolled(
    async () => (await api.agentFigures(browserZone)).figures,
    [refreshKey],
    60_000,
  ).data;
  if (!figures) return null;
  const reasonLabel = (code: string) =>
    code === AFTER_CALL
      ? "Pause after calls"
      : (reasons.find((reason) => reason.code === code)?.label ?? label(code));
  const paused = Object.entries(figures.paused_seconds_by_reason).filter(([, s]) => s > 0);
  return (
    <section class="card" aria-labelledby="today-title">
      <h2 id="today-title">Today</h2>
      <dl class="details figures">
        <dt>Calls</dt>
        <dd data-figure="calls">{figures.calls}</dd>
        <dt>Talk time</dt>
        <dd>
          {duration(figures.talk_seconds)}
          {figures.average_talk_seconds !== null && (
            <span class="muted"> (average {duration(figures.average_talk_seconds)})</span>
          )}
        </dd>
        <dt>Wrap-up time</dt>
        <dd>
          {duration(figures.wrap_up_seconds)}
          {figures.average_wrap_up_seconds !== null && (
            <span class="muted"> (average {duration(figures.average_wrap_up_seconds)})</span>
          )}
        </dd>
        <dt>Not ready</dt>
        <dd>
          {paused.length === 0
            ? "none"
            : paused
                .map(([code, seconds]) => `${reasonLabel(code)} ${duration(seconds)}`)
                .join(", ")}
        </dd>
      </dl>
    </section>
  );
}

export function AgentDesktop() {
  const [agent, setAgent] = useState<Agent | undefined>();
  const [link, setLink] = useState<Link>("connecting");
  const campaigns: Campaign[] =
    usePolled(
      async () => (await api.campaigns({ status: "running", limit: 500 })).items,
      [],
      30_000,
    ).data ?? [];
  const [campaignId, setCampaignId] = useState(localStorage.getItem(CAMPAIGN_KEY) ?? "");
  // A campaign picked here waits for the next Ready: the agent's state, which may arrive after
  // the pick (the socket connects late on a slow link), does not undo it meanwhile.
  const picked = useRef(false);
  const [offer, setOffer] = useState<Offered | undefined>();
  const [preview, setPreview] = useState<Preview | null>(null);
  const [transfer, setTransfer] = useState<Transfer | undefined>();
  const [current, setCurrent] = useState<CallInfo | undefined>();
  const [reasons, setReasons] = useState<NotReadyReason[]>([]);
  const [pauseReason, setPauseReason] = useState(localStorage.getItem(REASON_KEY) ?? "");
  const [notice, setNotice] = useState<string | undefined>();
  const action = useAction();
  const now = useNow();
  const currentRef = useRef(current);
  currentRef.current = current;
  // The preview is reserved the moment the agent is ready: the socket may tell it first.
  const states = useToldInOrder();

  // The agent's own call and lead, as `GET /agents/me` and the socket's first `agent.state`
  // give them: after a reload or a reconnect mid-call the page shows the lead again, as
  // `call.offered` or `call.connected` would have brought it.
  const adopt = ({ agent: self, call, lead, screen_pop_url, preview: offered }: OwnCall) => {
    if (offered !== undefined) setPreview(offered);
    if (!call || !lead) return;
    if (self.state === "reserved" && call.status !== "answered") {
      setOffer((known) =>
        known?.call.id === call.id ? known : { type: "call.offered", call, lead },
      );
    } else {
      setCurrent((known) =>
        known?.call.id === call.id
          ? known
          : {
              call,
              lead,
              since: Date.parse(call.answered_at ?? "") || Date.now(),
              screenPop: screen_pop_url ?? undefined,
            },
      );
    }
  };

  useEffect(() => {
    api.agentMe().then(adopt, () => {});
    api.notReadyReasons().then(
      (page) => {
        setReasons(page.items);
        setPauseReason((chosen) =>
          page.items.some((reason) => reason.code === chosen)
            ? chosen
            : (page.items[0]?.code ?? ""),
        );
      },
      () => {},
    );
  }, []);

  useEffect(
    () =>
      liveSocket(
        "/ws/agent",
        (message) => {
          switch (message.type) {
            case "agent.state":
              states.told();
              setAgent(message.agent);
              adopt({
                agent: message.agent,
                call: message.call ?? null,
                lead: message.lead ?? null,
                preview: message.preview,
              });
              if (message.agent.campaign_id && !picked.current)
                setCampaignId(message.agent.campaign_id);
              if (message.agent.state !== "reserved" || message.agent.call_id) setPreview(null);
              if (message.agent.state === "ready" || message.agent.state === "paused")
                setOffer(undefined);
              break;
            case "preview.offered":
              setPreview(message.preview);
              break;
            case "agent.supervised": {
              const at = new Date(message.at).toLocaleTimeString(undefined, {
                hour: "2-digit",
                minute: "2-digit",
              });
              setNotice(
                message.state === "offline"
                  ? `${message.by.email} signed you out at ${at}.`
                  : `${message.by.email} paused you at ${at}${message.reason ? ` (${message.reason})` : ""}. During a call, the pause starts once it is dispositioned.`,
              );
              break;
            }
            case "call.offered":
              setPreview(null);
              setOffer(message);
              break;
            case "call.transfer": {
              const sent = message.call.transfer;
              if (sent)
                setTransfer({
                  callId: message.call.id,
                  status: sent.status,
                  to: sent.to_phone ?? "another agent",
                  reason: sent.reason,
                });
              break;
            }
            case "call.connected":
              setOffer(undefined);
              setTransfer(undefined);
              setCurrent({
                call: message.call,
                lead: message.lead,
                since:
                  Date.parse(
                    String((message.call as { answered_at?: string }).answered_at ?? ""),
                  ) || Date.now(),
                screenPop: message.screen_pop_url,
              });
              // A browser may block a tab nobody clicked for: the link below stays.
              if (message.screen_pop_url)
                window.open(message.screen_pop_url, "_blank", "noopener,noreferrer");
              break;
            case "call.ended":
              setOffer((offered) => (offered?.call.id === message.call.id ? undefined : offered));
              break;
            case "campaign.status": {
              const who =
                message.by?.email ??
                (message.by?.actor_type === "system" ? "the service" : "an integration");
              const at = new Date().toLocaleTimeString(undefined, {
                hour: "2-digit",
                minute: "2-digit",
              });
              setNotice(
                STOPPED.has(message.status)
                  ? `Your campaign was ${message.status === "completed" ? "completed" : message.status} by ${who} at ${at}: no calls come until it runs again.`
                  : `Your campaign is ${message.status} again (${who}, ${at}).`,
              );
              break;
            }
          }
        },
        setLink,
      ),
    [],
  );

  const setState = (state: "ready" | "paused") =>
    action.run(async () => {
      const isNews = states.asking();
      const reply = await api.agentState(
        state === "ready"
          ? { state, campaign_id: campaignId }
          : pauseReason
            ? { state, reason: pauseReason }
            : { state },
      );
      if (state === "ready") picked.current = false;
      if (isNews()) setAgent(reply.agent);
    });

  useShortcuts({
    r: campaignId ? () => setState("ready") : undefined,
    p: () => setState("paused"),
  });

  const state = agent?.state ?? "offline";
  const since = agent?.since ? Date.parse(agent.since) : now;
  const onCall = state === "on_call" && current && current.call.id === agent?.call_id;
  const wrapping = state === "wrap_up" && agent?.call_id;
  const ownCampaign = campaigns.find((c) => c.id === agent?.campaign_id);
  const campaignName = ownCampaign?.name;
  const codes = ownCampaign?.disposition_codes ?? DEFAULT_CODES;
  const withCall = state === "on_call" || state === "wrap_up";
  const reasonLabel = (code: string | null | undefined) =>
    code === AFTER_CALL
      ? "pause after the call"
      : code
        ? (reasons.find((reason) => reason.code === code)?.label ?? label(code))
        : undefined;
  const readyIn = agent?.ready_at ? Math.max(0, (Date.parse(agent.ready_at) - now) / 1000) : null;

  return (
    <Page title="Agent desktop">
      <div class="agent-bar card">
        <p role="status" aria-label="Agent state" class={`agent-state state-${state}`}>
          <span class="state-name">{label(state)}</span>
          {state === "paused" && agent?.reason && <span> ({reasonLabel(agent.reason)})</span>} ·{" "}
          <time>{duration((now - since) / 1000)}</time>
          {campaignName && <span class="muted"> · {campaignName}</span>}
        </p>
        {agent?.pause_after_call && (
          <p class="pending" aria-live="polite">
            Pausing after this call
            {agent.reason ? ` (${reasonLabel(agent.reason)})` : ""}: the disposition is still
            needed. Press <kbd>r</kbd> to stay ready instead.
          </p>
        )}
        {readyIn !== null && <p aria-live="polite">Ready again in {Math.ceil(readyIn)} s.</p>}
        <p class={`link link-${link}`} aria-live="polite">
          {link === "live"
            ? "Connected"
            : link === "connecting"
              ? "Connecting…"
              : "Connection lost: reconnecting… your state is kept meanwhile"}
        </p>
        <div class="field">
          <label for="agent-campaign">Campaign</label>
          <select
            id="agent-campaign"
            value={campaignId}
            onChange={(event) => {
              const value = (event.target as HTMLSelectElement).value;
              picked.current = true;
              setCampaignId(value);
              localStorage.setItem(CAMPAIGN_KEY, value);
            }}
          >
            <option value="">
              {campaigns.length ? "Choose a campaign" : "No running campaign"}
            </option>
            {campaigns.map((campaign) => (
              <option key={campaign.id} value={campaign.id}>
                {campaign.name} ({campaign.dial_mode})
              </option>
            ))}
          </select>
        </div>
        <div class="buttons">
          <button
            type="button"
            class="primary"
            disabled={!campaignId || action.busy}
            aria-keyshortcuts="r"
            onClick={() => setState("ready")}
          >
            Ready <kbd>r</kbd>
          </button>
          <button
            type="button"
            disabled={action.busy}
            aria-keyshortcuts="p"
            onClick={() => setState("paused")}
          >
            {withCall ? "Pause after this call" : "Pause"} <kbd>p</kbd>
          </button>
        </div>
        {reasons.length > 0 && (
          <div class="field">
            <label for="pause-reason">Pause reason</label>
            <select
              id="pause-reason"
              value={pauseReason}
              onChange={(event) => {
                const value = (event.target as HTMLSelectElement).value;
                setPauseReason(value);
                localStorage.setItem(REASON_KEY, value);
              }}
            >
              {reasons.map((reason) => (
                <option key={reason.code} value={reason.code}>
                  {reason.label}
                </option>
              ))}
            </select>
          </div>
        )}
        <Problem error={action.error} />
      </div>

      {notice && (
        <div class="card notice" role="alert">
          <p>{notice}</p>
          <button type="button" onClick={() => setNotice(undefined)}>
            Dismiss
          </button>
        </div>
      )}

      {preview && state === "reserved" && !agent?.call_id && (
        <PreviewCard
          key={preview.lead.id}
          preview={preview}
          now={now}
          // The next offer may arrive before this answer does: only this lead's card goes.
          onDone={() => setPreview((shown) => (shown?.lead.id === preview.lead.id ? null : shown))}
        />
      )}

      {offer && !onCall && state === "reserved" && (
        <section class="card" aria-labelledby="offer-title">
          <h2 id="offer-title">Dialling {leadName(offer.lead.fields) ?? offer.lead.phone}</h2>
          <p class="muted">The call connects to you when the lead answers.</p>
          <LeadDetails
            lead={offer.lead}
            attempt={(offer.call as { attempt?: number }).attempt ?? offer.lead.attempts}
            now={now}
          />
          <CallControls callId={offer.call.id} transfer={undefined} connected={false} />
          <EarlierCalls callId={offer.call.id} />
        </section>
      )}

      {onCall && current && (
        <section class="card call" aria-label="Current call">
          <h2>Current call</h2>
          <p class="timer">
            Talking for <time>{duration((now - current.since) / 1000)}</time>
          </p>
          {current.screenPop && (
            <p>
              <a href={current.screenPop} target="_blank" rel="noopener noreferrer">
                Open the lead in the CRM
              </a>
            </p>
          )}
          <CallControls
            connected
            callId={current.call.id}
            transfer={transfer?.callId === current.call.id ? transfer : undefined}
          />
          <LeadDetails
            lead={current.lead}
            attempt={(current.call as { attempt?: number }).attempt ?? current.lead.attempts}
            now={now}
          />
          <EarlierCalls callId={current.call.id} />
        </section>
      )}

      {(state === "ready" || state === "paused") && agent?.campaign_id && <ManualDial />}

      {wrapping && agent?.call_id && (
        <WrapUp
          key={agent.call_id}
          callId={agent.call_id}
          info={current?.call.id === agent.call_id ? current : undefined}
          codes={codes}
          onDone={() => setCurrent(undefined)}
        />
      )}

      <OwnCallbacks refreshKey={`${state}:${agent?.since ?? ""}`} />

      <TodayFigures refreshKey={`${state}:${agent?.since ?? ""}`} reasons={reasons} />

      <details class="card shortcuts">
        <summary>Keyboard shortcuts</summary>
        <ul>
          <li>
            <kbd>r</kbd> ready, <kbd>p</kbd> pause (gives a preview up; during a call or its
            wrap-up, pauses once the call is dispositioned)
          </li>
          <li>
            In preview: <kbd>d</kbd> dial, <kbd>s</kbd> skip. On a call: <kbd>h</kbd> hang up,{" "}
            <kbd>t</kbd> transfer
          </li>
          <li>
            In wrap-up:{" "}
            {codes
              .filter((code) => code.hotkey)
              .map((code, index) => (
                <span key={code.code}>
                  {index > 0 && ", "}
                  <kbd>{code.hotkey}</kbd> {code.label}
                </span>
              ))}
          </li>
        </ul>
      </details>
    </Page>
  );
}
