/**
 * Several processes on one PostgreSQL database: failover time, and throughput with one
 * process against three.
 *
 *   bun bench/cluster.ts [--trials 20] [--failover-minutes 8] [--seconds 8] [--rounds 3]
 *                        [--warmup 2] [--clients 16,144] [--call-clients 4] [--forwarded 200]
 *
 * Starts its own PostgreSQL cluster and three server processes on one new database of it
 * (test/helpers/cluster.ts), and measures:
 *
 *  (a) failover: a campaign dials (agents ready, a simulated edge node claiming through any
 *      process); the owner of the campaign by its lease is killed (SIGKILL), and the time to
 *      the first claim answered with jobs of that campaign by another process is taken; the
 *      killed process is started again between trials. p50 and p99 over `--trials`, or as
 *      many as fit in `--failover-minutes`; a trial with no claim served within 20 s is a
 *      miss, longer than any other (goal: p99 < 10 s).
 *  (b) throughput, one process against three, rounds interleaved, each mode on its own
 *      workspace: status changes a second (pause and resume over 160 campaigns, each with
 *      its own Idempotency-Key, from each number of `--clients` in turn, over keep-alive
 *      connections) and calls a second (claims, then ringing and ended for every job, from a
 *      simulated node with `--call-clients`). "One process" sends everything to process 0;
 *      "three" spreads over all of them. Goal: three ≥ 0.8 × one, each mode's throughput
 *      being its best rate over the numbers of clients (few clients hold one process by its
 *      commits' latency, not by what it can do). Status changes are also sent to three
 *      processes with each request at its campaign's owner, so that nothing is forwarded:
 *      the ceiling that forwarding is measured against. A round's `--seconds` of each phase
 *      run in four slices, the phases of status changes taking turns and then those of
 *      calls, so that all meet the same moments of a noisy machine; `--warmup` seconds of
 *      each phase of status changes, not counted, go first. For each phase: the CPU time per
 *      change or call of the server processes, of PostgreSQL and of this client (/proc), and
 *      the host's idle share (one process is held by its commits' latency, three by the
 *      CPU); the difference between forwarded and owner-routed changes is the server CPU a
 *      forwarded command costs.
 *  (c) forwarding: the same status change sent to the campaign's owner and to another
 *      process, alternately, one at a time; medians.
 *
 * Every phase is bounded in time. A table closes the report.
 */

import { readFileSync } from "node:fs";
import { type Cluster, type Json, startCluster } from "../test/helpers/cluster.ts";
import {
  changeStatus,
  createCampaign,
  createUser,
  createWorkspace,
  importLeads,
  must,
  startAgent,
  startNode,
  type Workspace,
} from "../test/helpers/cluster-sim.ts";
import { cpuSeconds, treeCpuSeconds } from "./campaigns-import-common.ts";
import { KeepAliveConnection } from "./lib/keep-alive-http.ts";
import {
  postgresInstalled,
  startCluster as startPostgres,
  stopCluster,
} from "./lib/postgres-cluster.ts";
import { freePort } from "./lib/proc.ts";
import { median, medianOfRoundRatios, percentile, round } from "./lib/stats.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`);
  return index === -1 ? fallback : (args[index + 1] ?? fallback);
};
const trials = Number(option("trials", "20"));
const seconds = Number(option("seconds", "8"));
const rounds = Number(option("rounds", "3"));
const warmup = Number(option("warmup", "2"));
/** The numbers of clients sending status changes at once: a phase runs at each. */
const clientCounts = option("clients", "16,144").split(",").map(Number);
/** Clients claiming and reporting calls at once. */
const callClients = Number(option("call-clients", "4"));
const forwarded = Number(option("forwarded", "200"));
const failoverMinutes = Number(option("failover-minutes", "8"));
const STATUS_CAMPAIGNS = 160;
/** Each round's phases run in this many slices each, taken in turn. */
const SLICES = 4;
const DIAL_AGENTS = 10;
/** Fresh leads for every round of a mode at up to 1,500 calls a second. */
const DIAL_LEADS = Math.max(6_000, rounds * seconds * 1_500);
/** A trial that sees no claim served within this long counts as a miss. */
const FAILOVER_BOUND_MS = 20_000;

