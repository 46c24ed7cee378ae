import { beforeAll, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let supervisor: string;
let campaignId: string;
let nodeKey: string;
let endedCallId: string;
/** 12:00:00 in New York. */
const NOON = Date.parse("2026-03-02T17:00:00Z");

beforeAll(async () => {
  w = await createWorkspace();
  w.clock.advance(NOON - w.clock.now());
  const admin = await w.login("admin@acme.test");
  await w.user(w.acme.id, "lead@acme.test", "supervisor");
  supervisor = await w.login("lead@acme.test");
  await w.user(w.acme.id, "agent@acme.test", "agent");
  const agent = await w.login("agent@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: admin,
      body: { name: "Figures", regulatory_profile: "none", dial_ratio: 3 },
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
    "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n+14155552673,America/New_York\n",
  );
  const node = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 10 },
    })
  ).body.data.key;
  await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
    token: admin,
    body: { action: "start" },
  });
  await w.request("POST", "/api/v1/agents/me/state", {
    token: agent,
    body: { state: "ready", campaign_id: campaignId },
  });
  const jobs = (
    await w.request("POST", "/api/v1/nodes/jobs/claim", { token: node, body: { max: 3 } })
  ).body.data.jobs as { call_id: string }[];
  expect(jobs).toHaveLength(3);
  const event = (callId: string, type: string, hangupCause?: string, bridgeMs?: number) =>
    w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: node,
      body: {
        type,
        at: new Date(w.clock.now()).toISOString(),
        hangup_cause: hangupCause,
        node_bridge_ms: bridgeMs,
      },
    });
  const [one, two, three] = jobs.map((job) => job.call_id) as [string, string, string];
  nodeKey = node;
  endedCallId = one;
  // 12:00: one call busy. 12:02: one answered and put through 5 s late (an abandoned call
  // in law). 12:03: one answered and put through at once.
  await event(one, "ended", "USER_BUSY");
  w.clock.advance(120_000);
  await event(two, "answered");
  w.clock.advance(30_000);
  await event(two, "ended", "NORMAL_CLEARING", 5_000);
  const done = await w.request("POST", `/api/v1/calls/${two}/disposition`, {
    token: agent,
    body: { disposition: "completed" },
  });
  expect(done.status).toBe(200);
  w.clock.advance(30_000);
  expect((await event(three, "answered")).body.data.call.action).toBe("bridge");
  w.clock.advance(20_000);
  await event(three, "ended", "NORMAL_CLEARING");
});

const history = (query: string, token = supervisor) =>
  w.request("GET", `/api/v1/campaigns/${campaignId}/stats/history${query}`, { token });

describe("a campaign's figures minute by minute", () => {
  test("every whole minute of the range, those without calls included", async () => {
    const reply = await history("?from=2026-03-02T17:00:30Z&to=2026-03-02T17:04:00Z");
    expect(reply.status).toBe(200);
    const items = reply.body.data.items;
    expect(items.map((item: { minute: string }) => item.minute)).toEqual([
      "2026-03-02T17:00:00.000Z",
      "2026-03-02T17:01:00.000Z",
      "2026-03-02T17:02:00.000Z",
      "2026-03-02T17:03:00.000Z",
    ]);
    expect(items[0]).toMatchObject({ attempts: 1, busy: 1, answered: 0, answer_rate: 0 });
    expect(items[1]).toMatchObject({ attempts: 0, answer_rate: null, abandon_rate: null });
    expect(items[2]).toMatchObject({
      attempts: 1,
      answered: 0,
      abandoned: 1,
      bridged_late: 1,
      talk_seconds: 30,
      answer_rate: 1,
      abandon_rate: 1,
    });
    expect(items[3]).toMatchObject({
      attempts: 1,
      answered: 1,
      abandoned: 0,
      bridged_late: 0,
      talk_seconds: 20,
      abandon_rate: 0,
    });
    // Minutes of the first century are theirs, not 19xx's or 20xx's.
    const early = await history("?from=0099-01-01T00:00:00Z&to=0099-01-01T00:02:00Z");
    expect(early.body.data.items.map((item: { minute: string }) => item.minute)).toEqual([
      "0099-01-01T00:00:00.000Z",
      "0099-01-01T00:01:00.000Z",
    ]);
  });

  test("the last hour by default, up to now", async () => {
    const items = (await history("")).body.data.items;
    expect(items).toHaveLength(60);
    expect(items.at(-1).minute).toBe("2026-03-02T17:03:00.000Z");
  });

  test("a range longer than a week, up to a quarter, lists the minutes with calls", async () => {
    const month = await history("?from=2026-01-26T17:00:00Z&to=2026-03-02T18:00:00Z");
    expect(month.status).toBe(200);
    expect(month.body.data.items.map((item: { minute: string }) => item.minute)).toEqual([
      "2026-03-02T17:00:00.000Z",
      "2026-03-02T17:02:00.000Z",
      "2026-03-02T17:03:00.000Z",
    ]);
    expect(month.body.data.items[1]).toMatchObject({ attempts: 1, abandoned: 1 });
  });

  test("a reversed or too long range, a bad time or another tenant's campaign are refused", async () => {
    const reversed = await history("?from=2026-03-02T18:00:00Z&to=2026-03-02T17:00:00Z");
    expect(reversed.status).toBe(422);
    expect(reversed.body.field_errors[0].field).toBe("from");
    expect((await history("?from=2025-11-01T00:00:00Z&to=2026-03-02T17:00:00Z")).status).toBe(422);
    for (const year0 of [
      "?from=0000-01-01T00:00:00Z&to=0000-01-01T01:00:00Z",
      "?to=0001-01-01T00:30:00Z",
    ])
      expect((await history(year0)).status).toBe(year0.includes("0000") ? 400 : 200);
    const bad = await history("?from=yesterday");
    expect(bad.status).toBe(400);
    expect(bad.body.field_errors[0].field).toBe("from");
    const outsider = await w.tenant("other.test");
    await w.user(outsider.id, "x@other.test", "supervisor");
    const stranger = await w.login("x@other.test", undefined, "other.test");
    expect((await history("", stranger)).status).toBe(404);
  });

  test("a node's event at a time the database cannot store is refused, naming `at`", async () => {
    for (const at of [
      "0000-01-01T00:00:00Z",
      "9999-12-31T23:59:59-05:00",
      "2026-02-30T12:00:00Z",
    ]) {
      const reply = await w.request("POST", `/api/v1/nodes/calls/${endedCallId}/events`, {
        token: nodeKey,
        body: { type: "ended", at, hangup_cause: "NORMAL_CLEARING" },
      });
      expect({ at, status: reply.status, field: reply.body.field_errors?.[0]?.field }).toEqual({
        at,
        status: 400,
        field: "at",
      });
    }
  });
});
