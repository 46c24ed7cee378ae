/**
 * What one statement of status changes costs PostgreSQL, by how many changes it carries: why
 * an owner that commits a few changes at a time (one of several processes) spends more per
 * change than one that commits many (bench/cluster.ts).
 *
 *   bun bench/status-statement.ts [--statements 2000] [--rounds 3]
 *
 * Starts its own PostgreSQL 15 cluster (stock settings) and, one statement at a time on one
 * connection, measures the wall time and the CPU time of PostgreSQL and of this process per
 * statement: `select 1` (the round trip alone), one status change (with its history row and
 * its idempotency record, as the service writes it), and eight in one statement. Then the
 * same on connections with `synchronous_commit=off` (the commit's WAL flush left out: not
 * how the service runs) and with `plan_cache_mode=force_generic_plan` (no planning per
 * statement). Rounds run the three connections in turn; the report gives medians.
 */
import { readFileSync } from "node:fs";
import postgres from "postgres";
import type { RawClient } from "../db/client.ts";
import { commitStatusChanges, type StatusChange } from "../db/queries/campaigns.ts";
import { runStatement } from "../db/statement.ts";
import { createWorkspace } from "../test/helpers/app.ts";
import { option, treeCpuSeconds } from "./campaigns-import-common.ts";
import { postgresInstalled, startCluster, stopCluster } from "./lib/postgres-cluster.ts";
import { freePort } from "./lib/proc.ts";
import { median, round } from "./lib/stats.ts";

const args = process.argv.slice(2);
const statements = Number(option(args, "statements", "2000"));
const rounds = Number(option(args, "rounds", "3"));
const BATCH = 8;

if (!postgresInstalled()) {
  console.error("PostgreSQL 15 binaries are required (PG_BIN)");
  process.exit(2);
}
const cluster = startCluster(freePort());
process.on("exit", () => stopCluster(cluster));
const postmaster = Number(readFileSync(`${cluster.dataDir}/postmaster.pid`, "utf8").split("\n")[0]);

// The test harness migrates the database and makes a workspace with its admin.
process.env.DATABASE_URL = cluster.url;
const workspace = await createWorkspace();
const token = await workspace.login("admin@acme.test");
const campaigns: string[] = [];
for (let index = 0; index < BATCH; index++) {
  const created = await workspace.request("POST", "/api/v1/campaigns", {
    token,
    body: { name: `Statement ${index}` },
  });
  campaigns.push(created.body.data.campaign.id);
}
const state = new Map(campaigns.map((id) => [id, { version: 1, status: "draft" as string }]));

/** The next change of a campaign (start or pause), as the service would commit it. */
function nextChange(campaignId: string): StatusChange {
  const { version, status } = state.get(campaignId) as { version: number; status: string };
  const to = status === "running" ? "paused" : "running";
  const at = new Date();
  return {
    campaignId,
    leaseToken: null,
    tenantId: workspace.acme.id,
    expectedVersion: version,
    action: to === "running" ? "start" : "pause",
    from: status as StatusChange["from"],
    to,
    actorType: "user",
    actorId: workspace.admin.id,
    requestId: crypto.randomUUID(),
    at,
    idempotency: {
      campaignId,
      key: crypto.randomUUID(),
      bodyHash: "0".repeat(64),
      responseStatus: 200,
      responseBody: JSON.stringify({ status: "success", data: { campaign: { id: campaignId } } }),
      expiresAt: new Date(at.getTime() + 60_000),
    },
  };
}

async function commit(raw: RawClient, changes: StatusChange[]) {
  const updated = await commitStatusChanges(raw, changes);
  for (const change of changes) {
    if (!updated.has(change.campaignId)) throw new Error("a change was not made");
    state.set(change.campaignId, { version: change.expectedVersion + 1, status: change.to });
  }
}

const connections = {
  stock: {},
  "synchronous_commit=off": { synchronous_commit: "off" },
  "plan_cache_mode=force_generic_plan": { plan_cache_mode: "force_generic_plan" },
} as const;
type Setting = keyof typeof connections;
const raws = Object.fromEntries(
  Object.entries(connections).map(([name, connection]) => {
    const client = postgres(cluster.url, { max: 1, prepare: true, onnotice: () => {}, connection });
    return [
      name,
      { kind: "postgres", client, longWork: client, genericPlans: client } as RawClient,
    ];
  }),
) as Record<Setting, RawClient>;

const kinds = {
  "select 1": (raw: RawClient) => runStatement(raw, "select 1", []),
  "one change": (raw: RawClient, turn: number) =>
    commit(raw, [nextChange(campaigns[turn % BATCH] as string)]),
  [`${BATCH} changes`]: (raw: RawClient) => commit(raw, campaigns.map(nextChange)),
} as Record<string, (raw: RawClient, turn: number) => Promise<unknown>>;

interface Cost {
  wall: number;
  database: number;
  client: number;
}
const costs = new Map<string, Cost[]>();

async function measure(setting: Setting, kind: string) {
  const run = kinds[kind] as (raw: RawClient, turn: number) => Promise<unknown>;
  const raw = raws[setting];
  for (let turn = 0; turn < 50; turn++) await run(raw, turn);
  const count = kind === "select 1" ? statements : Math.ceil(statements / 2);
  const [database, client, began] = [
    treeCpuSeconds(postmaster),
    process.cpuUsage(),
    performance.now(),
  ];
  for (let turn = 0; turn < count; turn++) await run(raw, turn);
  const wall = performance.now() - began;
  const used = process.cpuUsage(client);
  const key = `${setting}|${kind}`;
  costs.set(key, [
    ...(costs.get(key) ?? []),
    {
      wall: (wall * 1000) / count,
      database: ((treeCpuSeconds(postmaster) - database) * 1e6) / count,
      client: (used.user + used.system) / count,
    },
  ]);
}

for (let index = 0; index < rounds; index++) {
  for (const setting of Object.keys(connections) as Setting[])
    for (const kind of Object.keys(kinds)) await measure(setting, kind);
  console.error(`[bench:status-statement] round ${index + 1} of ${rounds} done`);
}

console.log(
  `\nbench:status-statement, ${statements} statements of each kind a round (half for changes), ${rounds} rounds; medians, µs per statement\n`,
);
console.log(
  "| connection | statement | wall | PostgreSQL CPU | client CPU | PostgreSQL CPU per change |",
);
console.log("|---|---|---:|---:|---:|---:|");
for (const setting of Object.keys(connections) as Setting[]) {
  for (const kind of Object.keys(kinds)) {
    const runs = costs.get(`${setting}|${kind}`) ?? [];
    const database = median(runs.map((run) => run.database));
    const perChange =
      kind === "select 1" ? "" : round(database / (kind === "one change" ? 1 : BATCH));
    console.log(
      `| ${setting} | ${kind} | ${round(median(runs.map((run) => run.wall)))} | ${round(database)} | ${round(median(runs.map((run) => run.client)))} | ${perChange} |`,
    );
  }
}
for (const raw of Object.values(raws)) if (raw.kind === "postgres") await raw.client.end();
process.exit(0);
