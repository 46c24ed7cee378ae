import { afterEach, describe, expect, test } from "bun:test";
import { runStatement } from "../../db/statement.ts";
import { type ClusterPushRelay, connectPushRelay } from "../../src/cluster/push-relay.ts";
import { createWorkspace } from "../helpers/app.ts";
import { startLeasedProcess } from "../helpers/leased-process.ts";
import { campaignWithLeads, requestOn } from "../helpers/process-requests.ts";
import { awakeZone } from "../helpers/zones.ts";

/**
 * A process alone counts a node's calls in memory. One that has just heard of another process
 * (its relay's hello comes before that process takes any campaign) counts them in the
 * database, where the other's calls are.
 */
const enabled = Boolean(process.env.DATABASE_URL);
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe.skipIf(!enabled)("a node's capacity with a process that has just started", () => {
  test("a process that hears of another caps its claims by the node's calls in the database", async () => {
    const w = await createWorkspace();
    const a = await startLeasedProcess(w.clock);
    stops.push(() => a.stop());
    const admin = await w.login("admin@acme.test");
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const agent = await w.login("agent@acme.test");
    const on = (token: string, method: string, path: string, body?: unknown) =>
      requestOn(a.url, token, method, path, body);
    /** A campaign open all day with one list of these phones. */
    const campaignWith = (name: string, phones: string[]) =>
      campaignWithLeads(
        w,
        a.url,
        admin,
        { name, regulatory_profile: "none", calling_window: { start: "00:00", end: "23:59" } },
        { phones, timezone: awakeZone() },
      );
    const { campaign } = await campaignWith("Capacity", [
      "+14155552671",
      "+14155552672",
      "+14155552673",
    ]);
    const created = (
      await on(admin, "POST", "/api/v1/edge-nodes", { name: "edge", max_concurrent_calls: 1 })
    ).data;
    await on(admin, "POST", `/api/v1/campaigns/${campaign.id}/status`, { action: "start" });
    await on(agent, "POST", "/api/v1/agents/me/state", {
      state: "ready",
      campaign_id: campaign.id,
    });
    // A holds every lease there is: alone, at its last look.
    await a.deps.campaigns.adoptOrphans();
    expect(a.leases.alone()).toBe(true);

    // A process just started says hello; its first call on the node is already placed.
    const b = await startLeasedProcess(w.clock);
    const relays: ClusterPushRelay[] = [
      await connectPushRelay(a.deps, { heartbeatMs: 100 }),
      await connectPushRelay(b.deps, { heartbeatMs: 100 }),
    ];
    stops.push(async () => {
      for (const relay of relays) await relay.stop();
      await b.stop();
    });
    for (let wait = 0; wait < 100 && !a.deps.realtime.othersHeard(); wait++) await Bun.sleep(10);
    // Its campaign, and its call in flight on the node.
    const { campaign: theirs, list: theirList } = await campaignWith("Theirs", ["+14155552679"]);
    const [theirLead] = await runStatement<{ id: string }>(
      w.deps.rawDb,
      "select id from leads where campaign_id = $1::uuid",
      [theirs.id],
    );
    await runStatement(
      w.deps.rawDb,
      `insert into calls (id, tenant_id, campaign_id, lead_list_id, lead_id, edge_node_id, agent_id,
         phone, caller_id, attempt, timeout_seconds, status, bridged, machine, lease_expires_at,
         claimed_at, updated_at)
       values ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::uuid, null, '+14155552679',
         '+14155550100', 1, 30, 'claimed', false, false, now() + interval '1 minute', now(), now())`,
      [
        Bun.randomUUIDv7(),
        w.acme.id,
        theirs.id,
        theirList.id,
        theirLead?.id ?? null,
        created.edge_node.id,
      ],
    );

    const claim = await on(created.key, "POST", "/api/v1/nodes/jobs/claim", { max: 1 });
    expect(claim.data.jobs).toEqual([]);
  });
});
