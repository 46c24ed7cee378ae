import { beforeAll, describe, expect, test } from "bun:test";
import { raiseAlert } from "../../db/queries/alerts.ts";
import { campaignConditions, sweepAlerts } from "../../src/modules/alerts/service.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile, recordAbandonMessage } from "../helpers/leads.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let admin: string;
let supervisor: string;
let agent: string;
let campaignId: string;
let nodeKey: string;
let nodeId: string;

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
  await recordAbandonMessage(w, admin, campaignId);
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
  const node = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge-7", max_concurrent_calls: 10 },
    })
  ).body.data;
  nodeKey = node.key;
  nodeId = node.edge_node.id;
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
    const now = Date.parse("2026-03-02T17:00:00Z");
    const conditions = (over: Partial<typeof stats>, profile: "none" | "uk" = "none") =>
      campaignConditions(
        { name: "C", maxAbandonRate: 0.03, regulatoryProfile: profile },
        { ...stats, ...over },
        now,
      );
    const holding = (over: Partial<typeof stats>) =>
      conditions(over)
        .filter((condition) => condition.holds)
        .map((condition) => condition.kind);
    expect(holding({ abandon_rate: 0.025 })).toEqual(["abandon_budget"]);
    expect(holding({ abandon_rate: 0.02 })).toEqual([]);
    // The limit in force is the lower of the campaign's and its profile's (UK: 3 %).
    const lenient = (profile: "none" | "uk") =>
      campaignConditions(
        { name: "C", maxAbandonRate: 0.05, regulatoryProfile: profile },
        { ...stats, abandon_rate: 0.025 },
        now,
      ).find((condition) => condition.kind === "abandon_budget");
    expect(lenient("none")?.holds).toBe(false);
    expect(lenient("uk")).toMatchObject({
      holds: true,
      message: "C: abandon rate 2.5 % of a 3.0 % limit",
    });
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
    // Silent again, then revoked: nobody waits for its heartbeat any more.
    w.clock.advance(31_000);
    await sweepAlerts(w.deps);
    expect(await open()).toHaveLength(1);
    const revoked = await w.request("DELETE", `/api/v1/edge-nodes/${nodeId}`, { token: admin });
    expect(revoked.status).toBe(200);
    await sweepAlerts(w.deps);
    expect(await open()).toEqual([]);
  });

  test("an open alert keeps its figures current: reworded, not raised again", async () => {
    const subject = { tenantId: w.acme.id, kind: "abandon_budget" as const, subjectId: campaignId };
    const at = new Date(w.clock.now());
    const first = await raiseAlert(w.deps.db, {
      ...subject,
      id: Bun.randomUUIDv7(),
      message: "Watched: abandon rate 2.5 % of a 3.0 % limit",
      raisedAt: at,
    });
    const again = { ...subject, id: Bun.randomUUIDv7(), raisedAt: new Date(at.getTime() + 5_000) };
    expect(
      await raiseAlert(w.deps.db, { ...again, message: first?.message as string }),
    ).toBeUndefined();
    const reworded = await raiseAlert(w.deps.db, {
      ...again,
      message: "Watched: abandon rate 2.9 % of a 3.0 % limit",
    });
    expect(reworded).toMatchObject({
      id: first?.id,
      raisedAt: at,
      message: expect.stringContaining("2.9 %"),
    });
    expect(await open()).toEqual([
      expect.objectContaining({
        kind: "abandon_budget",
        message: expect.stringContaining("2.9 %"),
      }),
    ]);
  });
});
