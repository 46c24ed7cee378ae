import { useEffect, useRef, useState } from "preact/hooks";
import { may } from "../access.ts";
import { type Agent, type Alert, api, type CampaignStats, type CampaignWithStats } from "../api.ts";
import { facts } from "../facts.ts";
import { duration, label, percent } from "../format.ts";
import { type Link, liveSocket, useToldInOrder } from "../live.ts";
import { governorHold } from "../rules.ts";
import { Page, Problem, refocusWithin, Table, useAction } from "../ui.tsx";
import { GovernorStatus } from "./rules.tsx";

const HOUR = 3_600_000;
const HISTORY_KEY = "dialer.wallboard.history";
/** A point of the chart; a whole minute from the server says what its rate is made of. */
type Sample = { at: number; rate: number; detail?: string };

/** The samples of the last hour this tab has seen, kept across reloads of the page. */
function storedHistory(): Map<string, Sample[]> {
  try {
    const cutoff = Date.now() - HOUR;
    const saved = JSON.parse(sessionStorage.getItem(HISTORY_KEY) ?? "{}") as Record<
      string,
      Sample[]
    >;
    return new Map(
      Object.entries(saved).map(([id, samples]) => [id, samples.filter((s) => s.at >= cutoff)]),
    );
  } catch {
    return new Map();
  }
}

/** The abandon rate over the last hour, against the campaign's limit. */
function AbandonChart({ samples, limit, now }: { samples: Sample[]; limit: number; now: number }) {
  const width = 160;
  const height = 40;
  const top = Math.max(limit * 2, ...samples.map((sample) => sample.rate), 0.01);
  // The minute under way ends after now: its point sits at the right edge.
  const x = (at: number) => Math.min(width, ((at - (now - HOUR)) / HOUR) * width);
  const y = (rate: number) => height - (rate / top) * (height - 2) - 1;
  const points = samples.map((sample) => `${x(sample.at).toFixed(1)},${y(sample.rate).toFixed(1)}`);
  const last = samples.at(-1);
  if (last) points.push(`${width},${y(last.rate).toFixed(1)}`);
  const over = last !== undefined && last.rate > limit;
  return (
    <svg
      class="chart"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={`Abandon rate over the last hour: ${last ? percent(last.rate) : "no data"} now, limit ${percent(limit)}`}
    >
      <rect x="0" y="0" width={width} height={height} class="chart-bg" />
      <line x1="0" x2={width} y1={y(limit)} y2={y(limit)} class="chart-limit" />
      {points.length > 1 && (
        <polyline points={points.join(" ")} class={over ? "chart-line over" : "chart-line"} />
      )}
      {/* A minute's numbers on hover: its point names them. */}
      {samples.map(
        (sample) =>
          sample.detail && (
            <circle key={sample.at} cx={x(sample.at)} cy={y(sample.rate)} r="3" class="chart-point">
              <title>{sample.detail}</title>
            </circle>
          ),
      )}
    </svg>
  );
}

function LeadsByState({ stats }: { stats: CampaignStats | undefined }) {
  if (!stats) return <span class="muted">–</span>;
  const shown = facts.leadStates.filter((state) => (stats.leads_by_state[state] ?? 0) > 0);
  return (
    <span class="leads">
      <strong>{stats.leads_total}</strong>
      {shown.map((state) => (
        <span key={state} class={`pill lead-${state}`}>
          {state} {stats.leads_by_state[state]}
        </span>
      ))}
    </span>
  );
}

/** Stopping is for good: a stopped campaign is not started again. */
const confirmed = (verb: string, name: string) =>
  verb !== "stop" ||
  window.confirm(
    `Stop ${name}? A stopped campaign cannot be started again; pause it to resume later.`,
  );

