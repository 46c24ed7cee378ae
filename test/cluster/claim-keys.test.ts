import { afterEach, describe, expect, test } from "bun:test";
import { runStatement } from "../../db/statement.ts";
import { connectChangeFeed } from "../../src/cluster/change-feed.ts";
import { createWorkspace } from "../helpers/app.ts";
import { startLeasedProcess } from "../helpers/leased-process.ts";
import { campaignWithLeads, requestOn } from "../helpers/process-requests.ts";
import { awakeZone } from "../helpers/zones.ts";

/**
 * A node that repeats a keyed claim, its first still under way, may reach another process
 * (a load balancer between them): the repeat gets the first claim's jobs, and no call is
 * placed twice.
 */
const enabled = Boolean(process.env.DATABASE_URL);
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe.skipIf(!enabled)("a keyed claim repeated on another process", () => {
  test("repeats sent to two processes at once get one claim's jobs, each call placed once", async () => {
    const w = await createWorkspace();
    const processes = [await startLeasedProcess(w.clock), await startLeasedProcess(w.clock)];
    for (const process of processes) stops.push(() => process.stop());
    // Each hears of the agents' states the other takes in: either may serve a claim.
    for (const process of processes) stops.unshift(await connectChangeFeed(process.deps));
    const admin = await w.login("admin@acme.test");
    const on = (url: string, token: string, path: string, body: unknown, key?: string) =>
      requestOn(url, token, "POST", path, body, key ? { "idempotency-key": key } : {});
    const [a, b] = processes.map((process) => process.url) as [string, string];
    const phones = Array.from({ length: 40 }, (_, i) => `+1415555${String(2600 + i)}`);
    const { campaign } = await campaignWithLeads(
      w,
      a,
      admin,
      {
        name: "Keyed",
        regulatory_profile: "none",
        calling_window: { start: "00:00", end: "23:59" },
        dial_ratio: 3,
      },
      { phones, timezone: awakeZone() },
    );
    for (let i = 0; i < 4; i++) {
      await w.user(w.acme.id, `agent${i}@acme.test`, "agent");
      const agent = await w.login(`agent${i}@acme.test`);
      await on(a, agent, "/api/v1/agents/me/state", { state: "ready", campaign_id: campaign.id });
    }
    const node = (
      await on(a, admin, "/api/v1/edge-nodes", { name: "edge", max_concurrent_calls: 100 })
    ).data;
    await on(a, admin, `/api/v1/campaigns/${campaign.id}/status`, { action: "start" });

    for (const round of [1, 2, 3]) {
      const key = `claim-${round}`;
      const claims = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          on(i % 2 === 0 ? a : b, node.key, "/api/v1/nodes/jobs/claim", { max: 2 }, key),
        ),
      );
      const jobSets = claims.map((claim) =>
        (claim.data.jobs as { call_id: string }[]).map((job) => job.call_id).sort(),
      );
      expect(jobSets[0]?.length).toBe(2);
      for (const jobs of jobSets) expect(jobs).toEqual(jobSets[0] as string[]);
      const placed = await runStatement<{ count: number }>(
        w.deps.rawDb,
        "select count(*)::int as count from calls where claim_key = $1",
        [key],
      );
      expect(placed[0]?.count).toBe(2);
    }
    // Every claim let its key go.
    const held = await runStatement<{ count: number }>(
      w.deps.rawDb,
      "select count(*)::int as count from node_claim_keys",
      [],
    );
    expect(held[0]?.count).toBe(0);
  });
});
