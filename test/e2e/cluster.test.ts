import { afterAll, describe, expect, test } from "bun:test";
import { callsWithoutOneCdr, overlappingCalls } from "../helpers/call-invariants.ts";
import { type Cluster, type Json, type Reply, startCluster } from "../helpers/cluster.ts";
import {
  type AgentRun,
  changeStatus,
  createCampaign,
  createWorkspace,
  importLeads,
  type NodeRun,
  type StatusRun,
  type SupervisorWatch,
  startAgent,
  startNode,
  startStatusChanges,
  type Workspace,
  watchAsSupervisor,
} from "../helpers/cluster-sim.ts";

/**
 * Three processes on one PostgreSQL database behind a round-robin balancer, with agents,
 * an edge node, supervisors and status changes at work, while the owner of the dialing
 * campaign is killed and restarted and another process is stopped. The run happens once;
 * each check after it reads what was recorded and what the database holds.
 */
const url = process.env.DATABASE_URL;

const PROCESSES = 3;
const AGENTS = 6;
const LEADS = 300;
const MAX_ATTEMPTS = 2;
const RUN_MS = 50_000;
const KILL_AT_MS = 12_000;
const KILLED_FOR_MS = 5_000;
const STOP_AT_MS = 32_000;

interface Outcome {
  workspace: Workspace;
  dialing: Json;
  paced: Json;
  duplicateCampaign: Json;
  /** Request ids of the starts made during set-up, by campaign. */
  starts: Record<string, string>;
  killed: number;
  stopped: number;
  /** How the stopped process ended: its exit code, or "hung". */
  stopExit: number | "hung";
  killedAt: number;
  restartedAt: number;
  agents: AgentRun[];
  node: NodeRun;
  status: StatusRun;
  duplicate: Reply[];
  supervisors: SupervisorWatch[];
  /** The supervisor sockets still open at the end of the run. */
  watching: SupervisorWatch[];
  finalAgents: { email: string; status: number; state?: string }[];
  ownerFound: boolean;
}

let cluster: Cluster | undefined;
let outcome: Outcome | undefined;

afterAll(async () => {
  await cluster?.close();
});

const ran = (): Outcome => {
  if (!outcome) throw new Error("the cluster run did not complete");
  return outcome;
};

async function runScenario(c: Cluster): Promise<Outcome> {
  const workspace = await createWorkspace(c, { domain: "cluster.test", agents: AGENTS });
  const admin = workspace.admin.token;
  const supervisor = workspace.supervisor.token;
  const dialing = await createCampaign(c, {
    token: admin,
    name: "Dialing",
    maxAttempts: MAX_ATTEMPTS,
  });
  const imported = await importLeads(c, { token: admin, campaignId: dialing.id, count: LEADS });
  expect(imported.imported).toBe(LEADS);
  const paced = await createCampaign(c, { token: admin, name: "Paused and resumed" });
  const duplicateCampaign = await createCampaign(c, { token: admin, name: "One key, twice" });
  const starts: Record<string, string> = {};
  for (const campaign of [dialing, paced]) {
    const started = await changeStatus(c, {
      token: supervisor,
      campaignId: campaign.id,
      action: "start",
    });
    expect(started?.status).toBe(200);
    starts[campaign.id] = started?.requestId as string;
  }

  const supervisors = await Promise.all(
    c.all().map((index) => watchAsSupervisor(c, { process: index, token: supervisor })),
  );
  const begin = Date.now();
  const deadline = begin + RUN_MS;
  const agents = workspace.agents.map((agent, index) =>
    startAgent(c, {
      agent,
      campaignId: dialing.id,
      process: index % PROCESSES,
      deadline: deadline + 60_000,
    }),
  );
  // Agents first, so that the first claims find someone ready.
  await Bun.sleep(1_000);
  const node = startNode(c, { key: workspace.nodeKey, deadline, maxInFlight: 4 });
  const status = startStatusChanges(c, { token: supervisor, campaignId: paced.id, deadline });

  // One key sent to two processes at the same moment: executed once, answered alike.
  await Bun.sleep(2_000);
  const key = crypto.randomUUID();
  const duplicate = await Promise.all(
    [1, 2].map((via) =>
      c.request("POST", `/api/v1/campaigns/${duplicateCampaign.id}/status`, {
        token: supervisor,
        body: { action: "start" },
        headers: { "idempotency-key": key, "x-request-id": `duplicate-${via}-${key}` },
        via,
      }),
    ),
  );

  await Bun.sleep(Math.max(0, begin + KILL_AT_MS - Date.now()));
  const owner = await c.ownerOf(dialing.id);
  const killed = owner ?? 0;
  await c.kill(killed, "SIGKILL");
  const killedAt = Date.now();
  await Bun.sleep(KILLED_FOR_MS);
  await c.restart(killed);
  const restartedAt = Date.now();
  supervisors.push(await watchAsSupervisor(c, { process: killed, token: supervisor }));

  await Bun.sleep(Math.max(0, begin + STOP_AT_MS - Date.now()));
  const stopped = (killed + 1) % PROCESSES;
  const stopExit = await c.stop(stopped);

  await Promise.all([node.done, status.done]);
  // Pushes and dispositions under way settle.
  await Bun.sleep(2_000);
  const finalAgents = await Promise.all(
    workspace.agents.map(async (agent) => {
      const reply = await c.request("GET", "/api/v1/agents/me", { token: agent.token });
      return {
        email: agent.email,
        status: reply.status,
        state: reply.body.data?.agent?.state as string | undefined,
      };
    }),
  );
  await Promise.all(agents.map((agent) => agent.stop()));
  const watching = supervisors.filter((watch) => watch.closedAt === undefined);
  for (const watch of supervisors) watch.close();
  return {
    workspace,
    dialing,
    paced,
    duplicateCampaign,
    starts,
    killed,
    stopped,
    stopExit,
    killedAt,
    restartedAt,
    agents,
    node,
    status,
    duplicate,
    supervisors,
    watching,
    finalAgents,
    ownerFound: owner !== undefined,
  };
}