type Board = Awaited<ReturnType<typeof api.agentBoard>>;
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The lead of an agent's call, by name when its columns give one. */
const leadOf = (call: NonNullable<Board["agents"][number]["call"]>) => {
  const fields = Object.fromEntries(
    Object.entries(call.lead_fields).map(([key, value]) => [key.toLowerCase(), value]),
  );
  const name = fields.name ?? [fields.first_name, fields.last_name].filter(Boolean).join(" ");
  return name ? `${name} (${call.phone})` : call.phone;
};

/** Pause or sign out an agent: the agent's desktop says who did it. */
function SupervisorActions({ agent, onDone }: { agent: Agent; onDone: () => void }) {
  const action = useAction();
  const buttons = useRef<HTMLDivElement>(null);
  const act = (state: "paused" | "offline") =>
    action
      .run(() => api.superviseAgent(agent.user_id, { state }))
      .then((done) => done && onDone())
      .finally(() => refocusWithin(buttons.current));
  const withCall = agent.state === "on_call" || agent.state === "wrap_up";
  const pause = withCall ? "Pause after call" : "Pause";
  const who = agent.email ?? "the agent";
  return (
    <div class="buttons" ref={buttons}>
      <button
        type="button"
        disabled={action.busy || agent.state === "paused" || agent.pause_after_call}
        aria-label={`${pause}: ${who}`}
        onClick={() => act("paused")}
      >
        {pause}
      </button>
      <button
        type="button"
        disabled={action.busy || withCall}
        aria-label={`Sign out: ${who}`}
        onClick={() => act("offline")}
      >
        Sign out
      </button>
      <Problem error={action.error} />
    </div>
  );
}

/** The campaign's abandon rate minute by minute over the last hour, from the server. */
async function hourOf(campaignId: string): Promise<Sample[]> {
  const from = new Date(Date.now() - HOUR).toISOString();
  const { items } = await api.statsHistory(campaignId, from);
  return items.flatMap((minute) => {
    if (minute.abandon_rate === null) return [];
    const start = new Date(minute.minute).toLocaleTimeString(undefined, {
      hour: "2-digit",
      minute: "2-digit",
    });
    const people = minute.answered + minute.abandoned;
    return [
      {
        at: Date.parse(minute.minute) + 60_000,
        rate: minute.abandon_rate,
        detail: `${start}: ${minute.abandoned} abandoned of ${people} answered (${percent(minute.abandon_rate)})`,
      },
    ];
  });
}