if (clientCounts.some((clients) => !(clients >= 1 && clients <= STATUS_CAMPAIGNS))) {
  console.error(
    `--clients: each between 1 and ${STATUS_CAMPAIGNS} (a client has campaigns of its own)`,
  );
  process.exit(2);
}

const progress = (message: string) => console.error(`[bench:cluster] ${message}`);

if (!postgresInstalled()) {
  console.error("PostgreSQL 15 binaries are required (PG_BIN)");
  process.exit(2);
}
const postgres = startPostgres(freePort());
let cluster: Cluster | undefined;
process.on("exit", () => {
  for (const member of cluster?.members ?? []) {
    member.server.process.kill("SIGCONT");
    member.server.process.kill("SIGKILL");
  }
  stopCluster(postgres);
});
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

// ---------------------------------------------------------------- CPU

/** CPU seconds used so far by the server processes, by PostgreSQL and by this client. */
function cpuNow(c: Cluster) {
  const postmaster = Number(
    readFileSync(`${postgres.dataDir}/postmaster.pid`, "utf8").split("\n")[0],
  );
  const client = process.cpuUsage();
  return {
    servers: c.members.reduce((sum, member) => sum + cpuSeconds(member.server.process.pid), 0),
    database: treeCpuSeconds(postmaster),
    client: (client.user + client.system) / 1e6,
  };
}

/** The host's share of idle CPU time so far, from /proc/stat: idle and waiting on the disk. */
function hostTimes() {
  const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/);
  const times = fields.slice(1).map(Number);
  return {
    total: times.reduce((sum, value) => sum + value, 0),
    idle: (times[3] ?? 0) + (times[4] ?? 0),
  };
}

/** What a phase did and what it cost: operations, seconds, CPU seconds by who spent them, host times. */
interface Spent {
  done: number;
  refused: number;
  seconds: number;
  cpu: ReturnType<typeof cpuNow>;
  host: ReturnType<typeof hostTimes>;
}

const nothingSpent = (): Spent => ({
  done: 0,
  refused: 0,
  seconds: 0,
  cpu: { servers: 0, database: 0, client: 0 },
  host: { total: 0, idle: 0 },
});

/** Runs a phase and adds what it did and cost to `into`. */
async function spend(
  c: Cluster,
  into: Spent,
  phase: () => Promise<{ done: number; refused: number }>,
): Promise<void> {
  const [cpuBefore, hostBefore, began] = [cpuNow(c), hostTimes(), performance.now()];
  const result = await phase();
  const [cpuAfter, hostAfter] = [cpuNow(c), hostTimes()];
  into.done += result.done;
  into.refused += result.refused;
  into.seconds += (performance.now() - began) / 1000;
  for (const key of ["servers", "database", "client"] as const)
    into.cpu[key] += cpuAfter[key] - cpuBefore[key];
  into.host.total += hostAfter.total - hostBefore.total;
  into.host.idle += hostAfter.idle - hostBefore.idle;
}

/** Operations a second, microseconds of CPU per operation by who spent them, the host's idle share. */
const rates = (spent: Spent) => {
  const perOperation = (seconds: number) => (seconds * 1e6) / Math.max(1, spent.done);
  return {
    perSecond: spent.done / Math.max(1e-9, spent.seconds),
    refused: spent.refused,
    cpu: {
      servers: perOperation(spent.cpu.servers),
      database: perOperation(spent.cpu.database),
      client: perOperation(spent.cpu.client),
    },
    idle: spent.host.idle / Math.max(1, spent.host.total),
  };
};

// ---------------------------------------------------------------- (a) failover

