/**
 * Eligibility benchmark: how long `GET /campaigns/{id}/leads/{lead_id}/eligibility` takes on
 * the real server over PostgreSQL 15, against `GET /auth/me` on the same server in the same
 * run (one authenticated route that reads nothing), so that the machine's noise shows in both.
 *
 *   bun bench/eligibility.ts [--requests 2000] [--concurrency 4] [--leads 5000] [--rounds 3]
 *
 * A throwaway cluster and one server process are started; the bootstrap admin creates a
 * running `us` campaign and a running `uk` campaign, each with `--leads` leads: a fifth of
 * them Florida numbers (whose attempt cap is counted over the workspace's calls), the others
 * Californian, in zones spread around the clock so that the answers mix open leads and leads
 * outside their hours (the window's next opening is then searched). Each round sends
 * `--requests` requests of each kind, `--concurrency` at a time, for random leads, and reports
 * p50 and p99; the medians over the rounds are printed with the goal (p99 < 5 ms).
 */
import {
  Api,
  median,
  option,
  percentile,
  progress,
  round,
  startCluster,
  startServer,
  table,
} from "./campaigns-import-common.ts";

const args = process.argv.slice(2);
const REQUESTS = Number(option(args, "requests", "2000"));
const CONCURRENCY = Number(option(args, "concurrency", "4"));
const LEADS = Number(option(args, "leads", "5000"));
const ROUNDS = Number(option(args, "rounds", "3"));

const ZONES = [
  "America/Los_Angeles",
  "America/New_York",
  "Europe/London",
  "Asia/Tokyo",
  "Australia/Sydney",
  "Asia/Kolkata",
];

const cluster = startCluster();
const server = await startServer({ databaseUrl: cluster.url("postgres") });
try {
  const admin = await Api.login(server.baseUrl);
  progress(`creating two campaigns of ${LEADS} leads`);
  const targets: string[] = [];
  for (const [index, profile] of ["us", "uk"].entries()) {
    const created = await admin.call("POST", "/api/v1/campaigns", {
      name: `Eligibility ${profile}`,
      regulatory_profile: profile,
      calling_window: { start: "00:00", end: "23:59" },
    });
    const campaignId = created.data.campaign.id as string;
    await admin.recordAbandonMessage(campaignId);
    const listId = await admin.createList(campaignId, "Leads");
    const rows = ["phone,timezone"];
    for (let i = 0; i < LEADS; i++) {
      const areaCode = i % 5 === 0 ? "305" : "415";
      rows.push(`+1${areaCode}${2_000_000 + index * LEADS + i},${ZONES[i % ZONES.length]}`);
    }
    const form = new FormData();
    form.append("phone_column", "phone");
    form.append("timezone_column", "timezone");
    form.append("file", new Blob([rows.join("\n")], { type: "text/csv" }), "leads.csv");
    await admin.call(
      "POST",
      `/api/v1/campaigns/${campaignId}/lead-lists/${listId}/import`,
      undefined,
      { body: form },
    );
    await admin.call("POST", `/api/v1/campaigns/${campaignId}/status`, { action: "start" });
    const leads = await admin.call(
      "GET",
      `/api/v1/campaigns/${campaignId}/lead-lists/${listId}/leads?limit=500`,
    );
    for (const lead of leads.data.items as { id: string }[])
      targets.push(`/api/v1/campaigns/${campaignId}/leads/${lead.id}/eligibility`);
  }

  /** Round trips of `count` requests for paths from `pick`, `CONCURRENCY` at a time. */
  const timed = async (count: number, pick: () => string) => {
    const times: number[] = [];
    let sent = 0;
    const worker = async () => {
      while (sent < count) {
        sent++;
        const started = performance.now();
        const response = await fetch(`${server.baseUrl}${pick()}`, { headers: admin.headers });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`status ${response.status}`);
        times.push(performance.now() - started);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  };
  const anyLead = () => targets[Math.floor(Math.random() * targets.length)] as string;

  await timed(300, anyLead);
  await timed(300, () => "/api/v1/auth/me");
  const rounds: { eligibility: { p50: number; p99: number }; me: { p50: number; p99: number } }[] =
    [];
  for (let r = 0; r < ROUNDS; r++) {
    progress(`round ${r + 1} of ${ROUNDS}`);
    rounds.push({
      eligibility: await timed(REQUESTS, anyLead),
      me: await timed(REQUESTS, () => "/api/v1/auth/me"),
    });
  }
  const med = (pick: (entry: (typeof rounds)[number]) => number) =>
    round(median(rounds.map(pick)), 2);
  const p99 = med((entry) => entry.eligibility.p99);
  console.log(
    table(
      ["route", "p50 ms", "p99 ms"],
      [
        ["eligibility", med((entry) => entry.eligibility.p50), p99],
        [
          "/auth/me (same server, same run)",
          med((entry) => entry.me.p50),
          med((entry) => entry.me.p99),
        ],
      ],
    ),
  );
  console.log(`\ngoal: eligibility p99 < 5 ms: ${p99 < 5 ? "met" : "missed"} (${p99} ms)`);
} finally {
  await server.stop();
  cluster.stop();
}
