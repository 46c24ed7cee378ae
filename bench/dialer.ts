/**
 * Dialer benchmark: scripted edge nodes and agents against the real server on PostgreSQL 15.
 *
 *   bun bench/dialer.ts [--duration 60] [--nodes 20] [--agents 500] [--campaigns 10]
 *                       [--leads 60000] [--answer-rate 0.3] [--rate 0] [--json FILE]
 *                       [--cpu-prof DIR] [--app DIR] [--profiles us,uk,ca] [--webhooks]
 *                       [--pg-settings name=value,…] [--warm-wal N] [--pg-stats FILE]
 *
 * A throwaway PostgreSQL cluster and one server process (`bun src/index.ts`, 127.0.0.1) are
 * started. The bootstrap admin creates `--campaigns` progressive campaigns (dial_ratio 3,
 * calling window open all day) and imports the leads through the API; the agents are written
 * to the database directly and get tokens signed with the server's secret (hashing 500
 * passwords would take the machine a minute). Every agent goes `ready` on one campaign.
 *
 * Then, for `--duration` seconds, each node loops on `jobs/claim` (max 50, wait_ms 1000) and
 * plays every job it gets as a call: `ringing` at once, a ring of 0.3–0.8 s, then `answered`
 * with probability `--answer-rate` (a conversation of 1–2 s with the agent the reply names,
 * then `ended` and the agent's disposition `completed`), else `ended` with NO_ANSWER. Each
 * attempt is a claim, `ringing`, maybe `answered`, `ended` and its CDR.
 *
 * With `--rate N` the nodes together take at most N jobs a second (each node its share,
 * asking for no more than it is due), so latencies are measured at a given load rather than
 * at the most the server can take; 0 (the default) claims as fast as jobs come.
 *
 * Reported: call attempts started per second (jobs handed out), calls ended per second, the
 * round trip of every node event (p50, p99), of claims that returned jobs, and of
 * dispositions, and the lead-to-claim latency: how long a ready agent's campaign waited from
 * the agent becoming free until a claim handed out its next call.
 *
 * `--profiles` gives the campaigns regulatory profiles in turn (none are sent without it, as a
 * revision before profiles would refuse the field). Under a profile the leads' zone is one
 * where it is now midday-ish, so that its hours are open whenever the benchmark runs; a fifth
 * of the numbers are Florida's (305), whose attempt cap the claim counts; `uk` campaigns check
 * their redial cool-downs on every candidate. Their governors start with no abandon budget and
 * hold the campaigns to calls with an agent reserved for each until answers earn one.
 *
 * `--answered N` writes, for each campaign before it starts, N calls answered by agents in
 * the last hour (CDRs only), so that a profile's governor starts with a budget of its limit ×
 * N abandons, as a campaign that has been dialling for a while has, instead of none.
 *
 * `--pg-settings` starts the PostgreSQL cluster with those settings instead of the stock ones
 * (`wal_init_zero=off`, say, which README advises where bursts of writes make new WAL files).
 *
 * `--warm-wal N`, before dialling, switches to N new WAL files and checkpoints, which turns the
 * files into recycled ones, as a server that has been running a while has them: otherwise a
 * new cluster creates (and fills with zeros) each file the run writes, while commits wait.
 *
 * `--pg-stats FILE` loads `pg_stat_statements` into the cluster and, at the end, writes the
 * statements that took the database's time (calls, time, WAL written, the text's start) to FILE
 * as JSON: what each of the dialer's statements costs, side by side with another revision's.
 *
 * `--app DIR` runs the `src/index.ts` of another checkout (`git archive <rev> | tar -x -C DIR`,
 * `node_modules` linked in), for a revision side by side with this one.
 *
 * `--webhooks` starts a receiver (bench/webhook-receiver.ts, its own process) and, before
 * anything else, registers an endpoint for every event type pointing to it (the server runs
 * with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true). Reported besides: the events received a second
 * while dialling, the delay from each event's payload `timestamp` (the time of the change: for
 * a node's event the `at` it sent) to its receipt, for the events of the dialling window,
 * the deliveries still pending when dialling ended, duplicates, and a sample of signatures
 * checked with the `standardwebhooks` library. `--webhook-events a,b` subscribes to those
 * types only (a CRM's set, say, without the agents' states).
 */