async function failover(c: Cluster) {
  progress("failover: setting up");
  const workspace = await createWorkspace(c, { domain: "failover.bench", agents: 4 });
  const campaign = await createCampaign(c, {
    token: workspace.admin.token,
    name: "Failover",
    maxAttempts: 3,
  });
  await importLeads(c, { token: workspace.admin.token, campaignId: campaign.id, count: 3_000 });
  await changeStatus(c, {
    token: workspace.supervisor.token,
    campaignId: campaign.id,
    action: "start",
  });
  const phaseEnd = Date.now() + failoverMinutes * 60_000 + 90_000;
  const agents = workspace.agents.map((agent, index) =>
    startAgent(c, { agent, campaignId: campaign.id, process: index % 3, deadline: phaseEnd }),
  );
  const served: { at: number; via: number }[] = [];
  const node = startNode(c, {
    key: workspace.nodeKey,
    deadline: phaseEnd,
    maxInFlight: 4,
    onJobs: (jobs, via) => {
      if (jobs.some((job) => job.campaign_id === campaign.id)) served.push({ at: Date.now(), via });
    },
  });
  const latencies: number[] = [];
  let misses = 0;
  let leaseless = 0;
  const phaseBound = Date.now() + failoverMinutes * 60_000;
  for (let trial = 0; trial < trials && Date.now() < phaseBound; trial++) {
    // Dialing must be under way before the kill.
    const waitUntil = Date.now() + FAILOVER_BOUND_MS;
    const before = served.length;
    while (served.length === before && Date.now() < waitUntil) await Bun.sleep(50);
    const owner = await c.ownerOf(campaign.id);
    if (owner === undefined) leaseless++;
    const victim = owner ?? 0;
    await c.kill(victim, "SIGKILL");
    const killedAt = Date.now();
    let first: number | undefined;
    while (Date.now() < killedAt + FAILOVER_BOUND_MS) {
      first = served.find((claim) => claim.at > killedAt && claim.via !== victim)?.at;
      if (first !== undefined) break;
      await Bun.sleep(20);
    }
    if (first === undefined) misses++;
    else latencies.push(first - killedAt);
    const claimed = node.claims.filter((claim) => claim.at > killedAt);
    progress(
      `failover trial ${trial + 1}/${trials}: killed ${victim}${owner === undefined ? " (no lease)" : ""}, ` +
        `${claimed.length} claims since (${claimed.filter((claim) => claim.jobs.length > 0).length} with jobs), ` +
        `${first === undefined ? "no claim served" : `served after ${first - killedAt} ms`}`,
    );
    await c.restart(victim);
  }
  await Promise.all([node.stop(), ...agents.map((agent) => agent.stop())]);
  return { latencies, misses, leaseless };
}

// ---------------------------------------------------------------- (b) throughput

interface Mode {
  name: "one" | "three";
  /** Undefined: spread over the live processes. */
  via?: number;
  workspace: Workspace;
  statusCampaigns: string[];
  /** Each status campaign's status as last answered; empty: read it first. */
  statuses: Map<string, string>;
  dialing: string;
}

async function prepareMode(c: Cluster, name: Mode["name"], via?: number): Promise<Mode> {
  progress(`throughput: setting up the "${name}" workspace`);
  const workspace = await createWorkspace(c, {
    domain: `${name}.bench`,
    agents: 0,
    nodeMaxCalls: 500,
  });
  const admin = workspace.admin.token;
  const statusCampaigns: string[] = [];
  for (let index = 0; index < STATUS_CAMPAIGNS; index += 8) {
    const batch = await Promise.all(
      Array.from({ length: 8 }, (_, offset) =>
        createCampaign(c, { token: admin, name: `Status ${index + offset}`, via }),
      ),
    );
    for (const campaign of batch) {
      await changeStatus(c, { token: admin, campaignId: campaign.id, action: "start", via });
      statusCampaigns.push(campaign.id);
    }
  }
  // "One process" must own its campaigns from the start: an import, for one, takes the
  // campaign's lease where it lands.
  const dialing = await createCampaign(c, { token: admin, name: "Dialing", dialRatio: 5, via });
  const leads = await importLeads(c, {
    token: admin,
    campaignId: dialing.id,
    count: DIAL_LEADS,
    via,
  });
  if (leads.imported !== DIAL_LEADS)
    throw new Error(`${leads.imported} of ${DIAL_LEADS} leads imported: the rounds would run dry`);
  await changeStatus(c, { token: admin, campaignId: dialing.id, action: "start", via });
  for (let index = 0; index < DIAL_AGENTS; index++) {
    const agent = await createUser(c, {
      token: admin,
      domain: workspace.domain,
      email: `agent-${index}@${workspace.domain}`,
      role: "agent",
    });
    // Ready over REST: no socket, so no sign-out when none is open.
    await must(c, "POST", "/api/v1/agents/me/state", {
      token: agent.token,
      body: { state: "ready", campaign_id: dialing.id },
      via,
    });
  }
  const mode: Mode = {
    name,
    via,
    workspace,
    statusCampaigns,
    statuses: new Map(),
    dialing: dialing.id,
  };
  if (via !== undefined) {
    for (const [id, owner] of [
      ...(await ownersOf(c, mode)),
      [mode.dialing, await c.ownerOf(mode.dialing)],
    ])
      if (owner !== via) throw new Error(`campaign ${id} of "${name}" is run by process ${owner}`);
  }
  return mode;
}

