import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { SimulatedClock } from "xstate";
import { campaignActorFrom, restoredSnapshot } from "../../actors/campaign.machine.ts";
import {
  applyDialing,
  type DialingState,
  dialingDone,
  HOPPER_MAX_AGE_MS,
  type HopperLead,
  hopperRefill,
  MAX_WRAPPING,
  noLeads,
  takeFromHopper,
} from "../../actors/dialing.ts";
import { type CallRow, hopperQuery, readHopper } from "../../db/queries/dialer.ts";
import { rowsOf } from "../../db/rows.ts";
import { leadWindowAt, profileInForce } from "../../src/compliance/lead-rules.ts";
import { sweepExpiredCalls } from "../../src/dialer/calls.ts";
import { createWorkspace } from "../helpers/app.ts";
import { campaignRecord, dialingWith, UNTRACED } from "../helpers/campaigns.ts";
import { importFile } from "../helpers/leads.ts";

const WINDOW = { start: "09:00", end: "17:00" };
const UNREGULATED = profileInForce("none", 0);

/** The hopper's dialable leads at `at` under a 09:00–17:00 window and no profile's rules. */
const take = (hopper: HopperLead[], at: number, count: number) =>
  takeFromHopper(dialingWith(hopper), 3, count, (entry) =>
    leadWindowAt(entry, UNREGULATED, WINDOW, at),
  );
const MINUTE = 60_000;

/** St. John's: NST (−3:30) but NDT (−2:30) from 2026-03-08 02:00 to 2026-11-01 02:00 local. */
const ST_JOHNS_DST = [Date.parse("2026-03-08T05:30:00Z"), Date.parse("2026-11-01T04:30:00Z")];
/** UTC offsets in minutes, computed without the code under test. */
const OFFSETS: Record<string, (at: number) => number> = {
  "Pacific/Kiritimati": () => 14 * 60,
  "Pacific/Pago_Pago": () => -11 * 60,
  "Asia/Kathmandu": () => 5 * 60 + 45,
  "America/St_Johns": (at) =>
    at >= (ST_JOHNS_DST[0] as number) && at < (ST_JOHNS_DST[1] as number) ? -150 : -210,
};
const ZONES = Object.keys(OFFSETS);

const insideWindow = (zone: string, at: number) => {
  const minutes = (((Math.floor(at / MINUTE) + (OFFSETS[zone]?.(at) ?? 0)) % 1440) + 1440) % 1440;
  return minutes >= 9 * 60 && minutes < 17 * 60;
};

const lead = (id: string, timezone: string): HopperLead => ({
  id,
  leadListId: "list",
  phone: "+14155552671",
  timezone,
  zoneSource: "column",
  state: "Fresh",
  attempts: 0,
  callerId: "+14155550100",
  fields: {},
});

describe("calling windows on a simulated clock", () => {
  const hopper = ZONES.map((zone) => lead(zone, zone));

  for (const [label, from] of [
    ["across the spring change in St. John's", "2026-03-06T00:00:00Z"],
    ["across the autumn change in St. John's", "2026-10-30T00:00:00Z"],
  ] as const) {
    test(`each zone dials only inside 09:00–17:00 local, ${label}`, () => {
      const clock = new SimulatedClock();
      clock.set(Date.parse(from));
      const end = clock.now() + 4 * 24 * 60 * MINUTE;
      let checked = 0;
      for (; clock.now() < end; clock.increment(10 * MINUTE)) {
        const { taken, dropped } = take(hopper, clock.now(), 10);
        const expected = ZONES.filter((zone) => insideWindow(zone, clock.now()));
        expect(taken.map((entry) => entry.id).sort()).toEqual(expected.sort());
        expect(taken.length + dropped.length).toBe(ZONES.length);
        checked++;
      }
      expect(checked).toBe(576);
    });
  }

  test("the window opens on its first minute and closes on its last (half-open)", () => {
    // 09:00 in Kathmandu is 03:15 UTC; 17:00 is 11:15 UTC.
    const only = [lead("k", "Asia/Kathmandu")];
    const at = (iso: string) => take(only, Date.parse(iso), 1).taken.length;
    expect(at("2026-03-02T03:14:59Z")).toBe(0);
    expect(at("2026-03-02T03:15:00Z")).toBe(1);
    expect(at("2026-03-02T11:14:59Z")).toBe(1);
    expect(at("2026-03-02T11:15:00Z")).toBe(0);
  });

  test("a lead out of attempts is dropped from the hopper, not dialled", () => {
    const spent = { ...lead("spent", "Asia/Kathmandu"), attempts: 3 };
    const result = take([spent], Date.parse("2026-03-02T06:00:00Z"), 1);
    expect(result.taken).toEqual([]);
    expect(result.dropped.map((entry) => entry.id)).toEqual(["spent"]);
  });
});