import { createHmac, randomUUID } from "node:crypto";
import postgres from "postgres";
import {
  Api,
  byTenSeconds,
  JWT_SECRET,
  median,
  option,
  percentile,
  progress,
  round,
  setAppRoot,
  startCluster,
  startServer,
  table,
} from "./campaigns-import-common.ts";
import {
  ALL_EVENT_TYPES,
  epochNow,
  type Receiver,
  startReceiver,
  verifySamples,
  waitUntil,
} from "./lib/webhooks.ts";
import type { ReceivedRecord } from "./webhook-receiver.ts";

const args = process.argv.slice(2);
const DURATION_S = Number(option(args, "duration", "60"));
const NODES = Number(option(args, "nodes", "20"));
const AGENTS = Number(option(args, "agents", "500"));
const CAMPAIGNS = Number(option(args, "campaigns", "10"));
const LEADS = Number(option(args, "leads", "60000"));
const ANSWER_RATE = Number(option(args, "answer-rate", "0.3"));
const RATE = Number(option(args, "rate", "0"));
const JSON_OUT = option(args, "json", "");
const EARLIER_ANSWERS = Number(option(args, "answered", "0"));
const WEBHOOKS = args.includes("--webhooks");
/** The event types the endpoint takes: every one by default. */
const WEBHOOK_EVENTS = option(args, "webhook-events", ALL_EVENT_TYPES.join(","))
  .split(",")
  .filter((name) => name !== "");
const PG_SETTINGS = option(args, "pg-settings", "")
  .split(",")
  .filter((setting) => setting !== "");
const WARM_WAL_FILES = Number(option(args, "warm-wal", "0"));
const PG_STATS_OUT = option(args, "pg-stats", "");
const PROFILES = option(args, "profiles", "")
  .split(",")
  .filter((name) => name !== "");

/** A zone where the local hour is now between 10:00 and 18:00: every profile's hours are open. */
function middayZone(): string {
  const zones = [
    "America/New_York",
    "America/Los_Angeles",
    "Pacific/Honolulu",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Europe/London",
    "Australia/Sydney",
  ];
  const hourIn = (zone: string) =>
    Number(
      new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", hour12: false }).format(
        new Date(),
      ),
    );
  return zones.find((zone) => hourIn(zone) >= 10 && hourIn(zone) < 18) ?? "America/New_York";
}
setAppRoot(option(args, "app", ""));

const between = (low: number, high: number) => low + Math.random() * (high - low);

/** An HS256 token as the server issues them: claims sub, tid, email, role, iat, exp. */
function agentToken(user: { id: string; tenantId: string; email: string }) {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const body = `${encode({ alg: "HS256", typ: "JWT" })}.${encode({
    sub: user.id,
    tid: user.tenantId,
    email: user.email,
    role: "agent",
    iat: now,
    exp: now + 3600,
  })}`;
  return `${body}.${createHmac("sha256", JWT_SECRET).update(body).digest("base64url")}`;
}

async function post(base: string, token: string, path: string, body: unknown) {
  const started = performance.now();
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const elapsed = performance.now() - started;
  if (!response.ok)
    throw new Error(`POST ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON is read field by field.
  return { body: JSON.parse(text) as any, elapsed };
}

const cluster = startCluster(
  PG_STATS_OUT ? [...PG_SETTINGS, "shared_preload_libraries=pg_stat_statements"] : PG_SETTINGS,
);
const databaseUrl = cluster.url();
progress("starting the server on PostgreSQL");
const cpuProfDir = option(args, "cpu-prof", "");
const server = await startServer(
  { databaseUrl },
  WEBHOOKS ? { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" } : {},
  cpuProfDir ? { bunFlags: ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`, "--cpu-prof-md"] } : {},
);
const base = server.baseUrl;
const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
if (PG_STATS_OUT) await sql`create extension if not exists pg_stat_statements`;
const receiver: Receiver | undefined = WEBHOOKS ? await startReceiver() : undefined;

