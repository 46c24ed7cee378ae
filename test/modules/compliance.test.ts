import { expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { importFile, recordAbandonMessage } from "../helpers/leads.ts";

test("the compliance view counts late bridges and calls with no agent as abandons, with their evidence", async () => {
  const w = await createWorkspace();
  w.clock.advance(Date.parse("2026-03-02T17:00:00Z") - w.clock.now());
  const admin = await w.login("admin@acme.test");
  await w.user(w.acme.id, "agent@acme.test", "agent");
  const agent = await w.login("agent@acme.test");
  const campaignId = (
    await w.request("POST", "/api/v1/campaigns", { token: admin, body: { name: "Dial" } })
  ).body.data.campaign.id as string;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: admin,
    body: { name: "L", caller_id: "+14155550100" },
  });
  await importFile(
    w,
    `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}/import`,
    admin,
    "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n+14155552673,America/New_York\n",
  );
  const nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 10 },
    })
  ).body.data.key as string;
  // With the message the profile requires, a call may be placed without an agent reserved.
  await recordAbandonMessage(w, admin, campaignId);
  const path = `/api/v1/campaigns/${campaignId}/compliance`;
  const before = await w.request("GET", path, { token: admin });
  expect(before.status).toBe(200);
  expect(before.body.data.compliance.window).toMatchObject({ live_answers: 0, abandons: 0 });

  await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
    token: admin,
    body: { action: "start" },
  });
  const agentState = (state: string) =>
    w.request("POST", "/api/v1/agents/me/state", {
      token: agent,
      body: { state, campaign_id: campaignId },
    });
  const claim = async () =>
    (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max: 1 } })).body
      .data.jobs[0].call_id as string;
  const event = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
    w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: nodeKey,
      body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
    });
  const talk = async (bridgeMs: number) => {
    await agentState("ready");
    const callId = await claim();
    expect((await event(callId, "answered")).body.data.call.action).toBe("bridge");
    w.clock.advance(30_000);
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING", node_bridge_ms: bridgeMs });
    await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: agent,
      body: { disposition: "completed" },
    });
    return callId;
  };
  const inTime = await talk(2_000);
  const late = await talk(2_001);
  await agentState("ready");
  const unanswered = await claim();
  await agentState("paused");
  expect((await event(unanswered, "answered")).body.data.call.action).toBe("hangup");
  await event(unanswered, "ended", { hangup_cause: "NORMAL_CLEARING" });

  const after = (await w.request("GET", path, { token: admin })).body.data.compliance;
  expect(after).toMatchObject({
    basis: "campaign",
    max_abandon_rate: 0.03,
    window: { live_answers: 3, abandons: 2, abandon_budget: 0 },
    last_24_hours: { live_answers: 3, abandons: 2 },
    abandon_budget: 0,
  });
  expect(after.window.abandon_rate).toBeCloseTo(2 / 3, 6);

  const csv = await w.request("GET", path, { token: admin, headers: { accept: "text/csv" } });
  expect(csv.headers.get("content-type")).toContain("text/csv");
  const rows = (csv.body as string).trim().split("\r\n");
  expect(rows).toHaveLength(4);
  expect(rows.find((row) => row.startsWith(inTime))).toContain(",answer,");
  expect(rows.find((row) => row.startsWith(late))).toContain(",abandon,");
  expect(rows.find((row) => row.startsWith(unanswered))).toContain(",abandon,");

  expect((await w.request("GET", path, { token: agent })).status).toBe(403);
  expect(
    (
      await w.request("GET", "/api/v1/campaigns/00000000-0000-7000-8000-000000000000/compliance", {
        token: admin,
      })
    ).status,
  ).toBe(404);
});

test("the compliance view reports the abandon limit in force: the campaign's, never past its profile's", async () => {
  const w = await createWorkspace();
  const admin = await w.login("admin@acme.test");
  const limitOf = async (body: Record<string, unknown>) => {
    const id = (
      await w.request("POST", "/api/v1/campaigns", { token: admin, body: { name: "C", ...body } })
    ).body.data.campaign.id as string;
    return (await w.request("GET", `/api/v1/campaigns/${id}/compliance`, { token: admin })).body
      .data.compliance.max_abandon_rate;
  };
  expect(await limitOf({ regulatory_profile: "us", max_abandon_rate: 0.1 })).toBe(0.03);
  expect(await limitOf({ regulatory_profile: "us", max_abandon_rate: 0.02 })).toBe(0.02);
});

test("the compliance view counts over the profile's period: 24 hours under uk, the calendar month under ca", async () => {
  const w = await createWorkspace();
  const startedAt = Date.parse("2026-03-02T17:00:00Z");
  w.clock.advance(startedAt - w.clock.now());
  let admin = await w.login("admin@acme.test");
  const started = async (profile: string) => {
    const id = (
      await w.request("POST", "/api/v1/campaigns", {
        token: admin,
        body: { name: profile, regulatory_profile: profile },
      })
    ).body.data.campaign.id as string;
    const start = await w.request("POST", `/api/v1/campaigns/${id}/status`, {
      token: admin,
      body: { action: "start" },
    });
    expect(start.status).toBe(200);
    return id;
  };
  const campaigns = { us: await started("us"), uk: await started("uk"), ca: await started("ca") };
  const windowOf = async (id: string) => {
    const { basis, window } = (
      await w.request("GET", `/api/v1/campaigns/${id}/compliance`, { token: admin })
    ).body.data.compliance;
    return { basis, from: window.from };
  };
  const firstStart = new Date(startedAt).toISOString();
  for (const id of Object.values(campaigns))
    expect(await windowOf(id)).toEqual({ basis: "campaign", from: firstStart });

  const now = Date.parse("2026-04-03T09:30:00Z");
  w.clock.advance(now - w.clock.now());
  admin = await w.login("admin@acme.test");
  expect(await windowOf(campaigns.us)).toEqual({
    basis: "rolling_30_days",
    from: new Date(now - 30 * 86_400_000 + 1).toISOString(),
  });
  expect(await windowOf(campaigns.uk)).toEqual({
    basis: "rolling_24_hours",
    from: new Date(now - 86_400_000 + 1).toISOString(),
  });
  expect(await windowOf(campaigns.ca)).toEqual({
    basis: "calendar_month",
    from: "2026-04-01T00:00:00.000Z",
  });
});
