import { beforeEach, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { addDncMany, retireListedLeads } from "../../db/queries/calls.ts";
import { leads } from "../../db/schema/index.ts";
import { sweepExpiredCalls } from "../../src/dialer/calls.ts";
import { endListedLeads } from "../../src/modules/dnc/service.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let adminToken: string;
let agentToken: string;
let agentId: string;
let nodeKey: string;
let campaignId: string;
let listPath: string;

/** 2026-03-02T17:00Z is noon in New York: inside the default 08:00–21:00 window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");

async function setUp(
  campaign: Record<string, unknown> = {},
  csv = "phone,timezone\n+14155552671,America/New_York\n",
  at = NOON_NEW_YORK,
) {
  w = await createWorkspace();
  w.clock.advance(at - w.clock.now());
  adminToken = await w.login("admin@acme.test");
  agentId = (await w.user(w.acme.id, "agent@acme.test", "agent")).id;
  agentToken = await w.login("agent@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      // Pacing and windows under the campaign's own settings; the rules are tested on their own.
      body: { name: "Dial", regulatory_profile: "none", ...campaign },
    })
  ).body.data.campaign.id;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: adminToken,
    body: { name: "L", caller_id: "+14155550100" },
  });
  listPath = `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}`;
  await importFile(w, `${listPath}/import`, adminToken, csv);
  nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: adminToken,
      body: { name: "edge", max_concurrent_calls: 10 },
    })
  ).body.data.key;
}

const start = () =>
  w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
    token: adminToken,
    body: { action: "start" },
  });
const ready = (token = agentToken) =>
  w.request("POST", "/api/v1/agents/me/state", {
    token,
    body: { state: "ready", campaign_id: campaignId },
  });
const claim = async (max = 5) =>
  (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max } })).body.data
    .jobs as {
    call_id: string;
    lead_id: string;
    phone: string;
    caller_id: string;
    agent_id: string | null;
  }[];
const event = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
  w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
    token: nodeKey,
    body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
  });
const leadState = async () =>
  (await w.request("GET", `${listPath}/leads`, { token: adminToken })).body.data.items[0];
const agentState = async () =>
  (await w.request("GET", "/api/v1/agents/me", { token: agentToken })).body.data.agent.state;

describe("dialing", () => {
  beforeEach(() => setUp());

  test("nothing is dialled before the campaign runs and an agent is ready", async () => {
    expect(await claim()).toEqual([]);
    await start();
    expect(await claim()).toEqual([]);
    await ready();
    expect(await claim()).toHaveLength(1);
  });

  test("an answered call is bridged, recorded and dispositioned; the campaign then completes", async () => {
    await start();
    await ready();
    const [job] = await claim();
    expect(job).toMatchObject({ phone: "+14155552671", caller_id: "+14155550100", agent_id: null });
    expect((await leadState()).state).toBe("Dialing");
    const callId = job?.call_id as string;
    expect((await event(callId, "ringing")).status).toBe(200);
    w.clock.advance(5_000);
    const answered = await event(callId, "answered");
    expect(answered.body.data.call).toMatchObject({
      agent_id: agentId,
      action: "bridge",
      agent_uri: null,
    });
    expect(await agentState()).toBe("on_call");
    expect((await leadState()).state).toBe("Connected");
    w.clock.advance(60_000);
    const ended = await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(ended.body.data.call).toMatchObject({ status: "ended", outcome: "answered" });
    expect(await agentState()).toBe("wrap_up");
    const cdrs = await w.request("GET", "/api/v1/cdrs", { token: adminToken });
    expect(cdrs.body.data.items[0]).toMatchObject({
      call_id: callId,
      outcome: "answered",
      agent_id: agentId,
      ring_seconds: 5,
      talk_seconds: 60,
      hangup_cause: "NORMAL_CLEARING",
    });
    const disposition = await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: agentToken,
      body: { disposition: "completed" },
    });
    expect(disposition.status).toBe(200);
    expect((await leadState()).state).toBe("Completed");
    expect(await agentState()).toBe("ready");
    const campaign = await w.request("GET", `/api/v1/campaigns/${campaignId}`, {
      token: adminToken,
    });
    expect(campaign.body.data.campaign.status).toBe("completed");
    expect(
      (await w.request("GET", "/api/v1/cdrs", { token: adminToken })).body.data.items[0]
        .disposition,
    ).toBe("completed");
  });

  test("the answer names the agent's phone, set by an admin, to bridge to; a repeat says the same", async () => {
    const patched = await w.request("PATCH", `/api/v1/users/${agentId}`, {
      token: adminToken,
      body: { phone_uri: "sip:1001@127.0.0.1:5080" },
    });
    expect(patched.body.data.user.phone_uri).toBe("sip:1001@127.0.0.1:5080");
    await start();
    await ready();
    const [job] = await claim();
    const callId = job?.call_id as string;
    const first = await event(callId, "answered");
    expect(first.body.data.call).toMatchObject({
      agent_id: agentId,
      action: "bridge",
      agent_uri: "sip:1001@127.0.0.1:5080",
    });
    const repeat = await event(callId, "answered");
    expect(repeat.body.data.call).toMatchObject({ agent_uri: "sip:1001@127.0.0.1:5080" });
  });

  test("a heartbeat may list the node's calls", async () => {
    const beat = await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: nodeKey,
      body: { active_calls: 1, active_call_ids: [crypto.randomUUID()] },
    });
    expect(beat.status).toBe(200);
    const bad = await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: nodeKey,
      body: { active_calls: 1, active_call_ids: ["not-a-uuid"] },
    });
    expect(bad.status).toBe(400);
  });

  test("no agent free on answer: hang up, an abandoned call, the lead retried later", async () => {
    await start();
    await ready();
    const [job] = await claim();
    await w.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "paused" },
    });
    const answered = await event(job?.call_id as string, "answered");
    expect(answered.body.data.call).toMatchObject({ action: "hangup", agent_uri: null });
    const ended = await event(job?.call_id as string, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(ended.body.data.call.outcome).toBe("abandoned");
    const lead = await leadState();
    expect(lead).toMatchObject({ state: "Retry", attempts: 1, last_outcome: "abandoned" });
    expect(Date.parse(lead.next_attempt_at)).toBe(w.clock.now() + 3_600_000);
    const stats = (await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken }))
      .body.data.campaign.stats;
    expect(stats.abandon_rate).toBe(1);
  });

  test("hang-up causes give their outcomes; attempts run out into Exhausted", async () => {
    await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
      token: adminToken,
      body: { version: 1, max_attempts: 2, retry_delay_seconds: 60 },
    });
    await start();
    await ready();
    const first = (await claim())[0]?.call_id as string;
    expect(
      (await event(first, "ended", { hangup_cause: "USER_BUSY" })).body.data.call.outcome,
    ).toBe("busy");
    expect((await leadState()).state).toBe("Retry");
    expect(await claim()).toEqual([]);
    w.clock.advance(60_000);
    const second = (await claim())[0]?.call_id as string;
    expect(
      (await event(second, "ended", { hangup_cause: "NO_ANSWER" })).body.data.call.outcome,
    ).toBe("no_answer");
    expect((await leadState()).state).toBe("Exhausted");
    expect(
      (await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken })).body.data
        .campaign.status,
    ).toBe("completed");
  });

  test("the agent's own view carries the call and its lead while reserved, on the call and in wrap-up", async () => {
    await setUp(
      { dial_mode: "preview" },
      "phone,timezone,first_name\n+14155552671,America/New_York,Ada\n",
    );
    const me = async () =>
      (await w.request("GET", "/api/v1/agents/me", { token: agentToken })).body.data;
    expect(await me()).toMatchObject({ call: null, lead: null });
    await start();
    await ready();
    expect(await me()).toMatchObject({ agent: { state: "ready" }, call: null, lead: null });
    await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: nodeKey,
      body: { active_calls: 0 },
    });
    expect(await claim()).toEqual([]);
    // Offered first: the lead, and nothing dialled.
    expect(await me()).toMatchObject({
      agent: { state: "reserved", call_id: null },
      call: null,
      preview: { lead: { phone: "+14155552671", fields: { first_name: "Ada" }, attempts: 0 } },
    });
    const dialled = await w.request("POST", "/api/v1/agents/me/preview/dial", {
      token: agentToken,
    });
    const job = { call_id: dialled.body.data.call.id, lead_id: dialled.body.data.call.lead_id };
    const callId = job?.call_id as string;
    const lead = {
      id: job?.lead_id,
      phone: "+14155552671",
      timezone: "America/New_York",
      fields: { first_name: "Ada" },
      attempts: 1,
    };
    expect(await me()).toMatchObject({
      agent: { state: "reserved", call_id: callId },
      call: { id: callId, agent_id: agentId, status: "claimed", phone: "+14155552671" },
      lead,
    });
    await event(callId, "answered");
    const onCall = await me();
    expect(onCall).toMatchObject({
      agent: { state: "on_call" },
      call: { id: callId, status: "answered", attempt: 1 },
      lead,
    });
    expect(onCall.call.answered_at).toBe(new Date(w.clock.now()).toISOString());
    w.clock.advance(30_000);
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    // Ended: read back from the database, in the same shape.
    expect(await me()).toMatchObject({
      agent: { state: "wrap_up" },
      call: { id: callId, status: "ended", outcome: "answered" },
      lead,
    });
    await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: agentToken,
      body: { disposition: "completed" },
    });
    expect(await me()).toMatchObject({ agent: { state: "ready" }, call: null, lead: null });
  });

  test("events are idempotent and tolerate disorder", async () => {
    await start();
    await ready();
    const callId = (await claim())[0]?.call_id as string;
    await event(callId, "machine");
    await event(callId, "machine");
    const ended = await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(ended.body.data.call.outcome).toBe("machine");
    const late = await event(callId, "answered");
    expect(late.status).toBe(200);
    expect(late.body.data.call.status).toBe("ended");
    expect((await w.request("GET", "/api/v1/cdrs", { token: adminToken })).body.total).toBe(1);
    expect(await agentState()).toBe("ready");
  });

  test("a claimed call with no event fails after its lease and the lead is retried", async () => {
    await start();
    await ready();
    await claim();
    w.clock.advance(59_000);
    expect(await sweepExpiredCalls(w.deps)).toBe(0);
    w.clock.advance(2_000);
    expect(await sweepExpiredCalls(w.deps)).toBe(1);
    expect((await leadState()).state).toBe("Retry");
    const cdr = (await w.request("GET", "/api/v1/cdrs", { token: adminToken })).body.data.items[0];
    expect(cdr).toMatchObject({ outcome: "failed", hangup_cause: "LEASE_EXPIRED" });
  });

  test("only the call's agent or a supervisor may disposition; callbacks need a future time", async () => {
    await start();
    await ready();
    const callId = (await claim())[0]?.call_id as string;
    await event(callId, "answered");
    await w.user(w.acme.id, "other@acme.test", "agent");
    const other = await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: await w.login("other@acme.test"),
      body: { disposition: "completed" },
    });
    expect(other.status).toBe(403);
    const past = await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: agentToken,
      body: { disposition: "callback", callback_at: "2020-01-01T00:00:00Z" },
    });
    expect(past.status).toBe(400);
    const callbackAt = new Date(w.clock.now() + 86_400_000).toISOString();
    const ok = await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: adminToken,
      body: { disposition: "callback", callback_at: callbackAt },
    });
    expect(ok.status).toBe(200);
    expect(await leadState()).toMatchObject({ state: "Callback", next_attempt_at: callbackAt });
  });

  test("lowering max_attempts below a waiting retry's attempts exhausts it, and the campaign completes", async () => {
    await start();
    await ready();
    const first = (await claim())[0]?.call_id as string;
    await event(first, "ended", { hangup_cause: "NO_ANSWER" });
    expect(await leadState()).toMatchObject({ state: "Retry", attempts: 1 });
    const patched = await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
      token: adminToken,
      body: { version: 2, max_attempts: 1 },
    });
    expect(patched.status).toBe(200);
    expect(await leadState()).toMatchObject({ state: "Exhausted", attempts: 1 });
    const campaign = (
      await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken })
    ).body.data.campaign;
    expect([campaign.status, campaign.stats.leads_by_state.Exhausted]).toEqual(["completed", 1]);

    // Started again with nothing left to dial, it runs and completes again at once.
    const restarted = await start();
    expect(restarted.body.data.campaign.status).toBe("running");
    let status = "running";
    for (let tries = 0; tries < 100 && status === "running"; tries++) {
      await Bun.sleep(10);
      status = (await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken }))
        .body.data.campaign.status;
    }
    expect(status).toBe("completed");
  });

  test("a callback set on the last attempt is still made, once, when it falls due", async () => {
    await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
      token: adminToken,
      body: { version: 1, max_attempts: 1 },
    });
    await start();
    await ready();
    const first = (await claim())[0]?.call_id as string;
    await event(first, "answered");
    await event(first, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const callbackAt = w.clock.now() + 3_600_000;
    await w.request("POST", `/api/v1/calls/${first}/disposition`, {
      token: agentToken,
      body: { disposition: "callback", callback_at: new Date(callbackAt).toISOString() },
    });
    expect(await claim()).toEqual([]);
    w.clock.advance(callbackAt - w.clock.now());
    const [callback] = await claim();
    expect(callback).toBeDefined();
    await event(callback?.call_id as string, "ended", { hangup_cause: "NO_ANSWER" });
    expect(await leadState()).toMatchObject({ state: "Exhausted", attempts: 2 });
  });

  test("leads whose numbers are listed end as DoNotCall, a campaign with nothing left completes, and a removal gives them back", async () => {
    await setUp(
      {},
      "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n",
    );
    await start();
    const states = async () =>
      (await w.request("GET", `${listPath}/leads`, { token: adminToken })).body.data.items
        .map((lead: { phone: string; state: string }) => `${lead.phone} ${lead.state}`)
        .sort();
    const campaign = async () =>
      (await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken })).body.data
        .campaign;
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+14155552671" } });
    expect(await states()).toEqual(["+14155552671 DoNotCall", "+14155552672 Fresh"]);
    expect((await campaign()).stats.leads_by_state).toMatchObject({ Fresh: 1, DoNotCall: 1 });
    expect((await campaign()).status).toBe("running");
    const upload = await w.app.handle(
      new Request("http://localhost/api/v1/dnc/import", {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "text/csv" },
        body: "phone\n+14155552672\n",
      }),
    );
    expect(upload.status).toBe(200);
    expect(await states()).toEqual(["+14155552671 DoNotCall", "+14155552672 DoNotCall"]);
    expect((await campaign()).status).toBe("completed");
    await ready();
    expect(await claim()).toEqual([]);

    // A number taken off the list (listed by mistake) gives its leads back as they were.
    await w.request("DELETE", "/api/v1/dnc/%2B14155552672", { token: adminToken });
    expect(await states()).toEqual(["+14155552671 DoNotCall", "+14155552672 Fresh"]);
    expect((await campaign()).stats.leads_by_state).toMatchObject({ Fresh: 1, DoNotCall: 1 });
    await start();
    expect((await claim()).map((job) => job.phone)).toEqual(["+14155552672"]);
  });

  test("a number listed while its lead is on a call ends the lead at the call's end; taken off meanwhile, it does not", async () => {
    await start();
    await ready();
    const list = (phone: string) =>
      w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone } });
    const unlist = (phone: string) =>
      w.request("DELETE", `/api/v1/dnc/${encodeURIComponent(phone)}`, { token: adminToken });
    // Listed while ringing: the call ends unanswered, and the lead with it.
    const first = (await claim())[0]?.call_id as string;
    expect((await list("+14155552671")).status).toBe(201);
    expect((await leadState()).state).toBe("Dialing");
    await event(first, "ended", { hangup_cause: "NO_ANSWER" });
    expect((await leadState()).state).toBe("DoNotCall");
    // Taken off the list, the lead is dialled again; listed and taken off during the call,
    // and answered: the disposition leaves it to be dialled again.
    expect((await unlist("+14155552671")).status).toBe(200);
    expect((await leadState()).state).toBe("Retry");
    w.clock.advance(3_600_000);
    const second = (await claim())[0]?.call_id as string;
    await event(second, "answered");
    await list("+14155552671");
    await unlist("+14155552671");
    await event(second, "ended", { hangup_cause: "NORMAL_CLEARING" });
    await w.request("POST", `/api/v1/calls/${second}/disposition`, {
      token: agentToken,
      body: { disposition: "no_contact" },
    });
    expect((await leadState()).state).toBe("Retry");
  });

  test("a call's listing that ends the number's other leads after the number was taken off ends none", async () => {
    await start();
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+14155552671" } });
    await w.request("DELETE", "/api/v1/dnc/%2B14155552671", { token: adminToken });
    expect((await leadState()).state).toBe("Fresh");
    // As a do_not_call disposition's follow-up does, once its call's change committed.
    await endListedLeads(w.deps, w.acme.id, ["+14155552671"]);
    expect((await leadState()).state).toBe("Fresh");
  });

  test.skipIf(!process.env.DATABASE_URL)(
    "a listing and a call's end at the same moment end the lead, whichever commits first",
    async () => {
      await start();
      await ready();
      const callId = (await claim())[0]?.call_id as string;
      const leadId = (await leadState()).id as string;
      const phones = ["+14155552671"];
      // A listing that has marked the lead holds on while the call ends: the end waits for it.
      const marked = Promise.withResolvers<void>();
      const commit = Promise.withResolvers<void>();
      const listing = w.deps.db.transaction(async (tx) => {
        await addDncMany(tx, {
          tenantId: w.acme.id,
          phones,
          source: "api",
          createdBy: null,
          at: new Date(w.clock.now()),
        });
        await retireListedLeads(tx, {
          tenantId: w.acme.id,
          phones,
          at: new Date(w.clock.now()),
          passLocked: true,
        });
        marked.resolve();
        await commit.promise;
      });
      await marked.promise;
      const ended = event(callId, "ended", { hangup_cause: "NO_ANSWER" });
      await Bun.sleep(200);
      commit.resolve();
      await listing;
      expect((await ended).status).toBe(200);
      expect((await leadState()).state).toBe("DoNotCall");
      await w.request("DELETE", "/api/v1/dnc/%2B14155552671", { token: adminToken });
      expect((await leadState()).state).toBe("Retry");

      // The lead's end holds on while the number is listed: the listing waits for it.
      w.clock.advance(3_600_000);
      await claim();
      const retried = Promise.withResolvers<void>();
      const endCommit = Promise.withResolvers<void>();
      const end = w.deps.db.transaction(async (tx) => {
        await tx.update(leads).set({ state: "Retry" }).where(eq(leads.id, leadId));
        retried.resolve();
        await endCommit.promise;
      });
      await retried.promise;
      const listed = w.request("POST", "/api/v1/dnc", {
        token: adminToken,
        body: { phone: "+14155552671" },
      });
      await Bun.sleep(200);
      endCommit.resolve();
      await end;
      expect((await listed).status).toBe(201);
      expect((await leadState()).state).toBe("DoNotCall");
    },
  );

  test.skipIf(!process.env.DATABASE_URL)(
    "a listing and a do_not_call disposition of one number at the same moment both stand",
    async () => {
      await start();
      await ready();
      const callId = (await claim())[0]?.call_id as string;
      await event(callId, "answered");
      await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
      const phones = ["+14155552671"];
      // The listing has added the number; the disposition holds the lead and waits for it.
      const added = Promise.withResolvers<void>();
      const disposed = Promise.withResolvers<void>();
      const listing = w.deps.db.transaction(async (tx) => {
        const at = new Date(w.clock.now());
        await addDncMany(tx, { tenantId: w.acme.id, phones, source: "api", createdBy: null, at });
        added.resolve();
        await disposed.promise;
        await retireListedLeads(tx, { tenantId: w.acme.id, phones, at, passLocked: true });
      });
      await added.promise;
      const disposition = w.request("POST", `/api/v1/calls/${callId}/disposition`, {
        token: agentToken,
        body: { disposition: "do_not_call" },
      });
      await Bun.sleep(300);
      disposed.resolve();
      await listing;
      expect((await disposition).status).toBe(200);
      expect((await leadState()).state).toBe("DoNotCall");
    },
  );

  test("do_not_call adds the number to the list, for good, and ends its leads in other campaigns", async () => {
    // Another campaign has the number too, and one more: listed, its lead ends and the
    // campaign, left with the other, goes on; the other taken, it completes.
    const other = (
      await w.request("POST", "/api/v1/campaigns", {
        token: adminToken,
        body: { name: "Other", regulatory_profile: "none" },
      })
    ).body.data.campaign.id;
    const otherList = await w.request("POST", `/api/v1/campaigns/${other}/lead-lists`, {
      token: adminToken,
      body: { name: "L", caller_id: "+14155550100" },
    });
    const otherPath = `/api/v1/campaigns/${other}/lead-lists/${otherList.body.data.lead_list.id}`;
    await importFile(
      w,
      `${otherPath}/import`,
      adminToken,
      "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n",
    );
    await w.request("POST", `/api/v1/campaigns/${other}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
    const otherStates = async () =>
      (await w.request("GET", `${otherPath}/leads`, { token: adminToken })).body.data.items
        .map((lead: { phone: string; state: string }) => `${lead.phone} ${lead.state}`)
        .sort();
    await start();
    await ready();
    const callId = (await claim())[0]?.call_id as string;
    await event(callId, "answered");
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: agentToken,
      body: { disposition: "do_not_call" },
    });
    expect((await leadState()).state).toBe("DoNotCall");
    expect(await otherStates()).toEqual(["+14155552671 DoNotCall", "+14155552672 Fresh"]);
    const otherCampaign = async () =>
      (await w.request("GET", `/api/v1/campaigns/${other}`, { token: adminToken })).body.data
        .campaign;
    expect((await otherCampaign()).stats.leads_by_state).toMatchObject({ Fresh: 1, DoNotCall: 1 });
    const dnc = await w.request("GET", "/api/v1/dnc", { token: adminToken });
    expect(dnc.body.data.items[0]).toMatchObject({ phone: "+14155552671", source: "disposition" });
    // The addition is audited like any other: who, which number, when.
    const audit = await w.request("GET", "/api/v1/audit-events", { token: adminToken });
    const added = audit.body.data.items.filter((e: { action: string }) => e.action === "dnc.added");
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({
      actor_type: "user",
      actor_id: agentId,
      target_id: "+14155552671",
      details: { phone: "+14155552671", source: "disposition", call_id: callId },
      created_at: new Date(w.clock.now()).toISOString(),
    });
    // The lead asked not to be called: the number leaving the list does not bring it back.
    await w.request("DELETE", "/api/v1/dnc/%2B14155552671", { token: adminToken });
    expect((await leadState()).state).toBe("DoNotCall");
  });

  test("no_contact retries the lead after its delay, or exhausts it; the CDR keeps the disposition", async () => {
    await start();
    await ready();
    const dispositionAfterTalk = async () => {
      const callId = (await claim())[0]?.call_id as string;
      await event(callId, "answered");
      await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
      expect(await agentState()).toBe("wrap_up");
      const reply = await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
        token: agentToken,
        body: { disposition: "no_contact" },
      });
      expect(reply.status).toBe(200);
      expect(reply.body.data.call.disposition).toBe("no_contact");
      expect(await agentState()).toBe("ready");
      return callId;
    };
    const first = await dispositionAfterTalk();
    const retryAt = new Date(w.clock.now() + 3600 * 1000).toISOString();
    expect(await leadState()).toMatchObject({ state: "Retry", next_attempt_at: retryAt });
    const cdrs = (await w.request("GET", "/api/v1/cdrs", { token: adminToken })).body.data.items;
    expect(cdrs).toContainEqual(
      expect.objectContaining({ call_id: first, outcome: "answered", disposition: "no_contact" }),
    );
    w.clock.advance(3600 * 1000);
    await dispositionAfterTalk();
    w.clock.advance(3600 * 1000);
    await dispositionAfterTalk();
    // The third attempt was the last one the campaign allows.
    expect(await leadState()).toMatchObject({ state: "Exhausted", next_attempt_at: null });
    const again = await w.request("POST", `/api/v1/calls/${first}/disposition`, {
      token: agentToken,
      body: { disposition: "completed" },
    });
    expect(again.status).toBe(409);
  });

  test("nodes only see their own calls", async () => {
    await start();
    await ready();
    const callId = (await claim())[0]?.call_id as string;
    const otherKey = (
      await w.request("POST", "/api/v1/edge-nodes", {
        token: adminToken,
        body: { name: "edge-2", max_concurrent_calls: 1 },
      })
    ).body.data.key;
    const response = await w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: otherKey,
      body: { type: "ringing", at: new Date(w.clock.now()).toISOString() },
    });
    expect(response.status).toBe(404);
  });
});

describe("pacing and windows", () => {
  test("progressive pacing: calls in flight ≤ ready agents × dial_ratio, and node capacity", async () => {
    const csv = `phone,timezone\n${Array.from({ length: 10 }, (_, i) => `+1415555${2600 + i},America/New_York`).join("\n")}\n`;
    await setUp({ dial_ratio: 2.5 }, csv);
    await start();
    await ready();
    expect(await claim(10)).toHaveLength(2);
    expect(await claim(10)).toEqual([]);
    await w.user(w.acme.id, "agent2@acme.test", "agent");
    await ready(await w.login("agent2@acme.test"));
    expect(await claim(10)).toHaveLength(3);
  });

  test("preview reserves one ready agent per call", async () => {
    await setUp(
      { dial_mode: "preview" },
      "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n",
    );
    await start();
    await ready();
    await w.request("POST", "/api/v1/nodes/heartbeat", {
      token: nodeKey,
      body: { active_calls: 0 },
    });
    // The claim dials nothing: it offers the agent a lead, and holds the agent for it.
    expect(await claim()).toEqual([]);
    expect(await agentState()).toBe("reserved");
    const dialled = await w.request("POST", "/api/v1/agents/me/preview/dial", {
      token: agentToken,
    });
    expect(dialled.status).toBe(200);
    const commands = await w.request("POST", "/api/v1/nodes/commands", {
      token: nodeKey,
      body: {},
    });
    const [dial] = commands.body.data.commands;
    expect(dial).toMatchObject({ type: "dial", job: { agent_id: agentId } });
    expect(await agentState()).toBe("reserved");
    const answered = await event(dial.call_id as string, "answered");
    expect(answered.body.data.call.agent_id).toBe(agentId);
  });

  test("leads are dialled only inside the calling window of their own time zone, DST included", async () => {
    const csv = "phone,timezone\n+14155552671,America/New_York\n+442071838750,Europe/London\n";
    // 2026-03-30T16:30Z is 12:30 in New York (EDT) and 17:30 in London: British Summer Time began
    // on 29 March, so London is past its window, though on GMT it would be 16:30 and inside.
    await setUp(
      { calling_window: { start: "09:00", end: "17:00" } },
      csv,
      Date.parse("2026-03-30T16:30:00Z"),
    );
    await start();
    await ready();
    await w.user(w.acme.id, "agent2@acme.test", "agent");
    await ready(await w.login("agent2@acme.test"));
    expect((await claim()).map((job) => job.phone)).toEqual(["+14155552671"]);
  });

  test("outside the window nothing is dialled", async () => {
    // 23:30 UTC is 18:30 in New York.
    await setUp(
      { calling_window: { start: "09:00", end: "17:00" } },
      undefined,
      Date.parse("2026-03-02T23:30:00Z"),
    );
    await start();
    await ready();
    expect(await claim()).toEqual([]);
  });

  test("a number on a call for one campaign is not dialled by another meanwhile", async () => {
    const phones = Array.from({ length: 6 }, (_, i) => `+1415555${2600 + i}`);
    const csv = `phone,timezone\n${phones.map((phone) => `${phone},America/New_York`).join("\n")}\n`;
    await setUp({ dial_ratio: 2 }, csv);
    const first = campaignId;
    // The second campaign has the first's first four numbers, and two of its own.
    const second = (
      await w.request("POST", "/api/v1/campaigns", {
        token: adminToken,
        body: { name: "Same numbers", regulatory_profile: "none", dial_ratio: 5 },
      })
    ).body.data.campaign.id;
    const list = await w.request("POST", `/api/v1/campaigns/${second}/lead-lists`, {
      token: adminToken,
      body: { name: "L", caller_id: "+14155550100" },
    });
    const own = ["+14155552690", "+14155552691"];
    await importFile(
      w,
      `/api/v1/campaigns/${second}/lead-lists/${list.body.data.lead_list.id}/import`,
      adminToken,
      `phone,timezone\n${[...phones.slice(0, 4), ...own].map((phone) => `${phone},America/New_York`).join("\n")}\n`,
    );
    const staffed = async (id: string, name: string) => {
      await w.request("POST", `/api/v1/campaigns/${id}/status`, {
        token: adminToken,
        body: { action: "start" },
      });
      await w.user(w.acme.id, `${name}@acme.test`, "agent");
      await w.request("POST", "/api/v1/agents/me/state", {
        token: await w.login(`${name}@acme.test`),
        body: { state: "ready", campaign_id: id },
      });
    };
    await staffed(first, "first");
    const onCalls = (await claim(10)).map((job) => job.phone);
    expect(onCalls).toEqual(phones.slice(0, 2));
    await staffed(second, "second");
    // Its first two numbers are on calls: it dials the others, and its hopper is read again.
    const dialled = [...(await claim(10)), ...(await claim(10))].map((job) => job.phone);
    expect(dialled.filter((phone) => onCalls.includes(phone))).toEqual([]);
    expect(dialled.length).toBeGreaterThan(0);
  });

  test("numbers put on the do-not-call list after import are not dialled", async () => {
    await setUp();
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: "+14155552671" } });
    await start();
    await ready();
    expect(await claim()).toEqual([]);
  });

  test("agents need a campaign to be ready and cannot leave a call; a pause waits for its end", async () => {
    await setUp();
    const missing = await w.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "ready" },
    });
    expect(missing.status).toBe(400);
    const unknown = await w.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "ready", campaign_id: crypto.randomUUID() },
    });
    expect(unknown.status).toBe(404);
    await start();
    await ready();
    const callId = (await claim())[0]?.call_id as string;
    await event(callId, "answered");
    const leave = await w.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "offline" },
    });
    expect(leave.status).toBe(409);
    const pause = await w.request("POST", "/api/v1/agents/me/state", {
      token: agentToken,
      body: { state: "paused", reason: "lunch" },
    });
    expect(pause.status).toBe(200);
    expect(pause.body.data.agent).toMatchObject({
      state: "on_call",
      call_id: callId,
      pause_after_call: true,
      reason: "lunch",
    });
  });
});

describe("eligibility", () => {
  const eligibility = async (leadId: string) =>
    (
      await w.request("GET", `/api/v1/campaigns/${campaignId}/leads/${leadId}/eligibility`, {
        token: adminToken,
      })
    ).body.data;

  test("explains the campaign, the window, the retry time and the do-not-call list", async () => {
    // 23:30 UTC is 18:30 in New York: past a 09:00–17:00 window.
    await setUp(
      { calling_window: { start: "09:00", end: "17:00" } },
      undefined,
      Date.parse("2026-03-02T23:30:00Z"),
    );
    const lead = await leadState();
    const first = await eligibility(lead.id);
    expect(first.dialable).toBe(false);
    expect(first.reasons.map((r: { code: string }) => r.code)).toEqual([
      "campaign_not_running",
      "outside_window",
    ]);
    expect(first.reasons[1].until).toBe("2026-03-03T14:00:00.000Z");
    expect(first.next_eligible_at).toBe("2026-03-03T14:00:00.000Z");
    expect(first.zone).toEqual({ value: "America/New_York", source: "column" });
    expect(first.profile).toEqual({ name: "none", version: "1970-01-01" });
    await start();
    w.clock.advance(Date.parse("2026-03-03T15:00:00Z") - w.clock.now());
    adminToken = await w.login("admin@acme.test");
    expect(await eligibility(lead.id)).toMatchObject({
      dialable: true,
      reasons: [],
      next_eligible_at: "2026-03-03T15:00:00.000Z",
    });
    await w.request("POST", "/api/v1/dnc", { token: adminToken, body: { phone: lead.phone } });
    const blocked = await eligibility(lead.id);
    expect(blocked).toMatchObject({ dialable: false, next_eligible_at: null });
    // Listed, the lead ended as DoNotCall, and with it the campaign's last lead to dial.
    expect(blocked.reasons.map((reason: { code: string }) => reason.code)).toEqual([
      "campaign_not_running",
      "lead_final",
      "do_not_call",
    ]);
    expect(blocked.reasons).toContainEqual({
      code: "do_not_call",
      message: expect.stringContaining("do-not-call"),
      until: null,
    });
    expect(
      (
        await w.request(
          "GET",
          `/api/v1/campaigns/${campaignId}/leads/${crypto.randomUUID()}/eligibility`,
          { token: adminToken },
        )
      ).status,
    ).toBe(404);
  });
});
