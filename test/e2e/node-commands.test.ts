import { afterAll, describe, expect, test } from "bun:test";
import { type Cluster, startCluster } from "../helpers/cluster.ts";
import { createCampaign, createWorkspace, importLeads, must } from "../helpers/cluster-sim.ts";

/**
 * A command for a node, across processes: made on the campaign's owner, handed to a node
 * polling another process, handed again (same id) to a node that reconnects without having
 * acknowledged it, and again after the process that made it was killed; once acknowledged,
 * never again.
 */
const url = process.env.DATABASE_URL;

const clusters: Cluster[] = [];
afterAll(async () => {
  for (const cluster of clusters) await cluster.close();
});

describe.skipIf(!url)("commands to a node on several processes", () => {
  test("a hang-up is delivered across a node's reconnect and a failover, and acted on once", async () => {
    const c = await startCluster({ size: 2, databasePrefix: "dialer_commands" });
    clusters.push(c);
    const workspace = await createWorkspace(c, { domain: "commands.test", agents: 1 });
    const admin = workspace.admin.token;
    const agent = workspace.agents[0]?.token as string;
    const node = workspace.nodeKey;
    const campaign = await createCampaign(c, { token: admin, name: "Commands", via: 0 });
    await importLeads(c, { token: admin, campaignId: campaign.id as string, count: 1 });
    await must(c, "POST", `/api/v1/campaigns/${campaign.id}/status`, {
      token: admin,
      body: { action: "start" },
    });
    await must(c, "POST", "/api/v1/agents/me/state", {
      token: agent,
      body: { state: "ready", campaign_id: campaign.id },
    });
    await must(c, "POST", "/api/v1/nodes/heartbeat", { token: node, body: { active_calls: 0 } });
    let callId: string | undefined;
    for (let tries = 0; tries < 50 && !callId; tries++) {
      const claimed = await must(c, "POST", "/api/v1/nodes/jobs/claim", {
        token: node,
        body: { max: 1, wait_ms: 1_000 },
      });
      callId = claimed.data.jobs[0]?.call_id;
    }
    if (!callId) throw new Error("no call was claimed");
    await must(c, "POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: node,
      body: { type: "answered", at: new Date().toISOString() },
    });
    const owner = await c.ownerOf(campaign.id as string);
    if (owner === undefined) throw new Error("the campaign has no owner");
    const other = owner === 0 ? 1 : 0;
    const poll = async (via: number, ack: string[] = [], waitMs = 0) =>
      (
        await must(c, "POST", "/api/v1/nodes/commands", {
          token: node,
          via,
          body: { ack, wait_ms: waitMs },
        })
      ).data.commands as { id: string; type: string; call_id: string }[];

    // The node waits on the process that does not own the campaign; the agent's hang-up is
    // made on the owner, and reaches the node there.
    const waiting = poll(other, [], 10_000);
    await Bun.sleep(100);
    const asked = Date.now();
    await must(c, "POST", `/api/v1/calls/${callId}/hangup`, { token: agent, via: owner });
    const [first] = await waiting;
    expect(first).toMatchObject({ type: "hangup", call_id: callId });
    expect(Date.now() - asked).toBeLessThan(5_000);

    // The node reconnects before acknowledging it: the same command, by its id, once.
    expect((await poll(other)).map((command) => command.id)).toEqual([first?.id as string]);

    // The process that made it dies before the node acknowledged it: the survivor hands it out.
    await c.kill(owner);
    expect((await poll(other)).map((command) => command.id)).toEqual([first?.id as string]);
    expect(await poll(other, [first?.id as string])).toEqual([]);
    expect(await poll(other)).toEqual([]);
    const [row] = await c.sql<{ deliveries: number; acked: boolean }[]>`
      select deliveries, acked_at is not null as acked from node_commands where call_id = ${callId}`;
    expect(row).toEqual({ deliveries: 3, acked: true });
  }, 180_000);
});