describe.skipIf(!url)("three processes on one database", () => {
  test("dial, pause and resume while one process is killed and restarted and another stopped", async () => {
    cluster = await startCluster({ size: PROCESSES, env: { CAMPAIGN_REBALANCE_SECONDS: "2" } });
    outcome = await runScenario(cluster);
    const { node, status, agents } = outcome;
    console.log(
      JSON.stringify({
        killed: outcome.killed,
        owner_found_by_lease: outcome.ownerFound,
        stopped: outcome.stopped,
        lease_log_lines: cluster.all().map((index) => cluster?.leaseLog(index).length),
        handed_over: cluster
          .all()
          .flatMap((index) => cluster?.logLines(index, /lease handed over/) ?? []).length,
        claims: node.claims.length,
        jobs: node.claims.reduce((sum, claim) => sum + claim.jobs.length, 0),
        calls_ended: node.ended.length,
        calls_lost: node.lost.length,
        status_acks: status.acks.length,
        status_refused: status.refused.length,
        connected: agents.reduce((sum, agent) => sum + agent.connected.length, 0),
        dispositions: agents.reduce((sum, agent) => sum + agent.dispositions.length, 0),
      }),
    );
    expect(node.claims.length).toBeGreaterThan(0);
    expect(status.acks.length).toBeGreaterThan(0);
  }, 200_000);

  test("the stopped process drained and exited by itself", () => {
    expect(ran().stopExit).toBe(0);
  });

  test("the owner of the dialing campaign is found by its lease", () => {
    expect(ran().ownerFound).toBe(true);
  });

  test("one key sent to two processes at once executes once, and both replies are the same bytes", async () => {
    const { duplicate, duplicateCampaign } = ran();
    const [first, second] = duplicate;
    expect(first?.status).toBe(200);
    expect(second?.status).toBe(200);
    expect(second?.text).toBe(first?.text as string);
    const rows = await (cluster as Cluster).sql`
      select request_id from campaign_status_changes
      where campaign_id = ${duplicateCampaign.id} and request_id like 'duplicate-%'`;
    expect(rows.length).toBe(1);
  });

  test("every acknowledged status change is in the campaign's history exactly once", async () => {
    const { status, paced, starts } = ran();
    const rows = await (cluster as Cluster).sql<{ request_id: string | null; count: number }[]>`
      select request_id, count(*)::int as count from campaign_status_changes
      where campaign_id = ${paced.id} group by request_id`;
    const counts = new Map(rows.map((row) => [row.request_id, row.count]));
    const missing = status.acks.filter((ack) => !counts.has(ack.requestId));
    const repeated = status.acks.filter((ack) => (counts.get(ack.requestId) ?? 0) > 1);
    expect({
      missing: missing.map((ack) => ack.requestId),
      repeated: repeated.map((ack) => ack.requestId),
    }).toEqual({
      missing: [],
      repeated: [],
    });
    // Nothing but the start and the acknowledged changes was written (changes left without
    // an answer may or may not have been).
    const known = new Set([...status.acks.map((ack) => ack.requestId), ...status.unresolved]);
    const unexpected = rows.filter((row) => !known.has(row.request_id ?? ""));
    expect(unexpected.map((row) => row.request_id)).toEqual([starts[paced.id] ?? null]);
  });

  test("the history of the paused and resumed campaign is one unbroken chain", async () => {
    const { paced } = ran();
    const rows = await (cluster as Cluster).sql<{ from_status: string; to_status: string }[]>`
      select from_status, to_status from campaign_status_changes
      where campaign_id = ${paced.id} order by created_at, id`;
    const breaks = rows.filter(
      (row, index) => index > 0 && row.from_status !== rows[index - 1]?.to_status,
    );
    expect(breaks).toEqual([]);
  });

  test("every call the node ended has exactly one CDR", async () => {
    const { node } = ran();
    expect(node.ended.length).toBeGreaterThan(0);
    const ids = node.ended.map((call) => call.callId);
    expect(await callsWithoutOneCdr(cluster as Cluster, ids)).toEqual([]);
  });

  test("every event the node sent was accepted", () => {
    expect(ran().node.lost).toEqual([]);
  });

  test("no lead ever had two calls in flight at once", async () => {
    const { dialing } = ran();
    const { calls, overlaps } = await overlappingCalls(cluster as Cluster, [dialing.id]);
    expect(calls).toBeGreaterThan(0);
    expect(overlaps).toEqual([]);
  });

  test("no lead has more attempts than the campaign allows", async () => {
    const { dialing } = ran();
    const sql = (cluster as Cluster).sql;
    const leads = await sql<{ id: string; attempts: number }[]>`
      select id, attempts from leads where campaign_id = ${dialing.id} and attempts > ${MAX_ATTEMPTS}`;
    expect([...leads]).toEqual([]);
    const calls = await sql<{ lead_id: string; count: number }[]>`
      select lead_id, count(*)::int as count from calls
      where campaign_id = ${dialing.id} and outcome is distinct from 'cancelled'
      group by lead_id having count(*) > ${MAX_ATTEMPTS}`;
    expect([...calls]).toEqual([]);
  });

  test("no agent was signed out", () => {
    const { agents, finalAgents } = ran();
    expect(
      finalAgents.filter((agent) => agent.status !== 200 || agent.state === "offline"),
    ).toEqual([]);
    const signedOut = agents
      .map((agent) => ({
        email: agent.email,
        offline: agent.states.filter((state) => state.afterReady && state.state === "offline"),
      }))
      .filter((agent) => agent.offline.length > 0);
    expect(signedOut).toEqual([]);
  });

  test("every connected call was dispositioned", () => {
    const { agents } = ran();
    const failed = agents.flatMap((agent) =>
      agent.dispositions.filter((d) => d.status !== 200).map((d) => ({ email: agent.email, ...d })),
    );
    expect(failed).toEqual([]);
  });

  test("supervisors on every live process saw every acknowledged status change", () => {
    const { watching, status, paced } = ran();
    // A change acknowledged just as a socket opened may have been pushed before it.
    const margin = 500;
    expect(watching.length).toBe(PROCESSES - 1);
    const shortfalls: Json[] = [];
    for (const watch of watching) {
      const acks = status.acks.filter((ack) => ack.at > watch.openedAt + margin);
      for (const to of ["paused", "running"]) {
        const expected = acks.filter((ack) => ack.to === to).length;
        const seen = watch.messages.filter(
          ({ at, message }) =>
            at > watch.openedAt &&
            message.type === "campaign.status" &&
            message.campaign_id === paced.id &&
            message.status === to,
        ).length;
        if (seen < expected) shortfalls.push({ process: watch.process, to, expected, seen });
      }
    }
    expect(shortfalls).toEqual([]);
  });

  test("dialing went on after the owner was killed", async () => {
    const { dialing, restartedAt, killedAt, node } = ran();
    const rows = await (cluster as Cluster).sql<{ count: number }[]>`
      select count(*)::int as count from calls
      where campaign_id = ${dialing.id} and claimed_at > ${new Date(restartedAt)}`;
    expect(rows[0]?.count ?? 0).toBeGreaterThan(0);
    const served = node.claims.filter(
      (claim) => claim.at > killedAt && claim.jobs.some((job) => job.campaign_id === dialing.id),
    );
    expect(served.length).toBeGreaterThan(0);
  });
});