describe("the campaign actor's dialing state", () => {
  test("a stale hopper reads only what fell due, and its fresh leads keep their place", () => {
    const retry = (id: string): HopperLead => ({ ...lead(id, "UTC"), state: "Retry" });
    const callback = (id: string): HopperLead => ({ ...lead(id, "UTC"), state: "Callback" });
    const full = applyDialing(dialingWith(), {
      type: "dialing.hopperFilled",
      leads: [retry("r1"), lead("f1", "UTC"), lead("f2", "UTC")],
      at: 1_000,
    });
    expect(hopperRefill(dialingWith(), 0)).toBe("all");
    expect(hopperRefill(full, 1_000 + HOPPER_MAX_AGE_MS - 1)).toBeNull();
    expect(hopperRefill(full, 1_000 + HOPPER_MAX_AGE_MS)).toBe("due");
    // The due read brings r1 again with what fell due since; the fresh leads follow.
    const refreshed = applyDialing(full, {
      type: "dialing.hopperFilled",
      leads: [callback("c1"), retry("r1"), retry("r2")],
      at: 7_000,
      dueOnly: true,
    });
    expect(refreshed.hopper.map((entry) => entry.id)).toEqual(["c1", "r1", "r2", "f1", "f2"]);
    expect(refreshed.hopperFilledAt).toBe(7_000);
  });

  test("counts leads through their moves and is done only with every lead final and no call live", () => {
    const clock = new SimulatedClock();
    const actor = campaignActorFrom(
      restoredSnapshot({ campaign: campaignRecord({ status: "running" }), idempotency: {} }),
      { clock },
    ).start();
    const leads = { ...noLeads(), Fresh: 2 };
    actor.send({
      type: "dialing.loaded",
      dialing: { ...dialingWith([lead("a", "UTC"), lead("b", "UTC")]), leads },
    });
    const call = { id: "call-a", edgeNodeId: "node", bridged: false } as never;
    actor.send({ type: "dialing.callsPlaced", removed: ["a"], calls: [call], from: ["Fresh"] });
    let dialing = actor.getSnapshot().context.dialing as DialingState;
    expect(dialing.hopper.map((entry) => entry.id)).toEqual(["b"]);
    expect(dialing.leads).toMatchObject({ Fresh: 1, Dialing: 1 });
    actor.send({
      type: "dialing.callEnded",
      callId: "call-a",
      outcome: "busy",
      lead: { from: "Dialing", to: "Exhausted" },
      claimedAt: 0,
      answeredAt: null,
      endedAt: 5_000,
      bridgeMs: null,
    });
    actor.send({ type: "dialing.leadsMoved", moves: [{ from: "Fresh", to: "DoNotCall" }] });
    dialing = actor.getSnapshot().context.dialing as DialingState;
    expect(dialing.recent).toEqual(["busy"]);
    expect([...dialing.calls]).toEqual([]);
    expect(dialingDone(dialing)).toBe(true);
    expect(dialingDone({ ...dialing, leads: noLeads() })).toBe(false);
    actor.stop();
  });
});

