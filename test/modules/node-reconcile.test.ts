import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

/**
 * A node whose claim reply was lost gets the same jobs by repeating the claim's key, and a
 * node's heartbeat that does not list a call it was given fails that call at once.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let adminToken: string;
let nodeKey: string;
let campaignId: string;
let listPath: string;

/** 2026-03-02T17:00Z is noon in New York: inside the default 08:00–21:00 window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");
const CSV = `phone,timezone\n${["+14155552671", "+14155552672", "+14155552673", "+14155552674"]
  .map((phone) => `${phone},America/New_York`)
  .join("\n")}\n`;

beforeEach(async () => {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  adminToken = await w.login("admin@acme.test");
  await w.user(w.acme.id, "agent@acme.test", "agent");
  const agentToken = await w.login("agent@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "Dial", dial_ratio: 4, regulatory_profile: "none" },
    })
  ).body.data.campaign.id;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: adminToken,
    body: { name: "L", caller_id: "+14155550100" },
  });
  listPath = `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}`;
  await importFile(w, `${listPath}/import`, adminToken, CSV);
  nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: adminToken,
      body: { name: "edge", max_concurrent_calls: 10 },
    })
  ).body.data.key;
  await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
    token: adminToken,
    body: { action: "start" },
  });
  await w.request("POST", "/api/v1/agents/me/state", {
    token: agentToken,
    body: { state: "ready", campaign_id: campaignId },
  });
});

const claim = (max: number, key?: string) =>
  w.request("POST", "/api/v1/nodes/jobs/claim", {
    token: nodeKey,
    body: { max },
    headers: key ? { "idempotency-key": key } : {},
  });
const heartbeat = (ids: string[]) =>
  w.request("POST", "/api/v1/nodes/heartbeat", {
    token: nodeKey,
    body: { active_calls: ids.length, active_call_ids: ids },
  });
const leads = async () =>
  (await w.request("GET", `${listPath}/leads`, { token: adminToken })).body.data.items as {
    phone: string;
    state: string;
  }[];

describe("a claim's Idempotency-Key", () => {
  test("a repeated key gets the same jobs, byte for byte, and places nothing more", async () => {
    const first = await claim(2, "claim-1");
    expect(first.body.data.jobs).toHaveLength(2);
    const again = await claim(2, "claim-1");
    expect(again.status).toBe(200);
    expect(JSON.stringify(again.body)).toBe(JSON.stringify(first.body));
    expect((await leads()).filter((lead) => lead.state === "Dialing")).toHaveLength(2);
    const next = await claim(2, "claim-2");
    expect(next.body.data.jobs).toHaveLength(2);
    expect(next.body.data.jobs.map((job: { call_id: string }) => job.call_id)).not.toContain(
      first.body.data.jobs[0].call_id,
    );
  });

  test("a restarted process finds the jobs by the key the calls carry", async () => {
    const first = await claim(2, "before-restart");
    w.restart();
    const again = await claim(2, "before-restart");
    expect(again.body.data.jobs.map((job: { call_id: string }) => job.call_id).sort()).toEqual(
      first.body.data.jobs.map((job: { call_id: string }) => job.call_id).sort(),
    );
    expect((await leads()).filter((lead) => lead.state === "Dialing")).toHaveLength(2);
  });

  test("after 60 s the key claims anew, and a malformed key is 400", async () => {
    await claim(1, "window");
    w.clock.advance(61_000);
    const later = await claim(1, "window");
    expect(later.body.data.jobs).toHaveLength(1);
    expect((await leads()).filter((lead) => lead.state === "Dialing")).toHaveLength(2);
    const bad = await claim(1, "\u00e9t\u00e9");
    expect([bad.status, bad.body.code]).toEqual([400, "invalid_request"]);
  });
});

describe("a heartbeat's active_call_ids", () => {
  test("a call the node does not hold fails at once with NODE_LOST once it is 10 s old", async () => {
    const jobs = (await claim(2)).body.data.jobs as { call_id: string }[];
    const [kept, lost] = jobs.map((job) => job.call_id) as [string, string];
    // Too young: the claim's reply may still be on its way to the node.
    expect((await heartbeat([kept])).status).toBe(200);
    expect((await leads()).filter((lead) => lead.state === "Dialing")).toHaveLength(2);
    w.clock.advance(11_000);
    expect((await heartbeat([kept])).status).toBe(200);
    const cdrs = (await w.request("GET", "/api/v1/cdrs", { token: adminToken })).body.data.items;
    expect(cdrs).toHaveLength(1);
    expect(cdrs[0]).toMatchObject({ call_id: lost, outcome: "failed", hangup_cause: "NODE_LOST" });
    const states = (await leads()).map((lead) => lead.state).sort();
    expect(states).toEqual(["Dialing", "Fresh", "Fresh", "Retry"]);
    // The node's own call goes on.
    const ringing = await w.request("POST", `/api/v1/nodes/calls/${kept}/events`, {
      token: nodeKey,
      body: { type: "ringing", at: new Date(w.clock.now()).toISOString() },
    });
    expect(ringing.status).toBe(200);
  });

  test("a heartbeat without the list changes nothing; malformed ids are 400", async () => {
    await claim(2);
    w.clock.advance(11_000);
    const plain = await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: nodeKey,
      body: { active_calls: 0 },
    });
    expect(plain.status).toBe(200);
    expect((await leads()).filter((lead) => lead.state === "Dialing")).toHaveLength(2);
    const bad = await heartbeat(["not-a-uuid"]);
    expect(bad.status).toBe(400);
  });
});
