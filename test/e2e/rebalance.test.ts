import { afterAll, describe, expect, test } from "bun:test";
import { type Cluster, startCluster } from "../helpers/cluster.ts";
import { changeStatus, createCampaign, createWorkspace } from "../helpers/cluster-sim.ts";

/**
 * Campaigns spread again over processes that start later: one process runs every campaign
 * while the two others are down; once they are back, each asks for its share.
 */
const url = process.env.DATABASE_URL;
const CAMPAIGNS = 9;

let cluster: Cluster | undefined;
afterAll(async () => {
  await cluster?.close();
});

describe.skipIf(!url)("campaigns spread over processes that start later", () => {
  test("each process comes to run its share, and every campaign answers through any process", async () => {
    const c = await startCluster({
      size: 3,
      databasePrefix: "dialer_rebalance",
      env: { CAMPAIGN_REBALANCE_SECONDS: "1" },
    });
    cluster = c;
    expect(await c.stop(1)).toBe(0);
    expect(await c.stop(2)).toBe(0);

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

    // Every move is logged once on each side: a hand-over, then a take from that owner.
    const lines = c.all().flatMap((index) => c.leaseLog(index));
    const moves = (message: string, ownerField: string) =>
      lines
        .filter((line) => line.message === message && line[ownerField])
        .map((line) => `${line.campaign_id} from ${line[ownerField]}`)
        .sort();
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