/** A workspace on a simulated clock with one running campaign, leads, an agent and a node. */
async function dialingWorkspace(csv: string, agents = 1) {
  const clock = new SimulatedClock();
  clock.set(Date.parse("2026-03-02T17:00:00Z"));
  const w = await createWorkspace({ clock });
  const admin = await w.login("admin@acme.test");
  const campaignId = (
    await w.request("POST", "/api/v1/campaigns", { token: admin, body: { name: "Dial" } })
  ).body.data.campaign.id as string;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: admin,
    body: { name: "L", caller_id: "+14155550100" },
  });
  const listPath = `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}`;
  await importFile(w, `${listPath}/import`, admin, csv);
  const nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: admin,
      body: { name: "edge", max_concurrent_calls: 10 },
    })
  ).body.data.key as string;
  const agentTokens: string[] = [];
  for (let i = 0; i < agents; i++) {
    await w.user(w.acme.id, `agent${i}@acme.test`, "agent");
    agentTokens.push(await w.login(`agent${i}@acme.test`));
  }
  const status = (action: string) =>
    w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: admin,
      body: { action },
    });
  await status("start");
  for (const token of agentTokens)
    await w.request("POST", "/api/v1/agents/me/state", {
      token,
      body: { state: "ready", campaign_id: campaignId },
    });
  const claim = async (max = 5) =>
    (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max } })).body
      .data.jobs as { call_id: string; phone: string }[];
  const event = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
    w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: nodeKey,
      body: { type, at: new Date(clock.now()).toISOString(), ...extra },
    });
  const leads = async () =>
    (await w.request("GET", `${listPath}/leads`, { token: admin })).body.data.items as {
      phone: string;
      state: string;
    }[];
  const cdrs = async () => (await w.request("GET", "/api/v1/cdrs", { token: admin })).body;
  return { w, clock, admin, campaignId, nodeKey, status, claim, event, leads, cdrs };
}

