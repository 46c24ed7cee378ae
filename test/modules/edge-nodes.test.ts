import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { runningCampaign } from "../helpers/leads.ts";

let w: Awaited<ReturnType<typeof createWorkspace>>;
let adminToken: string;
beforeEach(async () => {
  w = await createWorkspace();
  adminToken = await w.login("admin@acme.test");
});

const register = async (name = "edge-1") => {
  const response = await w.request("POST", "/api/v1/edge-nodes", {
    token: adminToken,
    body: { name, max_concurrent_calls: 30 },
  });
  expect(response.status).toBe(201);
  return response.body.data as { key: string; edge_node: { id: string } };
};

describe("edge nodes", () => {
  test("registration returns the key once; the list shows heartbeat and online state", async () => {
    const { key, edge_node } = await register();
    expect(key).toMatch(/^svc_node_[A-Za-z0-9_-]{43}$/);
    expect(edge_node).toMatchObject({
      name: "edge-1",
      max_concurrent_calls: 30,
      online: false,
      last_heartbeat_at: null,
    });
    const beat = await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: key,
      body: { active_calls: 4 },
    });
    expect(beat.status).toBe(200);
    expect(beat.body.data.edge_node).toMatchObject({
      id: edge_node.id,
      active_calls: 4,
      online: true,
    });
    const list = await w.request("GET", "/api/v1/edge-nodes", { token: adminToken });
    expect(JSON.stringify(list.body)).not.toContain(key);
    expect(list.body.data.items[0]).toMatchObject({ online: true, active_calls: 4 });
    w.clock.advance(31_000);
    const later = await w.request("GET", "/api/v1/edge-nodes", { token: adminToken });
    expect(later.body.data.items[0].online).toBe(false);
  });

  test("the key decides the node and tenant, whatever the body says", async () => {
    const { key, edge_node } = await register();
    const other = await register("edge-2");
    const beat = await w.request("POST", `/api/v1/nodes/heartbeat?tenant_id=${w.platform.id}`, {
      token: key,
      body: { active_calls: 1, node_id: other.edge_node.id, tenant_id: w.platform.id },
    });
    expect(beat.status).toBe(200);
    expect(beat.body.data.edge_node).toMatchObject({ id: edge_node.id, tenant_id: w.acme.id });
  });

  test("claim answers with no jobs, after waiting up to wait_ms", async () => {
    const { key } = await register();
    const started = performance.now();
    const response = await w.request("POST", "/api/v1/nodes/jobs/claim", {
      token: key,
      body: { max: 5, wait_ms: 200 },
    });
    expect(response.status).toBe(200);
    expect(response.body.data.jobs).toEqual([]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(
      (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: key, body: { max: 0 } }))
        .status,
    ).toBe(400);
  });

  test("node routes take node keys only; node keys are 401 elsewhere", async () => {
    const { key } = await register();
    const apiKey = (
      await w.request("POST", "/api/v1/api-keys", {
        token: adminToken,
        body: { name: "k", scopes: { campaigns: "write" } },
      })
    ).body.data.key;
    for (const token of [adminToken, apiKey, "svc_node_bogus", undefined]) {
      const response = await w.request("POST", "/api/v1/nodes/heartbeat", {
        token,
        body: { active_calls: 0 },
      });
      expect(response.status).toBe(401);
    }
    expect((await w.request("GET", "/api/v1/campaigns", { token: key })).status).toBe(401);
    expect((await w.request("GET", "/api/v1/auth/me", { token: key })).status).toBe(401);
  });

  test("a revoked node key is refused at once", async () => {
    const { key, edge_node } = await register();
    expect(
      (
        await w.request("POST", "/api/v1/nodes/heartbeat", {
          token: key,
          body: { active_calls: 0 },
        })
      ).status,
    ).toBe(200);
    const revoked = await w.request("DELETE", `/api/v1/edge-nodes/${edge_node.id}`, {
      token: adminToken,
    });
    expect(revoked.body.data.edge_node.revoked_at).toMatch(/Z$/);
    expect(
      (
        await w.request("POST", "/api/v1/nodes/heartbeat", {
          token: key,
          body: { active_calls: 0 },
        })
      ).status,
    ).toBe(401);
  });

  test("a claim waiting when its node is revoked places no call", async () => {
    w.clock.advance(Date.parse("2026-03-02T17:00:00Z") - w.clock.now());
    await w.user(w.acme.id, "agent@acme.test", "agent");
    const agent = await w.login("agent@acme.test");
    const { campaignId, nodeKey: key } = await runningCampaign(
      w,
      adminToken,
      { name: "Dial", regulatory_profile: "none" },
      `phone,timezone\n${[1, 2, 3, 4, 5, 6].map((n) => `+1415555267${n},America/New_York`).join("\n")}\n`,
    );
    const nodes = await w.request("GET", "/api/v1/edge-nodes", { token: adminToken });
    const edge_node = nodes.body.data.items[0] as { id: string };
    const waiting = w.request("POST", "/api/v1/nodes/jobs/claim", {
      token: key,
      body: { max: 5, wait_ms: 500 },
    });
    await Bun.sleep(50);
    await w.request("DELETE", `/api/v1/edge-nodes/${edge_node.id}`, { token: adminToken });
    await w.request("POST", "/api/v1/agents/me/state", {
      token: agent,
      body: { state: "ready", campaign_id: campaignId },
    });
    const claimed = await waiting;
    expect([claimed.status, claimed.body.data?.jobs]).toEqual([200, []]);
    const me = await w.request("GET", "/api/v1/agents/me", { token: agent });
    expect(me.body.data.agent).toMatchObject({ state: "ready", call_id: null });
    // The leads it could not take keep their turn: another node dials the first one first.
    const other = await register("edge-2");
    const next = await w.request("POST", "/api/v1/nodes/jobs/claim", {
      token: other.key,
      body: { max: 1 },
    });
    expect(next.body.data.jobs.map((job: { phone: string }) => job.phone)).toEqual([
      "+14155552671",
    ]);
  });

  test("only admins manage nodes", async () => {
    await w.user(w.acme.id, "sup@acme.test", "supervisor");
    const token = await w.login("sup@acme.test");
    expect((await w.request("GET", "/api/v1/edge-nodes", { token })).status).toBe(403);
  });
});