export function Wallboard() {
  const [campaigns, setCampaigns] = useState(new Map<string, CampaignWithStats>());
  const [history, setHistory] = useState(storedHistory);
  const [agents, setAgents] = useState(new Map<string, Agent>());
  const [board, setBoard] = useState<Board | undefined>();
  const [alerts, setAlerts] = useState(new Map<string, Alert>());
  const [boardKey, setBoardKey] = useState(0);
  const [link, setLink] = useState<Link>("connecting");
  const [now, setNow] = useState(Date.now());
  const action = useAction();
  // Another user's change, or the dialer's, may be told before the answer to ours lands.
  const statuses = useToldInOrder();

  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);

  useEffect(() => {
    try {
      sessionStorage.setItem(HISTORY_KEY, JSON.stringify(Object.fromEntries(history)));
    } catch {}
  }, [history]);

  // The agents' calls and figures: every 15 s, and soon after any agent changes state.
  useEffect(() => {
    let live = true;
    const load = () =>
      api.agentBoard(browserZone).then(
        (next) => live && setBoard(next),
        () => {},
      );
    const soon = setTimeout(load, 300);
    const timer = setInterval(load, 15_000);
    return () => {
      live = false;
      clearTimeout(soon);
      clearInterval(timer);
    };
  }, [boardKey]);

  useEffect(() => {
    const record = (id: string, stats: CampaignStats) =>
      setHistory((before) => {
        const next = new Map(before);
        const cutoff = Date.now() - HOUR;
        const samples = (next.get(id) ?? []).filter((sample) => sample.at >= cutoff);
        const last = samples.at(-1);
        // One point each 10 s at most (stats come up to 4 times a second): the latest wins.
        if (last && Date.now() - last.at < 10_000)
          samples[samples.length - 1] = { ...last, rate: stats.abandon_rate };
        else samples.push({ at: Date.now(), rate: stats.abandon_rate });
        next.set(id, samples);
        return next;
      });
    const known = new Set<string>();
    const put = (campaign: CampaignWithStats) => {
      known.add(campaign.id);
      setCampaigns((before) =>
        new Map(before).set(campaign.id, { ...before.get(campaign.id), ...campaign }),
      );
    };
    // The snapshot carries no stats: each campaign's come from the API once, then live.
    const fetchStats = async (ids: string[]) => {
      for (let i = 0; i < ids.length; i += 4) {
        await Promise.all(
          ids.slice(i, i + 4).map((id) =>
            api.campaign(id).then(
              async ({ campaign }) => {
                put(campaign);
                // The chart starts whole: the last hour from the server, then live.
                const earlier = await hourOf(campaign.id).catch(() => []);
                setHistory((before) => {
                  const kept = before.get(campaign.id) ?? [];
                  const since = earlier.at(-1)?.at ?? 0;
                  return new Map(before).set(campaign.id, [
                    ...earlier,
                    ...kept.filter((sample) => sample.at > since),
                  ]);
                });
                if (campaign.stats) record(campaign.id, campaign.stats);
              },
              () => {},
            ),
          ),
        );
      }
    };
    // A campaign created after the snapshot sends nothing until its first status change.
    const newcomers = setInterval(() => {
      api.campaigns({ limit: 500 }).then(
        (page) => void fetchStats(page.items.filter((c) => !known.has(c.id)).map((c) => c.id)),
        () => {},
      );
    }, 30_000);
    api.alerts().then(
      (page) => setAlerts(new Map(page.items.map((alert) => [alert.id, alert]))),
      () => {},
    );
    const stop = liveSocket(
      "/ws/supervisor",
      (message) => {
        switch (message.type) {
          case "alert":
            setAlerts((before) => {
              const next = new Map(before);
              if (message.alert.cleared_at) next.delete(message.alert.id);
              else next.set(message.alert.id, message.alert);
              return next;
            });
            break;
          case "snapshot":
            statuses.told();
            for (const campaign of message.campaigns) known.add(campaign.id);
            setCampaigns(
              (before) =>
                new Map(message.campaigns.map((c) => [c.id, { ...before.get(c.id), ...c }])),
            );
            setAgents(new Map(message.agents.map((agent) => [agent.user_id, agent])));
            void fetchStats(message.campaigns.map((c) => c.id));
            break;
          case "campaign.status":
            statuses.told();
            setCampaigns((before) => {
              const known = before.get(message.campaign_id);
              if (!known) {
                void fetchStats([message.campaign_id]);
                return before;
              }
              return new Map(before).set(known.id, { ...known, status: message.status });
            });
            break;
          case "campaign.stats":
            setCampaigns((before) => {
              const known = before.get(message.campaign_id);
              if (!known) {
                void fetchStats([message.campaign_id]);
                return before;
              }
              return new Map(before).set(known.id, { ...known, stats: message.stats });
            });
            record(message.campaign_id, message.stats);
            break;
          case "agent.state":
            setBoardKey((key) => key + 1);
            setAgents((before) => {
              const next = new Map(before);
              if (message.agent.state === "offline") next.delete(message.agent.user_id);
              else next.set(message.agent.user_id, message.agent);
              return next;
            });
            break;
        }
      },
      setLink,
    );
    return () => {
      clearInterval(newcomers);
      stop();
    };
  }, []);

  const act = (id: string, verb: "start" | "pause" | "stop", group: Element | null) =>
    confirmed(verb, campaigns.get(id)?.name ?? "this campaign") &&
    action
      .run(async () => {
        const isNews = statuses.asking();
        const { campaign } = await api.campaignAction(id, { action: verb });
        if (!isNews()) return;
        setCampaigns((before) => new Map(before).set(id, { ...before.get(id), ...campaign }));
      })
      .finally(() => refocusWithin(group));

  const rows = [...campaigns.values()].sort((a, b) => a.name.localeCompare(b.name));
  const agentRows = [...agents.values()].sort((a, b) =>
    (a.email ?? "").localeCompare(b.email ?? ""),
  );
  const counts = facts.agentStates
    .filter((state) => state !== "offline")
    .map((state) => [state, agentRows.filter((agent) => agent.state === state).length] as const);
  const reasons = Object.entries(board?.counts.paused_by_reason ?? {});
  const boardOf = new Map(board?.agents.map((row) => [row.agent.user_id, row]));
  const canAct = may("campaigns.status");
  const canSupervise = may("agents.supervise");
  const held = rows.filter((campaign) => governorHold(campaign.stats?.dial_ratio_reason));

  return (
    <Page title="Wallboard">
      <p class={`link link-${link}`} aria-live="polite">
        {link === "live"
          ? "Live"
          : link === "connecting"
            ? "Connecting…"
            : "Connection lost: reconnecting…"}
      </p>
      {alerts.size > 0 && (
        <section class="card alerts" aria-labelledby="alerts-title">
          <h2 id="alerts-title">Alerts</h2>
          <ul>
            {[...alerts.values()].map((alert) => (
              <li key={alert.id} data-alert={alert.kind}>
                <strong>{label(alert.kind)}</strong>: {alert.message}{" "}
                <span class="muted">since {new Date(alert.raised_at).toLocaleTimeString()}</span>
              </li>
            ))}
          </ul>
        </section>
      )}
      <section class="card" aria-labelledby="campaigns-title">
        <h2 id="campaigns-title">Campaigns</h2>
        {/* One announcement when a campaign is held or let go, not one per stats message. */}
        <p class="small governor-summary" aria-live="polite">
          {held.length > 0 &&
            `Held by the abandon-rate governor: ${held.map((campaign) => campaign.name).join(", ")}.`}
        </p>
        <Table label="Campaigns" stacked>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Leads by state</th>
              <th scope="col">In flight</th>
              <th scope="col">Dial ratio</th>
              <th scope="col">Answer rate</th>
              <th scope="col">Abandon rate (limit)</th>
              <th scope="col">Last hour</th>
              {canAct && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {rows.map((campaign) => {
              const stats = campaign.stats;
              const allowed = facts.campaignActions[campaign.status] ?? [];
              const over = stats && stats.abandon_rate > campaign.max_abandon_rate;
              return (
                <tr key={campaign.id} data-campaign={campaign.id}>
                  <th scope="row">
                    <a href={`/campaigns/${campaign.id}`}>{campaign.name}</a>
                  </th>
                  <td data-label="Status">
                    <span class={`status status-${campaign.status}`} data-status>
                      {campaign.status}
                    </span>
                  </td>
                  <td data-label="Leads">
                    <LeadsByState stats={stats} />
                  </td>
                  <td data-in-flight data-label="In flight">
                    {stats?.calls_in_flight ?? "–"}
                  </td>
                  <td data-label="Dial ratio">
                    <div>
                      {stats ? stats.dial_ratio.toFixed(2) : "–"}
                      {stats && governorHold(stats.dial_ratio_reason) === undefined && (
                        <div class="muted small">{stats.dial_ratio_reason}</div>
                      )}
                      <GovernorStatus reason={stats?.dial_ratio_reason} />
                    </div>
                  </td>
                  <td data-label="Answer rate">
                    {stats?.recent_calls === 0 ? "– (no calls yet)" : percent(stats?.answer_rate)}
                  </td>
                  <td class={over ? "over" : undefined} data-label="Abandon rate">
                    <span>
                      {percent(stats?.abandon_rate)}{" "}
                      <span class="muted">({percent(campaign.max_abandon_rate)})</span>
                    </span>
                  </td>
                  <td data-label="Last hour">
                    <AbandonChart
                      samples={history.get(campaign.id) ?? []}
                      limit={campaign.max_abandon_rate}
                      now={now}
                    />
                  </td>
                  {canAct && (
                    <td data-label="Actions">
                      <div class="row-actions">
                        {(["start", "pause", "stop"] as const).map((verb) => (
                          <button
                            key={verb}
                            type="button"
                            disabled={!allowed.includes(verb) || action.busy}
                            aria-label={`${verb[0]?.toUpperCase()}${verb.slice(1)} ${campaign.name}`}
                            onClick={(event) =>
                              act(campaign.id, verb, event.currentTarget.parentElement)
                            }
                          >
                            {`${verb[0]?.toUpperCase()}${verb.slice(1)}`}
                          </button>
                        ))}
                      </div>
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </Table>
        {rows.length === 0 && <p class="muted">No campaign yet.</p>}
        <Problem error={action.error} />
      </section>
      <section class="card" aria-labelledby="agents-title">
        <h2 id="agents-title">Agents</h2>
        <ul class="counts" aria-label="Agents by state">
          {counts.map(([state, count]) => (
            <li key={state} class={`state-${state}`}>
              <strong>{count}</strong> {label(state)}
            </li>
          ))}
        </ul>
        {reasons.length > 0 && (
          <ul class="counts" aria-label="Paused agents by reason">
            {reasons.map(([reason, count]) => (
              <li key={reason}>
                <strong>{count}</strong> {label(reason)}
              </li>
            ))}
          </ul>
        )}
        <Table label="Agents" stacked>
          <thead>
            <tr>
              <th scope="col">Agent</th>
              <th scope="col">State</th>
              <th scope="col">Campaign</th>
              <th scope="col">Time in state</th>
              <th scope="col">Call</th>
              <th scope="col">Calls today</th>
              <th scope="col">Average talk / wrap-up</th>
              {canSupervise && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {agentRows.map((agent) => {
              const row = boardOf.get(agent.user_id);
              const call = row?.call?.id === agent.call_id ? row?.call : null;
              const figures = row?.figures;
              return (
                <tr key={agent.user_id} data-agent={agent.email ?? ""}>
                  <th scope="row">{agent.email ?? "–"}</th>
                  <td data-label="State">
                    <span class={`state state-${agent.state}`}>{label(agent.state)}</span>
                    {agent.reason && <span class="muted"> ({label(agent.reason)})</span>}
                    {agent.pause_after_call && <span class="muted"> (pausing after the call)</span>}
                  </td>
                  <td data-label="Campaign">
                    {(agent.campaign_id && campaigns.get(agent.campaign_id)?.name) || "–"}
                  </td>
                  <td data-label="Time in state">
                    {agent.since ? duration((now - Date.parse(agent.since)) / 1000) : "–"}
                  </td>
                  <td data-label="Call">
                    {call ? (
                      <>
                        {leadOf(call)}
                        {call.answered_at && (
                          <span class="muted">
                            {" "}
                            · {duration((now - Date.parse(call.answered_at)) / 1000)}
                          </span>
                        )}
                      </>
                    ) : (
                      "–"
                    )}
                  </td>
                  <td data-label="Calls today">{figures?.calls ?? "–"}</td>
                  <td data-label="Average talk / wrap-up">
                    {figures?.average_talk_seconds != null
                      ? `${duration(figures.average_talk_seconds)} / ${duration(figures.average_wrap_up_seconds ?? 0)}`
                      : "–"}
                  </td>
                  {canSupervise && (
                    <td data-label="Actions">
                      <SupervisorActions
                        agent={agent}
                        onDone={() => setBoardKey((key) => key + 1)}
                      />
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </Table>
        {agentRows.length === 0 && <p class="muted">No agent signed in.</p>}
      </section>
    </Page>
  );
}
