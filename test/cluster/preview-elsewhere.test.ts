import { afterEach, describe, expect, test } from "bun:test";
import { connectChangeFeed } from "../../src/cluster/change-feed.ts";
import { createWorkspace } from "../helpers/app.ts";
import { startLeasedProcess } from "../helpers/leased-process.ts";
import { campaignWithLeads, requestOn } from "../helpers/process-requests.ts";
import type { Message } from "../helpers/sockets.ts";
import { awakeZone } from "../helpers/zones.ts";

/**
 * Offers live with the campaign's owner: an agent's desktop that reaches another process (a
 * load balancer between them) reads its offer from the owner.
 */
const enabled = Boolean(process.env.DATABASE_URL);
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe.skipIf(!enabled)("a preview offer read on another process", () => {
  test("the agent reads the lead offered from a process that does not own the campaign", async () => {
    const w = await createWorkspace();
    const processes = [await startLeasedProcess(w.clock), await startLeasedProcess(w.clock)];
    for (const process of processes) stops.push(() => process.stop());
    for (const process of processes) stops.unshift(await connectChangeFeed(process.deps));
    const [a, b] = processes.map((process) => process.url) as [string, string];
    const admin = await w.login("admin@acme.test");
    const { campaign } = await campaignWithLeads(
      w,
      a,
      admin,
      {
        name: "Preview",
        dial_mode: "preview",
        regulatory_profile: "none",
        calling_window: { start: "00:00", end: "23:59" },
      },
      { phones: ["+14155552671"], timezone: awakeZone() },
    );
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const agent = await w.login("agent@acme.test");
    const node = (
      await requestOn(a, admin, "POST", "/api/v1/edge-nodes", {
        name: "edge",
        max_concurrent_calls: 5,
      })
    ).data;
    await requestOn(a, admin, "POST", `/api/v1/campaigns/${campaign.id}/status`, {
      action: "start",
    });
    await requestOn(a, agent, "POST", "/api/v1/agents/me/state", {
      state: "ready",
      campaign_id: campaign.id,
    });
    await requestOn(a, node.key, "POST", "/api/v1/nodes/jobs/claim", { max: 1 });
    const owner = processes.find((process) => process.leases.holds(campaign.id));
    const elsewhere = owner === processes[0] ? b : a;
    // The other process hears of the agent's reservation, then asks the owner for the offer.
    let seen: Message | undefined;
    for (let wait = 0; wait < 100; wait++) {
      seen = await requestOn(elsewhere, agent, "GET", "/api/v1/agents/me");
      if (seen.data.agent.state === "reserved") break;
      await Bun.sleep(20);
    }
    expect(seen?.data.preview?.lead.phone).toBe("+14155552671");
    const preview = await requestOn(elsewhere, agent, "GET", "/api/v1/agents/me/preview");
    expect(preview.data.preview.lead.phone).toBe("+14155552671");
  });
});