/** Each status campaign's owner by its lease: where a request goes to be forwarded nowhere. */
async function ownersOf(c: Cluster, mode: Mode) {
  const owners = new Map<string, number | undefined>();
  for (const id of mode.statusCampaigns) owners.set(id, await c.ownerOf(id));
  return owners;
}

/** Each client's keep-alive connection to each process, by client and port, kept across phases. */
const connections = new Map<string, Promise<KeepAliveConnection>>();

/** A status change over the client's own connection to process `via`: the answer's status. */
async function sendStatusChange(
  c: Cluster,
  client: number,
  via: number,
  request: { token: string; campaignId: string; action: string },
): Promise<number> {
  const { port } = c.member(via);
  const name = `${client}:${port}`;
  try {
    let connection = connections.get(name);
    if (!connection || (await connection).closed) {
      connection = KeepAliveConnection.open(port);
      connections.set(name, connection);
    }
    return await (await connection).request(
      `POST /api/v1/campaigns/${request.campaignId}/status HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
        `authorization: Bearer ${request.token}\r\ncontent-type: application/json\r\n` +
        `idempotency-key: ${crypto.randomUUID()}`,
      JSON.stringify({ action: request.action }),
      10_000,
    );
  } catch (error) {
    connections.delete(name);
    throw error;
  }
}

/**
 * Status changes for `forSeconds` over the mode's campaigns, each client on its own
 * campaigns, over keep-alive connections (`KeepAliveConnection`). "Three" takes the processes
 * in turn; with `owners`, each request goes to its campaign's owner: nothing is forwarded.
 */
async function statusChanges(
  c: Cluster,
  {
    mode,
    clients,
    forSeconds,
    owners,
  }: {
    mode: Mode;
    clients: number;
    forSeconds: number;
    owners?: Map<string, number | undefined> | undefined;
  },
) {
  const token = mode.workspace.admin.token;
  const deadline = Date.now() + forSeconds * 1000;
  const status = mode.statuses;
  const processes = c.members.length;
  let done = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, worker) => {
      const mine = mode.statusCampaigns.filter((_, index) => index % clients === worker);
      for (let turn = 0; Date.now() < deadline; turn++) {
        const id = mine[turn % mine.length] as string;
        const via = owners?.get(id) ?? mode.via ?? (worker + turn) % processes;
        if (!status.get(id)) {
          const now = await c.request("GET", `/api/v1/campaigns/${id}`, { token, via });
          status.set(id, now.body.data?.campaign?.status ?? "running");
        }
        const action = status.get(id) === "running" ? "pause" : "start";
        try {
          const answer = await sendStatusChange(c, worker, via, { token, campaignId: id, action });
          if (answer === 200) {
            done++;
            status.set(id, action === "pause" ? "paused" : "running");
          } else {
            refused++;
            status.set(id, "");
          }
        } catch {
          refused++;
          status.set(id, "");
        }
      }
    }),
  );
  return { done, refused };
}

/**
 * Calls for `forSeconds`: claims, then ringing and ended (no answer) for every job, as fast as
 * it goes. Every job claimed is ended before it returns, so that the next phase starts clean.
 */
async function calls(c: Cluster, mode: Mode, forSeconds: number) {
  const key = mode.workspace.nodeKey;
  const deadline = Date.now() + forSeconds * 1000;
  let ended = 0;
  let failed = 0;
  const event = async (callId: string, body: Json) => {
    try {
      const reply = await c.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
        token: key,
        body: { ...body, at: new Date().toISOString() },
        via: mode.via,
        timeoutMs: 10_000,
      });
      return reply.status === 200;
    } catch {
      return false;
    }
  };
  await Promise.all(
    Array.from({ length: callClients }, async () => {
      while (Date.now() < deadline) {
        let jobs: Json[] = [];
        try {
          const reply = await c.request("POST", "/api/v1/nodes/jobs/claim", {
            token: key,
            body: { max: 20, wait_ms: 200 },
            headers: { "idempotency-key": crypto.randomUUID() },
            via: mode.via,
            timeoutMs: 10_000,
          });
          jobs = reply.body.data?.jobs ?? [];
        } catch {
          await Bun.sleep(50);
        }
        await Promise.all(
          jobs.map(async (job) => {
            const ok =
              (await event(job.call_id, { type: "ringing" })) &&
              (await event(job.call_id, { type: "ended", hangup_cause: "NO_ANSWER" }));
            if (!ok) failed++;
            else ended++;
          }),
        );
      }
    }),
  );
  return { done: ended, refused: failed };
}

// ---------------------------------------------------------------- (c) forwarding

async function forwarding(c: Cluster, mode: Mode) {
  const token = mode.workspace.admin.token;
  const campaign = mode.statusCampaigns[0] as string;
  // A command makes some process the owner; the lease says which.
  await changeStatus(c, { token, campaignId: campaign, action: "pause" });
  const owner = await c.ownerOf(campaign);
  const local = owner ?? 0;
  const other = (local + 1) % c.members.length;
  const timings = { owner: [] as number[], other: [] as number[] };
  let status = (await c.request("GET", `/api/v1/campaigns/${campaign}`, { token, via: local })).body
    .data.campaign.status as string;
  const deadline = Date.now() + 60_000;
  for (let index = 0; index < forwarded * 2 && Date.now() < deadline; index++) {
    const via = index % 2 === 0 ? local : other;
    const action = status === "running" ? "pause" : "start";
    const began = performance.now();
    const reply = await c.request("POST", `/api/v1/campaigns/${campaign}/status`, {
      token,
      body: { action },
      headers: { "idempotency-key": crypto.randomUUID() },
      via,
    });
    const took = performance.now() - began;
    // A refused transition is executed by the owner all the same: it counts.
    if (reply.status === 200 || reply.status === 409) {
      (via === local ? timings.owner : timings.other).push(took);
    }
    if (reply.status === 200) status = reply.body.data.campaign.status;
    else {
      status = (await c.request("GET", `/api/v1/campaigns/${campaign}`, { token, via: local })).body
        .data.campaign.status;
    }
  }
  return {
    ownerKnown: owner !== undefined,
    owner: median(timings.owner),
    other: median(timings.other),
  };
}

// ---------------------------------------------------------------- run

const began = Date.now();
progress(`PostgreSQL on port ${postgres.port}; starting 3 processes`);
cluster = await startCluster({
  size: 3,
  serverUrl: postgres.url,
  databasePrefix: "bench_cluster",
  // "One process" is process 0 running every campaign of its workspace while the others idle:
  // they must not ask it for their share.
  env: { CAMPAIGN_REBALANCE_SECONDS: "0" },
});
const c = cluster;

const failed = await failover(c);
const one = await prepareMode(c, "one", 0);
const three = await prepareMode(c, "three");
type Rates = ReturnType<typeof rates>;
const statusPhases = ["one", "three", "owners"] as const;
type StatusPhase = (typeof statusPhases)[number];
/** Each client count's status phases, one entry a round. */
const statusRuns = new Map(
  clientCounts.map((clients) => [
    clients,
    { one: [] as Rates[], three: [] as Rates[], owners: [] as Rates[] },
  ]),
);
const callRuns = { one: [] as Rates[], three: [] as Rates[] };
const cpuText = (run: Rates, per = "change") =>
  `CPU µs per ${per}: servers ${round(run.cpu.servers)}, PostgreSQL ${round(run.cpu.database)}, ` +
  `client ${round(run.cpu.client)}; host ${round(run.idle * 100)}% idle`;
// Not counted: the two processes that idled so far compile their paths of status changes and
// open their links. The calls come after the status changes in every round.
progress(`warm-up: ${warmup} s of each phase of status changes`);
for (const phase of statusPhases) {
  await statusChanges(c, {
    mode: phase === "one" ? one : three,
    clients: Math.max(...clientCounts),
    forSeconds: warmup,
    owners: phase === "owners" ? await ownersOf(c, three) : undefined,
  });
}
for (let roundIndex = 0; roundIndex < rounds; roundIndex++) {
  // The round's seconds of each phase, in slices taken in turn (the order rotating), so that
  // every phase meets the same moments of a shared, noisy machine.
  const owners = await ownersOf(c, three);
  const spent = new Map(
    clientCounts.map((clients) => [
      clients,
      { one: nothingSpent(), three: nothingSpent(), owners: nothingSpent() },
    ]),
  );
  for (let slice = 0; slice < SLICES; slice++) {
    for (const clients of clientCounts) {
      for (let turn = 0; turn < statusPhases.length; turn++) {
        const phase = statusPhases[(slice + turn) % statusPhases.length] as StatusPhase;
        await spend(c, spent.get(clients)?.[phase] as Spent, () =>
          statusChanges(c, {
            mode: phase === "one" ? one : three,
            clients,
            forSeconds: seconds / SLICES,
            owners: phase === "owners" ? owners : undefined,
          }),
        );
      }
    }
  }
  for (const clients of clientCounts) {
    for (const phase of statusPhases) {
      const result = rates(spent.get(clients)?.[phase] as Spent);
      statusRuns.get(clients)?.[phase].push(result);
      const label = phase === "owners" ? "three, each sent to its owner" : phase;
      progress(
        `round ${roundIndex + 1}: status changes, ${clients} clients, ${label}: ${round(result.perSecond)}/s (${result.refused} refused); ${cpuText(result)}`,
      );
    }
  }
  const calling = { one: nothingSpent(), three: nothingSpent() };
  for (let slice = 0; slice < SLICES; slice++) {
    for (const mode of slice % 2 === 0 ? [one, three] : [three, one])
      await spend(c, calling[mode.name], () => calls(c, mode, seconds / SLICES));
  }
  for (const mode of [one, three]) {
    const result = rates(calling[mode.name]);
    callRuns[mode.name].push(result);
    progress(
      `round ${roundIndex + 1}: calls, ${mode.name}: ${round(result.perSecond)}/s (${result.refused} failed); ${cpuText(result, "call")}`,
    );
  }
}
const forward = await forwarding(c, three);

/** A missed trial counts as longer than any served one. */
const failoverPercentile = (p: number) => {
  const value = percentile(
    [...failed.latencies, ...Array<number>(failed.misses).fill(Number.POSITIVE_INFINITY)],
    p,
  );
  return value === Number.POSITIVE_INFINITY ? `> ${FAILOVER_BOUND_MS}` : String(round(value));
};
/** Medians over the rounds of a mode's CPU per change, and of its host's idle share. */
const cpuMedians = (runs: Rates[]) => ({
  servers: median(runs.map((run) => run.cpu.servers)),
  database: median(runs.map((run) => run.cpu.database)),
  client: median(runs.map((run) => run.cpu.client)),
  idle: median(runs.map((run) => run.idle)),
});
const cpuCell = (m: ReturnType<typeof cpuMedians>) =>
  `${round(m.servers)} + ${round(m.database)} + ${round(m.client)} = ` +
  `${round(m.servers + m.database + m.client)} µs; ${round(m.idle * 100)}% idle`;
/** A report row for each mode's CPU per operation. */
const cpuRows = (
  title: string,
  modes: [label: string, cpu: ReturnType<typeof cpuMedians>][],
): [string, string, string][] =>
  modes.map(([label, cpu]) => [
    `${title}, ${label}: servers + PostgreSQL + client; host idle`,
    cpuCell(cpu),
    "",
  ]);
const perSecond = (runs: Rates[]) => runs.map((run) => run.perSecond);
/** Each round's best rate of a phase over the client counts: its throughput in that round. */
const bestOf = (phase: StatusPhase) =>
  Array.from({ length: rounds }, (_, index) =>
    Math.max(
      ...clientCounts.map((clients) => statusRuns.get(clients)?.[phase][index]?.perSecond ?? 0),
    ),
  );
const best = { one: bestOf("one"), three: bestOf("three"), owners: bestOf("owners") };
/** The processes are taken in turn: two requests in three land away from their campaign's owner. */
const FORWARDED_SHARE = 2 / 3;
const statusRows = clientCounts.flatMap((clients): [string, string, string][] => {
  const runs = statusRuns.get(clients) as Record<StatusPhase, Rates[]>;
  const cpu = {
    one: cpuMedians(runs.one),
    three: cpuMedians(runs.three),
    owners: cpuMedians(runs.owners),
  };
  return [
    [
      `status changes a second, ${clients} clients: 1 process / 3 / 3 each at its owner`,
      `${round(median(perSecond(runs.one)))} / ${round(median(perSecond(runs.three)))} / ` +
        `${round(median(perSecond(runs.owners)))} = ` +
        `${round(medianOfRoundRatios(perSecond(runs.three), perSecond(runs.one)), 2)}× / ` +
        `${round(medianOfRoundRatios(perSecond(runs.owners), perSecond(runs.one)), 2)}×`,
      "",
    ],
    ...cpuRows("  CPU per change", [
      ["1 process", cpu.one],
      ["3 processes", cpu.three],
      ["3, each at its owner", cpu.owners],
    ]),
    [
      "  server CPU per forwarded change, over one at its owner",
      `+${round((cpu.three.servers - cpu.owners.servers) / FORWARDED_SHARE)} µs`,
      "",
    ],
  ];
});
const rows: [string, string, string][] = [
  [
    "failover to a claim served elsewhere, p50 / p99",
    `${failoverPercentile(50)} / ${failoverPercentile(99)} ms` +
      ` (${failed.latencies.length + failed.misses} trials; ${failed.misses} missed` +
      `${failed.leaseless ? `; ${failed.leaseless} without a lease, process 0 killed` : ""})`,
    "p99 < 10,000 ms",
  ],
  [
    `status changes a second, each at its best over ${clientCounts.join(", ")} clients: 1 process / 3`,
    `${round(median(best.one))} / ${round(median(best.three))}` +
      ` = ${round(medianOfRoundRatios(best.three, best.one), 2)}×`,
    "≥ 0.8×",
  ],
  [
    "  3 with each request at its campaign's owner (no forwarding), at its best / 1",
    `${round(median(best.owners))} = ${round(medianOfRoundRatios(best.owners, best.one), 2)}×`,
    "(the ceiling)",
  ],
  ...statusRows,
  [
    "calls a second, 1 process / 3",
    `${round(median(perSecond(callRuns.one)))} / ${round(median(perSecond(callRuns.three)))}` +
      ` = ${round(medianOfRoundRatios(perSecond(callRuns.three), perSecond(callRuns.one)), 2)}×`,
    "≥ 0.8×",
  ],
  ...cpuRows("CPU per call", [
    ["1 process", cpuMedians(callRuns.one)],
    ["3 processes", cpuMedians(callRuns.three)],
  ]),
  [
    "status change at the owner / forwarded, median",
    `${round(forward.owner, 1)} / ${round(forward.other, 1)} ms` +
      ` (+${round(forward.other - forward.owner, 1)} ms)` +
      `${forward.ownerKnown ? "" : "; no lease: neither was forwarded"}`,
    "",
  ],
];
const width = [0, 1, 2].map((column) =>
  Math.max(
    ...rows.map((row) => row[column]?.length ?? 0),
    ["measure", "result", "goal"][column]?.length ?? 0,
  ),
);
const line = (cells: string[]) =>
  cells.map((cell, index) => cell.padEnd(width[index] ?? 0)).join("  ");
console.log(
  `\nbench:cluster, ${rounds} rounds of ${seconds} s, ${Math.round((Date.now() - began) / 1000)} s in all`,
);
console.log(line(["measure", "result", "goal"]));
for (const row of rows) console.log(line(row));

await c.close();
process.exit(0);