describe("dialing through the campaign actor, on a simulated clock", () => {
  test("due callbacks first, then due retries, then fresh leads in import order", async () => {
    const d = await dialingWorkspace(
      "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n+14155552673,America/New_York\n+14155552674,America/New_York\n",
    );
    const past = new Date(d.clock.now() - MINUTE).toISOString();
    const later = new Date(d.clock.now() + 30 * MINUTE).toISOString();
    const set = (phone: string, state: string, due: string) =>
      d.w.deps.db.execute(
        sql`update leads set state = ${state}, next_attempt_at = ${due}::timestamptz where phone = ${phone}`,
      );
    await set("+14155552673", "Callback", past);
    await set("+14155552672", "Retry", past);
    await set("+14155552674", "Retry", later);
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const [job] = await d.claim(1);
      if (!job) break;
      order.push(job.phone);
      await d.event(job.call_id, "ended", { hangup_cause: "NO_ANSWER" });
    }
    expect(order).toEqual(["+14155552673", "+14155552672", "+14155552671"]);
    // The retry not yet due joins once its time comes (and the hopper is read again).
    d.clock.increment(31 * MINUTE);
    expect((await d.claim(1)).map((job) => job.phone)).toEqual(["+14155552674"]);
  });

  test("one claim of several jobs lists them in dialing order", async () => {
    const phones = ["+14155552671", "+14155552672", "+14155552673", "+14155552674"] as const;
    const d = await dialingWorkspace(
      `phone,timezone\n${phones.map((phone) => `${phone},America/New_York`).join("\n")}\n`,
      4,
    );
    const past = new Date(d.clock.now() - MINUTE).toISOString();
    const set = (phone: string, state: string) =>
      d.w.deps.db.execute(
        sql`update leads set state = ${state}, next_attempt_at = ${past}::timestamptz where phone = ${phone}`,
      );
    await set(phones[3], "Callback");
    await set(phones[2], "Retry");
    expect((await d.claim(4)).map((job) => job.phone)).toEqual([
      phones[3],
      phones[2],
      phones[0],
      phones[1],
    ]);
  });

  test("a retry falling due goes before the fresh leads the hopper already holds", async () => {
    const phones = [1, 2, 3, 4, 5].map((i) => `+1415555267${i}`);
    const d = await dialingWorkspace(
      `phone,timezone\n${phones.map((phone) => `${phone},America/New_York`).join("\n")}\n`,
    );
    const [first] = await d.claim(1);
    expect(first?.phone).toBe(phones[0]);
    await d.event(first?.call_id as string, "ended", { hangup_cause: "NO_ANSWER" });
    // The hopper holds the four fresh leads left; the first is a retry an hour from now.
    const retried = (await d.leads()).find((entry) => entry.phone === phones[0]);
    expect(retried?.state).toBe("Retry");
    d.clock.increment(61 * MINUTE);
    const [again] = await d.claim(1);
    expect(again?.phone).toBe(phones[0]);
    await d.event(again?.call_id as string, "ended", { hangup_cause: "NO_ANSWER" });
    expect((await d.claim(1)).map((job) => job.phone)).toEqual([phones[1] as string]);
  });

  test("stop: no new calls, while calls already placed finish and are recorded", async () => {
    const d = await dialingWorkspace(
      "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n",
      2,
    );
    const jobs = await d.claim(5);
    expect(jobs).toHaveLength(2);
    expect((await d.status("stop")).status).toBe(200);
    expect(await d.claim(5)).toEqual([]);
    for (const job of jobs) {
      expect((await d.event(job.call_id, "ringing")).status).toBe(200);
      const answered = await d.event(job.call_id, "answered");
      expect(answered.body.data.call.action).toBe("bridge");
      d.clock.increment(30_000);
      expect((await d.event(job.call_id, "ended", { node_bridge_ms: 400 })).status).toBe(200);
    }
    const records = await d.cdrs();
    expect(records.total).toBe(2);
    expect(records.data.items[0]).toMatchObject({ outcome: "answered", bridge_ms: 400 });
    expect((await d.leads()).map((lead) => lead.state)).toEqual(["Connected", "Connected"]);
    const campaign = await d.w.request("GET", `/api/v1/campaigns/${d.campaignId}`, {
      token: d.admin,
    });
    expect(campaign.body.data.campaign).toMatchObject({
      status: "stopped",
      stats: { calls_in_flight: 0, leads_by_state: { Connected: 2 } },
    });
  });

  test("node loss: a call on a silent node fails after its lease; on a live node it goes on", async () => {
    const d = await dialingWorkspace("phone,timezone\n+14155552671,America/New_York\n");
    const [job] = await d.claim(1);
    const callId = job?.call_id as string;
    await d.event(callId, "ringing");
    await d.event(callId, "answered");
    const heartbeat = () =>
      d.w.request("POST", "/api/v1/nodes/heartbeat", {
        token: d.nodeKey,
        body: { active_calls: 1 },
      });
    // Ten minutes of conversation on a node that keeps sending heartbeats.
    for (let i = 0; i < 30; i++) {
      d.clock.increment(20_000);
      expect((await heartbeat()).status).toBe(200);
      expect(await sweepExpiredCalls(d.w.deps)).toBe(0);
    }
    // The node goes silent: offline after 30 s, and the call fails.
    d.clock.increment(29_000);
    expect(await sweepExpiredCalls(d.w.deps)).toBe(0);
    d.clock.increment(2_000);
    expect(await sweepExpiredCalls(d.w.deps)).toBe(1);
    expect((await d.cdrs()).data.items[0]).toMatchObject({
      call_id: callId,
      hangup_cause: "LEASE_EXPIRED",
      outcome: "answered",
    });
  });

  test("the database's zone rules and the hopper's agree at every window edge", async () => {
    const zones = ["Pacific/Kiritimati", "Pacific/Pago_Pago", "America/St_Johns", "Asia/Kathmandu"];
    const csv = `phone,timezone\n${zones.map((zone, i) => `+1415555267${i + 1},${zone}`).join("\n")}\n`;
    const d = await dialingWorkspace(csv);
    await d.w.request("PATCH", `/api/v1/campaigns/${d.campaignId}`, {
      token: d.admin,
      body: { version: 2, calling_window: { start: "09:00", end: "17:00" } },
    });
    const campaign = d.w.deps.campaigns.peek(d.campaignId)?.campaign;
    expect(campaign?.callingWindowStart).toBe("09:00");
    // Each zone's 09:00 and 17:00 local, a minute either side, on both sides of the spring change.
    const instants: number[] = [];
    for (const day of ["2026-03-07", "2026-03-08", "2026-03-09"]) {
      for (const zone of zones) {
        for (const local of [9 * 60, 17 * 60]) {
          const midnightUtc = Date.parse(`${day}T00:00:00Z`);
          const guess = midnightUtc + (local - (OFFSETS[zone]?.(midnightUtc) ?? 0)) * MINUTE;
          const edge =
            guess + ((OFFSETS[zone]?.(midnightUtc) ?? 0) - (OFFSETS[zone]?.(guess) ?? 0)) * MINUTE;
          instants.push(edge - MINUTE, edge);
        }
      }
    }
    for (const at of instants) {
      const fromDatabase = await readHopper(d.w.deps.db, {
        campaignId: d.campaignId,
        now: new Date(at),
        windowStart: "09:00",
        windowEnd: "17:00",
        maxAttempts: 3,
        limit: 10,
        fresh: true,
      });
      const fromHopper = take(fromDatabase, at, 10).taken;
      const expected = zones.filter((zone) => insideWindow(zone, at));
      expect(fromDatabase.map((entry) => entry.timezone).sort()).toEqual(expected.sort());
      expect(fromHopper.length).toBe(fromDatabase.length);
    }
  });

  test("after a large import the planner knows the leads, and the hopper walks their index", async () => {
    const phones = Array.from(
      { length: 5_000 },
      (_, i) => `+1212${2_000_000 + i},America/New_York`,
    );
    const d = await dialingWorkspace(`phone,timezone\n${phones.join("\n")}\n`);
    const db = d.w.deps.db;
    const [table] = rowsOf<{ estimated: number; counted: number }>(
      await db.execute(sql`select (select reltuples from pg_class where relname = 'leads') as estimated,
        (select count(*)::int from leads) as counted`),
    );
    expect(Number(table?.estimated)).toBe(table?.counted as number);
    const plan = rowsOf<{ "QUERY PLAN": string }>(
      await db.execute(
        sql`explain ${hopperQuery({
          campaignId: d.campaignId,
          now: new Date(d.clock.now()),
          windowStart: "09:00",
          windowEnd: "21:00",
          maxAttempts: 3,
          limit: 200,
          fresh: true,
        })}`,
      ),
    )
      .map((row) => row["QUERY PLAN"])
      .join("\n");
    expect(plan).toContain("leads_campaign_state_seq");
    expect(plan).not.toContain("Seq Scan on leads");
  });
});