/** Events an endpoint's cursor has not yet passed, and retries not yet delivered. */
const pendingDeliveries = async () =>
  (
    await sql`select (
        select count(*) from webhook_events e
        join webhook_endpoints w on w.tenant_id = e.tenant_id and e.type = any(w.event_types)
        join webhook_cursors c on c.endpoint_id = w.id
        where (e.xid, e.seq) > (c.xid, c.seq))::int
      + (select count(*) from webhook_deliveries where status = 'pending')::int as n`
  )[0]?.n as number;

/** `count` calls of the campaign answered by agents over the last hour, as their CDRs. */
async function seedAnswers(campaignId: string, listId: string, tenantId: string, count: number) {
  await sql`
    insert into cdrs (id, tenant_id, call_id, campaign_id, lead_list_id, lead_id, phone,
      caller_id, attempt, outcome, hangup_cause, started_at, answered_at, ended_at,
      ring_seconds, talk_seconds, created_at)
    select gen_random_uuid(), ${tenantId}::uuid, gen_random_uuid(), ${campaignId}::uuid,
      ${listId}::uuid, gen_random_uuid(), '+14155550000', '+14155550100', 1, 'answered',
      'NORMAL_CLEARING', now() - interval '1 hour' + i * (interval '3000 seconds' / ${count}),
      now() - interval '1 hour' + i * (interval '3000 seconds' / ${count}) + interval '5 seconds',
      now() - interval '1 hour' + i * (interval '3000 seconds' / ${count}) + interval '65 seconds',
      5, 60, now()
    from generate_series(1, ${count}) as i`;
}

