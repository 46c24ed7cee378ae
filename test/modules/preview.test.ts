import { beforeEach, describe, expect, test } from "bun:test";
import { and, eq, ne } from "drizzle-orm";
import { manualLead } from "../../db/queries/dials.ts";
import { calls } from "../../db/schema/index.ts";
import { sweepAgentDeadlines } from "../../src/dialer/agent-deadlines.ts";
import { createWorkspace } from "../helpers/app.ts";
import { liveCallRow } from "../helpers/campaigns.ts";
import { importFile } from "../helpers/leads.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let adminToken: string;
let agentToken: string;
let agentId: string;
let nodeKey: string;
let campaignId: string;

/** Noon in New York: inside the calling window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");

async function setUp(campaign: Record<string, unknown> = {}) {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  adminToken = await w.login("admin@acme.test");
  agentId = (await w.user(w.acme.id, "agent@acme.test", "agent")).id;
  agentToken = await w.login("agent@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: {
        name: "Preview",
        dial_mode: "preview",
        regulatory_profile: "us",
        preview_timeout_seconds: 30,
        ...campaign,
      },
    })
  ).body.data.campaign.id;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: adminToken,
    body: { name: "L", caller_id: "+14155550100" },
  });
  await importFile(
    w,
    `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}/import`,
    adminToken,
    "phone,timezone,zone_note,first_name,area\n+14155552671,America/New_York,east,Ada,bay\n+14155552672,America/New_York,east,Grace,bay\n",
  );
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
  await w.request("POST", "/api/v1/nodes/heartbeat", {
    token: nodeKey,
    body: { active_calls: 0 },
  });
}

const as = (method: string, path: string, body?: Record<string, unknown>) =>
  w.request(method, path, { token: agentToken, ...(body ? { body } : {}) });
const me = async () => (await as("GET", "/api/v1/agents/me")).body.data;
const claim = async () =>
  (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max: 5 } })).body
    .data.jobs;
const commands = async () =>
  (await w.request("POST", "/api/v1/nodes/commands", { token: nodeKey, body: {} })).body.data
    .commands as { id: string; type: string; call_id: string; job?: Record<string, unknown> }[];
const event = (callId: string, type: string) =>
  w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
    token: nodeKey,
    body: { type, at: new Date(w.clock.now()).toISOString() },
  });
const ready = () =>
  as("POST", "/api/v1/agents/me/state", { state: "ready", campaign_id: campaignId });

describe("a real preview", () => {
  beforeEach(() => setUp());

  test("the lead is offered before anything is dialled, with its fields and eligibility", async () => {
    await ready();
    expect(await claim()).toEqual([]);
    const offered = await me();
    expect(offered.agent).toMatchObject({ state: "reserved", call_id: null });
    expect(offered.preview).toMatchObject({
      campaign_id: campaignId,
      lead: { phone: "+14155552671", fields: { first_name: "Ada" }, attempts: 0 },
      expires_at: new Date(w.clock.now() + 30_000).toISOString(),
    });
    // The fields come in the file's order, not the database's.
    expect(Object.keys(offered.preview.lead.fields)).toEqual(["zone_note", "first_name", "area"]);
    const detail = (await as("GET", "/api/v1/agents/me/preview")).body.data;
    expect(detail.eligibility).toMatchObject({ dialable: true, reasons: [] });
    expect((await as("GET", "/api/v1/agents/me/history")).body.data.items).toEqual([]);
    // Nothing went to a node, and another claim offers nothing more to this agent.
    expect(await commands()).toEqual([]);
    expect(await claim()).toEqual([]);
    expect((await me()).preview.lead.phone).toBe("+14155552671");
  });

  test("dial places the call through a dial command; a second dial is refused", async () => {
    await ready();
    await claim();
    const dialled = await as("POST", "/api/v1/agents/me/preview/dial");
    expect(dialled.status).toBe(200);
    const callId = dialled.body.data.call.id as string;
    expect(dialled.body.data.call).toMatchObject({ agent_id: agentId, status: "claimed" });
    const again = await as("POST", "/api/v1/agents/me/preview/dial");
    expect(again.status).toBe(409);
    const [dial] = await commands();
    expect(dial).toMatchObject({
      type: "dial",
      call_id: callId,
      job: { call_id: callId, phone: "+14155552671", agent_id: agentId },
    });
    expect(await me()).toMatchObject({
      agent: { state: "reserved", call_id: callId },
      preview: null,
    });
    const answered = await event(callId, "answered");
    expect(answered.body.data.call).toMatchObject({ action: "bridge", agent_id: agentId });
  });

  test("skip takes a reason, puts the lead back and offers the next; it is audited", async () => {
    await ready();
    await claim();
    const first = (await me()).preview.lead;
    expect((await as("POST", "/api/v1/agents/me/preview/skip", {})).status).toBe(400);
    const skipped = await as("POST", "/api/v1/agents/me/preview/skip", { reason: "wrong region" });
    expect(skipped.body.data).toEqual({ skipped: true });
    expect((await me()).agent).toMatchObject({ state: "ready" });
    expect((await as("POST", "/api/v1/agents/me/preview/skip", { reason: "x" })).status).toBe(409);
    await claim();
    expect((await me()).preview.lead.phone).toBe("+14155552672");
    const audit = await w.request("GET", "/api/v1/audit-events", { token: adminToken });
    const skips = audit.body.data.items.filter(
      (event: { action: string }) => event.action === "lead.skipped",
    );
    expect(skips[0]).toMatchObject({
      action: "lead.skipped",
      target_id: first.id,
      details: { reason: "wrong region" },
    });
  });

  test("an offer left for preview_timeout_seconds is skipped by itself", async () => {
    await ready();
    await claim();
    w.clock.advance(29_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(0);
    w.clock.advance(1_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(1);
    expect(await me()).toMatchObject({ agent: { state: "ready" }, preview: null });
  });

  test("an agent reserved for an offer the campaign lost (its owner changed) is released, and offered again", async () => {
    await ready();
    await claim();
    expect((await me()).preview.lead.phone).toBe("+14155552671");
    // The campaign is let go, as when its lease moves, and restored as its new owner does.
    w.deps.campaigns.release(campaignId);
    await w.deps.campaigns.hydrateActive();
    expect(await claim()).toEqual([]);
    expect((await me()).agent.state).toBe("reserved");
    expect(await sweepAgentDeadlines(w.deps)).toBe(1);
    expect(await me()).toMatchObject({ agent: { state: "ready" }, preview: null });
    await claim();
    expect((await me()).preview.lead.phone).toBe("+14155552671");
  });

  test("a pause gives the offer up; the lead goes back, after the others", async () => {
    await ready();
    await claim();
    await as("POST", "/api/v1/agents/me/state", { state: "paused", reason: "break" });
    expect(await me()).toMatchObject({ agent: { state: "paused" }, preview: null });
    await ready();
    await claim();
    expect((await me()).preview.lead.phone).toBe("+14155552672");
    await as("POST", "/api/v1/agents/me/preview/skip", { reason: "later" });
    await claim();
    expect((await me()).preview.lead.phone).toBe("+14155552671");
  });

  test("with no node online the dial is refused and the offer stays", async () => {
    await ready();
    await claim();
    // The node's last heartbeat is now more than 30 s old.
    w.clock.advance(31_000);
    const lonely = await as("POST", "/api/v1/agents/me/preview/dial");
    expect(lonely.status).toBe(409);
    expect(lonely.body.message).toContain("no edge node is online");
    expect((await me()).preview.lead.phone).toBe("+14155552671");
  });
});

describe("a number dialled by hand", () => {
  beforeEach(() => setUp({ dial_mode: "progressive" }));

  const dial = (body: Record<string, unknown>) => as("POST", "/api/v1/agents/me/dial", body);
  const leadCount = async () =>
    (await w.request("GET", `/api/v1/campaigns/${campaignId}/lead-lists`, { token: adminToken }))
      .body.data.items.length;

  test("is placed for the agent like any call, and recorded with a CDR", async () => {
    await as("POST", "/api/v1/agents/me/state", {
      state: "paused",
      campaign_id: campaignId,
      reason: "break",
    });
    const placed = await dial({ phone: "+14155550123" });
    expect(placed.status).toBe(200);
    const callId = placed.body.data.call.id as string;
    expect(await me()).toMatchObject({
      agent: { state: "reserved", call_id: callId, pause_after_call: true },
    });
    const [command] = await commands();
    // Shown with the caller ID of the campaign's list.
    expect(command).toMatchObject({
      type: "dial",
      job: { phone: "+14155550123", caller_id: "+14155550100" },
    });
    await event(callId, "answered");
    expect((await dial({ phone: "+14155550124" })).status).toBe(409);
    w.clock.advance(60_000);
    await event(callId, "ended");
    await as("POST", `/api/v1/calls/${callId}/disposition`, { disposition: "completed" });
    // Paused before, paused after.
    expect((await me()).agent).toMatchObject({ state: "paused", reason: "break" });
    const cdrs = await w.request("GET", "/api/v1/cdrs", { token: adminToken });
    expect(cdrs.body.data.items[0]).toMatchObject({
      call_id: callId,
      phone: "+14155550123",
      agent_id: agentId,
      agent_email: "agent@acme.test",
      campaign_name: "Preview",
      outcome: "answered",
      disposition: "completed",
    });
    const own = await w.request("GET", `/api/v1/cdrs?agent_id=${agentId}`, { token: adminToken });
    expect(own.body.data.items.map((cdr: { call_id: string }) => cdr.call_id)).toEqual([callId]);
    const none = await w.request("GET", `/api/v1/cdrs?agent_id=${crypto.randomUUID()}`, {
      token: adminToken,
    });
    expect(none.body.data.items).toEqual([]);
    // A second dial of the same number uses the same lead again.
    const lists = await w.request("GET", `/api/v1/campaigns/${campaignId}/lead-lists`, {
      token: adminToken,
    });
    expect(lists.body.data.items.map((list: { name: string }) => list.name)).toContain(
      "Manual dials",
    );
  });

  test("a do-not-call number, a number outside its hours, or a bad number is refused and nothing is stored", async () => {
    await ready();
    const lists = await leadCount();
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+14155550123" } });
    const dnc = await dial({ phone: "+14155550123" });
    expect(dnc.status).toBe(422);
    expect(dnc.body.field_errors[0]).toMatchObject({ field: "phone" });
    expect(dnc.body.field_errors[0].message).toContain("do-not-call");
    // 17:00 UTC is 02:00 in Tokyo.
    const night = await dial({ phone: "+14155550125", timezone: "Asia/Tokyo" });
    expect(night.status).toBe(422);
    expect(night.body.field_errors[0].field).toBe("phone");
    expect((await dial({ phone: "555-0100" })).status).toBe(400);
    // E.164 in form, but no such number: refused whatever zone is named.
    const short = await dial({ phone: "+1415555", timezone: "America/Los_Angeles" });
    expect(short.status).toBe(422);
    expect(short.body.field_errors[0]).toEqual({
      field: "phone",
      message: "is not a valid phone number",
    });
    expect((await dial({ phone: "+14155550125", timezone: "Mars/Olympus" })).status).toBe(422);
    expect(await leadCount()).toBe(lists);
    expect(await commands()).toEqual([]);
  });

  test("a number the campaign is calling now is not dialled again", async () => {
    // Another agent takes the campaign's calls; this one, paused, dials by hand.
    await w.user(w.acme.id, "other@acme.test", "agent");
    await w.request("POST", "/api/v1/agents/me/state", {
      token: await w.login("other@acme.test"),
      body: { state: "ready", campaign_id: campaignId },
    });
    await as("POST", "/api/v1/agents/me/state", { state: "paused", campaign_id: campaignId });
    const claimed = await claim();
    const ringing = claimed[0]?.phone as string;
    expect(ringing).toMatch(/^\+1415555267[12]$/);
    const again = await dial({ phone: ringing });
    expect(again.status).toBe(422);
    expect(again.body.field_errors[0]).toEqual({
      field: "phone",
      message: "a call to this number is under way",
    });
  });

  test("a number dialled by hand is not dialled by the campaign meanwhile, nor twice by hand at once", async () => {
    const others: string[] = [];
    for (const name of ["b", "c", "d"]) {
      await w.user(w.acme.id, `${name}@acme.test`, "agent");
      others.push(await w.login(`${name}@acme.test`));
    }
    const stateOf = (token: string, state: "ready" | "paused") =>
      w.request("POST", "/api/v1/agents/me/state", {
        token,
        body: { state, campaign_id: campaignId },
      });
    await as("POST", "/api/v1/agents/me/state", { state: "paused", campaign_id: campaignId });
    // The campaign's own lead +14155552671 is dialled by hand first; two agents take calls.
    expect((await dial({ phone: "+14155552671" })).status).toBe(200);
    for (const token of others.slice(0, 2)) await stateOf(token, "ready");
    const dialled = [...(await claim()), ...(await claim())].map(
      (job: { phone: string }) => job.phone,
    );
    expect(dialled).toEqual(["+14155552672"]);
    // Two agents dial one new number at once: one call, one list, the lead counted once.
    const [, second, third] = others as [string, string, string];
    await stateOf(third, "paused");
    const dials = await Promise.all(
      [second, third].map((token) =>
        w.request("POST", "/api/v1/agents/me/dial", { token, body: { phone: "+14155550177" } }),
      ),
    );
    expect(dials.map((reply) => reply.status).sort()).toEqual([200, 422]);
    expect(dials.find((reply) => reply.status === 422)?.body.field_errors).toEqual([
      { field: "phone", message: "a call to this number is under way" },
    ]);
    const lists = (
      await w.request("GET", `/api/v1/campaigns/${campaignId}/lead-lists`, { token: adminToken })
    ).body.data.items.filter((list: { name: string }) => list.name === "Manual dials");
    expect(lists).toHaveLength(1);
    expect(lists[0].lead_count).toBe(2);
  });

  test.skipIf(!process.env.DATABASE_URL)(
    "a claim of a number another campaign's claim is placing waits for it, then leaves the number",
    async () => {
      await ready();
      // Another campaign's claim has placed a call to the number and not yet committed.
      const placedElsewhere = Promise.withResolvers<void>();
      const commit = Promise.withResolvers<void>();
      const elsewhere = w.deps.db.transaction(async (tx) => {
        const claimedAt = new Date(w.clock.now());
        await tx
          .insert(calls)
          .values(liveCallRow({ tenantId: w.acme.id, phone: "+14155552671", claimedAt }));
        placedElsewhere.resolve();
        await commit.promise;
      });
      await placedElsewhere.promise;
      const claimed = claim();
      await Bun.sleep(300);
      commit.resolve();
      await elsewhere;
      // Nothing placed; the agent is still free for the campaign's next number.
      expect(await claimed).toEqual([]);
      const next = [...(await claim()), ...(await claim())];
      expect(next.map((job: { phone: string }) => job.phone)).toEqual(["+14155552672"]);
      const live = await w.deps.db
        .select({ id: calls.id })
        .from(calls)
        .where(and(eq(calls.phone, "+14155552671"), ne(calls.status, "ended")));
      expect(live).toHaveLength(1);
    },
  );

  test.skipIf(!process.env.DATABASE_URL)(
    "a second hand dial of a number about to be dialled does not hold up the first",
    async () => {
      await as("POST", "/api/v1/agents/me/state", { state: "paused", campaign_id: campaignId });
      const lead = (at: number) => ({
        tenantId: w.acme.id,
        campaignId,
        callerId: "+14155550100",
        phone: "+14155550178",
        timezone: "America/New_York",
        zoneSource: "number" as const,
        ids: { list: Bun.randomUUIDv7(), lead: Bun.randomUUIDv7() },
        now: new Date(at),
      });
      // The first dial has made its lead; a second dial of the number makes it, and holds on.
      const first = await manualLead(w.deps.db, lead(w.clock.now()));
      if (!first) throw new Error("no lead");
      const held = Promise.withResolvers<void>();
      const made = Promise.withResolvers<string | undefined>();
      const second = w.deps.db.transaction(async (tx) => {
        made.resolve((await manualLead(tx, lead(w.clock.now())))?.id);
        await held.promise;
      });
      expect(await made.promise).toBe(first.id);
      // Meanwhile the first dial goes out, rather than finding its lead taken.
      const reply = await Promise.race([
        w.deps.campaigns.run(
          { tenantId: w.acme.id, campaignId },
          { type: "call.dial", agentId, leadId: first.id },
        ),
        Bun.sleep(5_000).then(() => "waited"),
      ]);
      held.resolve();
      await second;
      expect(reply).toMatchObject({ call: { lead_id: first.id, agent_id: agentId } });
    },
  );
});