describe("calls in wrap-up", () => {
  const ended = (id: string): CallRow => ({
    id,
    tenantId: "t",
    campaignId: "c",
    leadListId: "l",
    leadId: `lead-${id}`,
    edgeNodeId: "n",
    agentId: "a",
    phone: "+14155552671",
    callerId: "+14155550100",
    attempt: 1,
    timeoutSeconds: 30,
    status: "ended",
    bridged: true,
    machine: false,
    outcome: "answered",
    hangupCause: "NORMAL_CLEARING",
    disposition: null,
    leaseExpiresAt: new Date(0),
    claimedAt: new Date(0),
    ringingAt: null,
    answeredAt: new Date(1_000),
    endedAt: new Date(2_000),
    bridgeMs: null,
    claimKey: null,
    ...UNTRACED,
    updatedAt: new Date(2_000),
  });
  const endOf = (id: string, wrapUp?: CallRow) =>
    ({
      type: "dialing.callEnded",
      callId: id,
      outcome: "answered",
      claimedAt: 0,
      answeredAt: 1_000,
      endedAt: 2_000,
      bridgeMs: null,
      wrapUp,
    }) as const;

  test("a call ended with its agent is kept until its disposition, the oldest forgotten past the bound", () => {
    let state = applyDialing(dialingWith(), endOf("x", ended("x")));
    expect(state.wrapping.get("x")?.status).toBe("ended");
    state = applyDialing(state, endOf("y"));
    expect([...state.wrapping.keys()]).toEqual(["x"]);
    state = applyDialing(state, { type: "dialing.dispositioned", callId: "x" });
    expect(state.wrapping.size).toBe(0);
    for (let i = 0; i <= MAX_WRAPPING; i++)
      state = applyDialing(state, endOf(`w${i}`, ended(`w${i}`)));
    expect(state.wrapping.size).toBe(MAX_WRAPPING);
    expect(state.wrapping.has("w0")).toBe(false);
  });
});