try {
  const admin = await Api.login(base);
  const tenantId = await admin.tenantId();
  let webhookSecret = "";
  if (receiver) {
    const created = await admin.call("POST", "/api/v1/webhooks", {
      url: receiver.url,
      event_types: WEBHOOK_EVENTS,
    });
    webhookSecret = created.data.secret as string;
  }
  progress(`creating ${CAMPAIGNS} campaigns and importing ${LEADS} leads`);
  const campaignIds: string[] = [];
  for (let c = 0; c < CAMPAIGNS; c++) {
    const profile = PROFILES[c % PROFILES.length];
    const created = await admin.call("POST", "/api/v1/campaigns", {
      name: `Bench ${c}`,
      dial_mode: "progressive",
      dial_ratio: 3,
      calling_window: { start: "00:00", end: "23:59" },
      max_attempts: 1,
      ...(profile ? { regulatory_profile: profile } : {}),
    });
    const campaignId = created.data.campaign.id as string;
    campaignIds.push(campaignId);
    if (profile) await admin.recordAbandonMessage(campaignId);
    const listId = await admin.createList(campaignId, `Bench list ${c}`);
    const perCampaign = Math.ceil(LEADS / CAMPAIGNS);
    const rows = ["phone,timezone"];
    const zone = profile ? middayZone() : "America/New_York";
    for (let i = 0; i < perCampaign; i++) {
      const areaCode = profile && i % 5 === 0 ? "305" : "415";
      rows.push(`+1${areaCode}${2_000_000 + c * perCampaign + i},${zone}`);
    }
    const form = new FormData();
    form.append("phone_column", "phone");
    form.append("timezone_column", "timezone");
    form.append("file", new Blob([rows.join("\n")], { type: "text/csv" }), "leads.csv");
    await admin.call(
      "POST",
      `/api/v1/campaigns/${campaignId}/lead-lists/${listId}/import`,
      undefined,
      {
        body: form,
      },
    );
    if (EARLIER_ANSWERS > 0) await seedAnswers(campaignId, listId, tenantId, EARLIER_ANSWERS);
    await admin.call("POST", `/api/v1/campaigns/${campaignId}/status`, { action: "start" });
  }

  progress(`registering ${NODES} nodes and ${AGENTS} agents`);
  const nodeKeys: string[] = [];
  for (let n = 0; n < NODES; n++) {
    const node = await admin.call("POST", "/api/v1/edge-nodes", {
      name: `edge-${n}`,
      max_concurrent_calls: 200,
    });
    nodeKeys.push(node.data.key as string);
  }
  const hash = await Bun.password.hash("not-used-for-login");
  const agents = Array.from({ length: AGENTS }, (_, i) => ({
    id: randomUUID(),
    tenantId,
    email: `bench-agent-${i}@bench.test`,
    campaignId: campaignIds[i % CAMPAIGNS] as string,
  }));
  await sql`insert into users ${sql(
    agents.map((agent) => ({
      id: agent.id,
      tenant_id: tenantId,
      email: agent.email,
      password_hash: hash,
      role: "agent",
      status: "active",
      must_change_password: false,
      created_at: new Date(),
      updated_at: new Date(),
    })),
  )}`;
  const tokens = new Map(agents.map((agent) => [agent.id, agentToken(agent)]));
  /** When each campaign last had an agent become free, waiting for a claim to serve it. */
  const freeSince = new Map<string, number[]>();
  const agentCampaign = new Map(agents.map((agent) => [agent.id, agent.campaignId]));
  for (const agent of agents) {
    await post(base, tokens.get(agent.id) as string, "/api/v1/agents/me/state", {
      state: "ready",
      campaign_id: agent.campaignId,
    });
  }

  const eventTimes: number[] = [];
  /** When each of `eventTimes` was answered, in ms since dialling began. */
  const eventAt: number[] = [];
  const claimTimes: number[] = [];
  const dispositionTimes: number[] = [];
  const leadToClaim: number[] = [];
  let attempts = 0;
  let ended = 0;
  let answered = 0;
  let abandoned = 0;
  let errors = 0;
  const failed = (error: unknown) => {
    // The first few are shown: an error here is a defect to look into, not noise.
    if (++errors <= 5) console.error(`request error: ${String(error)}`);
  };
  const inFlight = new Set<Promise<void>>();

  const nodeEvent = async (key: string, callId: string, type: string, extra = {}) => {
    const reply = await post(base, key, `/api/v1/nodes/calls/${callId}/events`, {
      type,
      at: new Date().toISOString(),
      ...extra,
    });
    eventTimes.push(reply.elapsed);
    eventAt.push(performance.now() - (deadline - DURATION_S * 1000));
    return reply.body.data.call;
  };

  const playCall = async (key: string, job: { call_id: string; campaign_id: string }) => {
    await nodeEvent(key, job.call_id, "ringing");
    await Bun.sleep(between(300, 800));
    if (Math.random() >= ANSWER_RATE) {
      await nodeEvent(key, job.call_id, "ended", { hangup_cause: "NO_ANSWER" });
      ended++;
      return;
    }
    const call = await nodeEvent(key, job.call_id, "answered");
    if (call.action === "hangup" || !call.agent_id) {
      abandoned++;
      await nodeEvent(key, job.call_id, "ended", { hangup_cause: "NORMAL_CLEARING" });
      ended++;
      return;
    }
    answered++;
    await Bun.sleep(between(1000, 2000));
    await nodeEvent(key, job.call_id, "ended", {
      hangup_cause: "NORMAL_CLEARING",
      node_bridge_ms: 300,
    });
    ended++;
    const disposition = await post(
      base,
      tokens.get(call.agent_id) as string,
      `/api/v1/calls/${job.call_id}/disposition`,
      { disposition: "completed" },
    );
    dispositionTimes.push(disposition.elapsed);
    const campaign = agentCampaign.get(call.agent_id) as string;
    freeSince.set(campaign, [...(freeSince.get(campaign) ?? []), performance.now()]);
  };

  const deadline = performance.now() + DURATION_S * 1000;
  const nodeLoop = async (key: string) => {
    const started = performance.now();
    let taken = 0;
    while (performance.now() < deadline) {
      try {
        let max = 50;
        if (RATE > 0) {
          const due = Math.floor(((performance.now() - started) / 1000) * (RATE / NODES)) - taken;
          if (due < 1) {
            await Bun.sleep(10);
            continue;
          }
          max = Math.min(50, due);
        }
        const reply = await post(base, key, "/api/v1/nodes/jobs/claim", { max, wait_ms: 1000 });
        const jobs = reply.body.data.jobs as { call_id: string; campaign_id: string }[];
        taken += jobs.length;
        if (jobs.length > 0) claimTimes.push(reply.elapsed);
        const now = performance.now();
        for (const job of jobs) {
          attempts++;
          const waiting = freeSince.get(job.campaign_id);
          const since = waiting?.shift();
          if (since !== undefined) leadToClaim.push(now - since);
          const call = playCall(key, job).catch(failed);
          inFlight.add(call);
          void call.finally(() => inFlight.delete(call));
        }
      } catch (error) {
        failed(error);
        await Bun.sleep(100);
      }
    }
  };

  if (WARM_WAL_FILES > 0) {
    progress(`making ${WARM_WAL_FILES} WAL files to recycle`);
    for (let n = 0; n < WARM_WAL_FILES; n++)
      // A commit with a transaction id writes a record, without which no switch is made.
      await sql`select txid_current(), pg_switch_wal()`;
    await sql`checkpoint`;
  }
  progress(`dialing for ${DURATION_S} s with ${NODES} nodes and ${AGENTS} agents`);
  const started = performance.now();
  const dialStartedAt = epochNow();
  const receiverCpuBefore = receiver?.cpuSeconds() ?? 0;
  await Promise.all(nodeKeys.map((key) => nodeLoop(key)));
  const attemptsAtDeadline = attempts;
  const endedAtDeadline = ended;
  const elapsedS = (performance.now() - started) / 1000;
  const dialEndedAt = epochNow();
  const receiverCores = receiver ? (receiver.cpuSeconds() - receiverCpuBefore) / elapsedS : 0;
  const pendingAtDeadline = receiver ? await pendingDeliveries() : 0;
  progress("letting calls in flight finish");
  await Promise.all([...inFlight]);
  const webhooks = receiver
    ? await webhookFigures(receiver, webhookSecret, {
        from: dialStartedAt,
        to: dialEndedAt,
        pendingAtDeadline,
        receiverCores,
      })
    : undefined;

  const cdrs = (await sql`select count(*)::int as n from cdrs`)[0]?.n as number;
  const result = {
    date: new Date().toISOString().slice(0, 10),
    duration_s: round(elapsedS, 1),
    nodes: NODES,
    agents: AGENTS,
    campaigns: CAMPAIGNS,
    attempts_per_s: round(attemptsAtDeadline / elapsedS, 0),
    ended_per_s: round(endedAtDeadline / elapsedS, 0),
    attempts: attempts,
    answered,
    abandoned,
    cdrs,
    errors,
    event_ms: {
      p50: round(percentile(eventTimes, 50), 1),
      p99: round(percentile(eventTimes, 99), 1),
      p99_by_10s: byTenSeconds(eventTimes, eventAt).map((window) =>
        round(percentile(window, 99), 1),
      ),
    },
    claim_ms: {
      p50: round(percentile(claimTimes, 50), 1),
      p99: round(percentile(claimTimes, 99), 1),
    },
    disposition_ms: {
      p50: round(percentile(dispositionTimes, 50), 1),
      p99: round(percentile(dispositionTimes, 99), 1),
    },
    lead_to_claim_ms: {
      p50: round(percentile(leadToClaim, 50), 0),
      p99: round(percentile(leadToClaim, 99), 0),
      median: round(median(leadToClaim), 0),
    },
    webhooks,
  };
  console.log(
    table(
      ["measure", "value"],
      [
        ["target attempts / s (--rate)", RATE > 0 ? RATE : "as fast as jobs come"],
        ["regulatory profiles (--profiles)", PROFILES.join(", ") || "none sent"],
        ["earlier answered calls a campaign (--answered)", EARLIER_ANSWERS],
        ["PostgreSQL settings (--pg-settings)", PG_SETTINGS.join(", ") || "stock"],
        ["WAL files made to recycle first (--warm-wal)", WARM_WAL_FILES],
        ["call attempts started / s", result.attempts_per_s],
        ["calls ended / s", result.ended_per_s],
        ["attempts (answered, abandoned)", `${attempts} (${answered}, ${abandoned})`],
        ["CDRs written", cdrs],
        ["node event round trip p50 / p99 ms", `${result.event_ms.p50} / ${result.event_ms.p99}`],
        ["node event p99 ms by 10 s of dialling", result.event_ms.p99_by_10s.join(", ")],
        ["claim (with jobs) p50 / p99 ms", `${result.claim_ms.p50} / ${result.claim_ms.p99}`],
        ["disposition p50 / p99 ms", `${result.disposition_ms.p50} / ${result.disposition_ms.p99}`],
        [
          "agent free → next claim p50 / p99 ms",
          `${result.lead_to_claim_ms.p50} / ${result.lead_to_claim_ms.p99}`,
        ],
        ["request errors", errors],
        ...(webhooks
          ? [
              ["webhook events received / s while dialling", webhooks.received_per_s],
              [
                "webhook delay, payload timestamp → receipt, p50 / p99 / max ms",
                `${webhooks.delay_ms.p50} / ${webhooks.delay_ms.p99} / ${webhooks.delay_ms.max}`,
              ],
              [
                "webhook events of the dialling window (by type)",
                `${webhooks.events} (${Object.entries(webhooks.by_type)
                  .map(([type, n]) => `${type} ${n}`)
                  .join(", ")})`,
              ],
              [
                "webhook deliveries pending at the end of dialling; after the drain",
                `${webhooks.pending_at_deadline}; ${webhooks.pending_after_drain}`,
              ],
              ["webhook duplicates (a webhook-id twice)", webhooks.duplicates],
              [
                "webhook signatures verified (standardwebhooks)",
                `${webhooks.signatures.verified} of ${webhooks.signatures.checked}`,
              ],
              ["webhook receiver CPU, cores", webhooks.receiver_cores],
            ]
          : []),
      ],
    ),
  );
  if (JSON_OUT) await Bun.write(JSON_OUT, JSON.stringify(result, null, 2));
  if (PG_STATS_OUT) await Bun.write(PG_STATS_OUT, JSON.stringify(await statementStats(), null, 1));
  const serverErrors = server
    .output()
    .split("\n")
    .filter((line) => line.includes('"level":"error"'));
  for (const line of serverErrors.slice(0, 5)) console.error(`server: ${line}`);
} finally {
  await sql.end({ timeout: 5 });
  await server.stop();
  await receiver?.stop();
}

