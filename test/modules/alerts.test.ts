import { beforeAll, describe, expect, test } from "bun:test";
import { campaignConditions, sweepAlerts } from "../../src/modules/alerts/service.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let admin: string;
let supervisor: string;
let agent: string;
let campaignId: string;
let nodeKey: string;

beforeAll(async () => {
  w = await createWorkspace();
  w.clock.advance(Date.parse("2026-03-02T17:00:00Z") - w.clock.now());
  admin = await w.login("admin@acme.test");
  await w.user(w.acme.id, "lead@acme.test", "supervisor");
  supervisor = await w.login("lead@acme.test");
  await w.user(w.acme.id, "agent@acme.test", "agent");
  agent = await w.login("agent@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: { name: "Watched", regulatory_profile: "us" },
    })
  ).body.data.campaign.id;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: admin,
    body: { name: "L", caller_id: "+14155550100" },
  });
  await importFile(
    w,
    `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}/import`,
    admin,
    "phone,timezone\n+14155552671,America/New_York\n",
  );
  nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge-7", max_concurrent_calls: 10 },
    })
  ).body.data.key;
});

const open = async () =>
  (await w.request("GET", "/api/v1/alerts?open=true", { token: supervisor })).body.data.items as {
    kind: string;
    subject_id: string;
    message: string;
    cleared_at: string | null;
  }[];

describe("alerts", () => {
  test("what a campaign's stats say: near its abandon limit, held by the governor, nobody to take calls", () => {
    const stats = {
      leads_total: 10,
      leads_by_state: {} as Record<string, number>,
      calls_in_flight: 0,
      agents_by_state: { ready: 1 } as Record<string, number>,
      answer_rate: 0.3,
      abandon_rate: 0.02,
      dial_ratio: 1,
      dial_ratio_reason: "progressive: configured dial_ratio",
    };
    const holding = (over: Partial<typeof stats>) =>
      campaignConditions({ name: "C", maxAbandonRate: 0.03 }, { ...stats, ...over })
        .filter((condition) => condition.holds)
        .map((condition) => condition.kind);
    expect(holding({ abandon_rate: 0.025 })).toEqual(["abandon_budget"]);
    expect(holding({ abandon_rate: 0.02 })).toEqual([]);
    expect(holding({ dial_ratio_reason: "governor: abandon budget 0.40 (…)" })).toEqual([
      "governor_hold",
    ]);
    expect(holding({ agents_by_state: { paused: 3 } })).toEqual(["no_agents"]);
    expect(holding({ agents_by_state: { on_call: 1 } })).toEqual([]);
  });

  test("a running campaign with nobody to take calls is an alert until someone comes", async () => {
    await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: admin,
      body: { action: "start" },
    });
    await sweepAlerts(w.deps);
    const raised = await open();
    expect(raised).toEqual([
      expect.objectContaining({ kind: "no_agents", subject_id: campaignId, cleared_at: null }),
    ]);
    expect(raised[0]?.message).toContain("Watched");
    // Raised once: a second sweep opens nothing more.
    await sweepAlerts(w.deps);
    expect(await open()).toHaveLength(1);
    // An agent comes: someone takes the calls.
    await w.request("POST", "/api/v1/agents/me/state", {
      token: agent,
      body: { state: "ready", campaign_id: campaignId },
    });
    await sweepAlerts(w.deps);
    expect(await open()).toEqual([]);
    await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: admin,
      body: { action: "pause" },
    });
    await sweepAlerts(w.deps);
    expect(await open()).toEqual([]);
    const all = (await w.request("GET", "/api/v1/alerts", { token: supervisor })).body.data.items;
    expect(all).toHaveLength(1);
    expect(all.every((alert: { cleared_at: string | null }) => alert.cleared_at !== null)).toBe(
      true,
    );
  });

  test("an edge node that stops sending heartbeats", async () => {
    await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: nodeKey,
      body: { active_calls: 0 },
    });
    await sweepAlerts(w.deps);
    expect(await open()).toEqual([]);
    w.clock.advance(31_000);
    await sweepAlerts(w.deps);
    expect(await open()).toEqual([
      expect.objectContaining({ kind: "node_silent", message: expect.stringContaining("edge-7") }),
    ]);
    await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: nodeKey,
      body: { active_calls: 0 },
    });
    await sweepAlerts(w.deps);
    expect(await open()).toEqual([]);
    expect((await w.request("GET", "/api/v1/alerts", { token: agent })).status).toBe(403);
  });
});
