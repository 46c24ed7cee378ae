import { afterAll, describe, expect, test } from "bun:test";
import { callsWithoutOneCdr, overlappingCalls } from "../helpers/call-invariants.ts";
import { type Cluster, startCluster } from "../helpers/cluster.ts";
import {
  changeStatus,
  createCampaign,
  createWorkspace,
  importLeads,
  startAgent,
  startNode,
} from "../helpers/cluster-sim.ts";

/**
 * Campaigns spread again over processes that start later: one process runs every campaign
 * while the two others are down; once they are back, each asks for its share.
 */
const url = process.env.DATABASE_URL;
const CAMPAIGNS = 9;

const clusters: Cluster[] = [];
afterAll(async () => {
  for (const cluster of clusters) await cluster.close();
});

/** `size` processes that rebalance every second, all but process 0 stopped until restarted. */
async function onlyFirstLive(size: number, databasePrefix: string): Promise<Cluster> {
  const c = await startCluster({
    size,
    databasePrefix,
    env: { CAMPAIGN_REBALANCE_SECONDS: "1" },
  });
  clusters.push(c);
  for (let index = 1; index < size; index++) expect(await c.stop(index)).toBe(0);
  return c;
}

describe.skipIf(!url)("campaigns spread over processes that start later", () => {
  test("each process comes to run its share, and every campaign answers through any process", async () => {
    const c = await onlyFirstLive(3, "dialer_rebalance");

    const workspace = await createWorkspace(c, { domain: "spread.test", agents: 0 });
    const token = workspace.supervisor.token;
    const answer = async (campaignId: string, action: string) =>
      (await changeStatus(c, { token, campaignId, action }))?.status;
    const ids: string[] = [];
    for (let index = 0; index < CAMPAIGNS; index++) {
      const campaign = await createCampaign(c, { token: workspace.admin.token, name: `C${index}` });
      for (const action of ["start", "pause"]) expect(await answer(campaign.id, action)).toBe(200);
      ids.push(campaign.id);
    }
    const owners = async () => Promise.all(ids.map((id) => c.ownerOf(id)));
    expect(new Set(await owners())).toEqual(new Set([0]));

    await c.restart(1);
    await c.restart(2);
    const deadline = Date.now() + 30_000;
    let counts: number[] = [];
    while (Date.now() < deadline) {
      const now = await owners();
      counts = [0, 1, 2].map((index) => now.filter((owner) => owner === index).length);
      if (counts.every((count) => count === CAMPAIGNS / 3)) break;
      await Bun.sleep(250);
    }
    expect(counts).toEqual([3, 3, 3]);

    // Every move is logged once on each side: a hand-over, then a take from that owner. The
    // lease row shows a new owner a moment before its log line reaches the test.
    const moves = (message: string, ownerField: string) =>
      c
        .all()
        .flatMap((index) => c.leaseLog(index))
        .filter((line) => line.message === message && line[ownerField])
        .map((line) => `${line.campaign_id} from ${line[ownerField]}`)
        .sort();
    const logDeadline = Date.now() + 5_000;
    while (
      Date.now() < logDeadline &&
      !Bun.deepEquals(
        moves("campaign lease taken", "previous_owner"),
        moves("campaign lease handed over", "owner"),
      )
    )
      await Bun.sleep(100);
    const handedOver = moves("campaign lease handed over", "owner");
    expect(handedOver.length).toBeGreaterThanOrEqual((CAMPAIGNS * 2) / 3);
    expect(moves("campaign lease taken", "previous_owner")).toEqual(handedOver);
    expect(c.all().flatMap((index) => c.logLines(index, /lease lost/))).toEqual([]);

    for (const id of ids) expect(await answer(id, "start")).toBe(200);
    const rows = await c.sql<{ status: string; changes: number }[]>`
      select c.status, count(h.id)::int as changes
      from campaigns c join campaign_status_changes h on h.campaign_id = c.id
      where c.id = any(${ids}::uuid[]) group by c.id`;
    expect(rows).toHaveLength(CAMPAIGNS);
    for (const row of rows) expect([row.status, row.changes]).toEqual(["running", 3]);
  }, 180_000);
});

describe.skipIf(!url)("a dialing campaign handed over to a process that starts later", () => {
  test("keeps dialing: every event accepted, one CDR per call, no lead dialed twice at once, no agent signed out", async () => {
    const c = await onlyFirstLive(2, "dialer_hand_over");
    const workspace = await createWorkspace(c, { domain: "handover.test", agents: 4 });
    const admin = workspace.admin.token;
    const campaigns: string[] = [];
    for (const [index, name] of ["North", "South"].entries()) {
      const campaign = await createCampaign(c, { token: admin, name, maxAttempts: 2 });
      await importLeads(c, {
        token: admin,
        campaignId: campaign.id,
        count: 200,
        firstNumber: 2000 + index * 1000,
      });
      expect(
        (await changeStatus(c, { token: admin, campaignId: campaign.id, action: "start" }))?.status,
      ).toBe(200);
      campaigns.push(campaign.id);
    }
    const deadline = Date.now() + 20_000;
    const agents = workspace.agents.map((agent, index) =>
      startAgent(c, {
        agent,
        campaignId: campaigns[index % 2] as string,
        process: 0,
        deadline: deadline + 30_000,
      }),
    );
    await Bun.sleep(1_000);
    const node = startNode(c, { key: workspace.nodeKey, deadline, maxInFlight: 4 });
    await Bun.sleep(4_000);

    await c.restart(1);
    const restartedAt = Date.now();
    let moved: string | undefined;
    while (!moved && Date.now() < deadline - 5_000) {
      for (const id of campaigns) if ((await c.ownerOf(id)) === 1) moved = id;
      await Bun.sleep(200);
    }
    expect(moved).toBeDefined();
    const movedAt = Date.now();
    await node.done;
    await Bun.sleep(1_000);
    await Promise.all(agents.map((agent) => agent.stop()));

    // Handed over once the second process was back (again, if the first took it back before
    // the second could: a move is never half made).
    const handedOver = c.logLines(0, /campaign lease handed over/);
    expect(handedOver.map((line) => line.campaign_id)).toContain(moved);
    for (const line of handedOver)
      expect(String(line.time) >= new Date(restartedAt).toISOString()).toBe(true);
    // Dialing went on where it moved to.
    const after = node.claims.filter(
      (claim) => claim.at > movedAt && claim.jobs.some((job) => job.campaign_id === moved),
    );
    expect(after.length).toBeGreaterThan(0);

    expect(node.lost).toEqual([]);
    const ended = node.ended.map((call) => call.callId);
    expect(await callsWithoutOneCdr(c, ended)).toEqual([]);
    expect((await overlappingCalls(c, campaigns)).overlaps).toEqual([]);
    const signedOut = agents.filter((agent) =>
      agent.states.some((state) => state.afterReady && state.state === "offline"),
    );
    expect(signedOut.map((agent) => agent.email)).toEqual([]);
    expect(agents.flatMap((agent) => agent.dispositions.filter((d) => d.status !== 200))).toEqual(
      [],
    );
  }, 120_000);
});