/** The statements that took the database's time, the costliest first. */
function statementStats() {
  return sql`
  select calls::int, round(total_exec_time::numeric, 1)::float8 as total_ms,
    round(mean_exec_time::numeric, 3)::float8 as mean_ms,
    round(max_exec_time::numeric, 1)::float8 as max_ms, rows::int,
    wal_bytes::float8 as wal_bytes, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 200) as query
  from pg_stat_statements order by total_exec_time desc limit 60`;
}

/**
 * What the receiver got: events received while dialling, and the delay of the events of the
 * dialling window (their payload timestamp within it), after at most 15 s more for the
 * deliveries still pending to go out.
 */
async function webhookFigures(
  receiver: Receiver,
  secret: string,
  window: { from: number; to: number; pendingAtDeadline: number; receiverCores: number },
) {
  await waitUntil(async () => (await pendingDeliveries()) === 0, 15_000, 500);
  const pendingAfterDrain = await pendingDeliveries();
  const { records, samples } = await receiver.records();
  const ids = new Set<string>();
  const delays: number[] = [];
  const byType: Record<string, number> = {};
  let duplicates = 0;
  let receivedWhileDialling = 0;
  for (const [id, receivedAt, type, timestamp] of records as ReceivedRecord[]) {
    if (ids.has(id)) {
      duplicates++;
      continue;
    }
    ids.add(id);
    if (receivedAt >= window.from && receivedAt <= window.to) receivedWhileDialling++;
    const at = Date.parse(timestamp);
    if (at < window.from || at > window.to) continue;
    delays.push(receivedAt - at);
    byType[type] = (byType[type] ?? 0) + 1;
  }
  return {
    received_per_s: round(receivedWhileDialling / ((window.to - window.from) / 1000), 0),
    events: delays.length,
    by_type: byType,
    delay_ms: {
      p50: round(percentile(delays, 50), 1),
      p99: round(percentile(delays, 99), 1),
      max: round(Math.max(...delays), 1),
    },
    pending_at_deadline: window.pendingAtDeadline,
    pending_after_drain: pendingAfterDrain,
    duplicates,
    signatures: verifySamples(samples, secret),
    receiver_cores: round(window.receiverCores, 2),
  };
}
