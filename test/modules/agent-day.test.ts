import { beforeEach, describe, expect, test } from "bun:test";
import { sweepAgentDeadlines } from "../../src/dialer/agent-deadlines.ts";
import { signOutAgent } from "../../src/dialer/presence.ts";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";
import { listenOnLoopback, openSocket } from "../helpers/sockets.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let adminToken: string;
let agentToken: string;
let nodeKey: string;
let campaignId: string;

/** Noon in New York: inside the calling window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");

async function setUp(campaign: Record<string, unknown> = {}) {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  adminToken = await w.login("admin@acme.test");
  await w.user(w.acme.id, "agent@acme.test", "agent");
  agentToken = await w.login("agent@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "Dial", regulatory_profile: "none", max_attempts: 5, ...campaign },
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
    "phone,timezone\n+14155552671,America/New_York\n+14155552672,America/New_York\n",
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
}

const setState = (body: Record<string, unknown>) =>
  w.request("POST", "/api/v1/agents/me/state", { token: agentToken, body });
const ready = () => setState({ state: "ready", campaign_id: campaignId });
const me = async () =>
  (await w.request("GET", "/api/v1/agents/me", { token: agentToken })).body.data.agent;
const claim = async () =>
  (await w.request("POST", "/api/v1/nodes/jobs/claim", { token: nodeKey, body: { max: 5 } })).body
    .data.jobs as { call_id: string }[];
const event = (callId: string, type: string) =>
  w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
    token: nodeKey,
    body: { type, at: new Date(w.clock.now()).toISOString() },
  });
const dispose = (callId: string, disposition = "completed") =>
  w.request("POST", `/api/v1/calls/${callId}/disposition`, {
    token: agentToken,
    body: { disposition },
  });
const cdrOf = async (callId: string) =>
  (await w.request("GET", "/api/v1/cdrs", { token: adminToken })).body.data.items.find(
    (cdr: { call_id: string }) => cdr.call_id === callId,
  );

/** The agent is ready, takes a call and talks for a minute; the call is in flight. */
async function onCall(): Promise<string> {
  await ready();
  const [job] = await claim();
  const callId = job?.call_id as string;
  w.clock.advance(5_000);
  await event(callId, "answered");
  w.clock.advance(60_000);
  return callId;
}

describe("a pause asked for during a call", () => {
  beforeEach(() => setUp());

  test("waits for the disposition, which is still asked for, then pauses with its reason", async () => {
    const callId = await onCall();
    const asked = await setState({ state: "paused", reason: "lunch" });
    expect(asked.status).toBe(200);
    expect(asked.body.data.agent).toMatchObject({
      state: "on_call",
      pause_after_call: true,
      reason: "lunch",
    });
    await event(callId, "ended");
    expect(await me()).toMatchObject({ state: "wrap_up", call_id: callId, pause_after_call: true });
    // Nothing is dialled for an agent in wrap-up, and the call keeps waiting for its code.
    expect((await cdrOf(callId)).disposition).toBeNull();
    expect((await dispose(callId)).status).toBe(200);
    expect(await me()).toMatchObject({
      state: "paused",
      reason: "lunch",
      call_id: null,
      pause_after_call: false,
    });
    expect(await claim()).toEqual([]);
  });

  test("in wrap-up the same; `ready` takes the request back", async () => {
    const callId = await onCall();
    await event(callId, "ended");
    const asked = await setState({ state: "paused" });
    expect(asked.body.data.agent).toMatchObject({ state: "wrap_up", pause_after_call: true });
    const since = asked.body.data.agent.since;
    const back = await setState({ state: "ready", campaign_id: campaignId });
    // The wrap-up goes on from where it was: its clock is not restarted.
    expect(back.body.data.agent).toMatchObject({
      state: "wrap_up",
      pause_after_call: false,
      since,
    });
    await dispose(callId);
    expect(await me()).toMatchObject({ state: "ready", reason: null });
  });

  test("leaving a call or its wrap-up is still refused", async () => {
    const callId = await onCall();
    expect((await setState({ state: "offline" })).status).toBe(409);
    await event(callId, "ended");
    expect((await setState({ state: "ready", campaign_id: campaignId })).status).toBe(409);
    expect((await setState({ state: "offline" })).status).toBe(409);
    expect(await me()).toMatchObject({ state: "wrap_up", call_id: callId });
  });
});

describe("not-ready reasons", () => {
  beforeEach(() => setUp());

  test("a workspace starts with a list that agents read and admins replace", async () => {
    const listed = await w.request("GET", "/api/v1/agents/not-ready-reasons", {
      token: agentToken,
    });
    expect(listed.body.data.items.map((reason: { code: string }) => reason.code)).toEqual([
      "break",
      "lunch",
      "training",
      "meeting",
      "other",
    ]);
    const replaced = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: adminToken,
      body: { not_ready_reasons: [{ code: "coaching", label: "Coaching" }] },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.tenant.not_ready_reasons).toEqual([
      { code: "coaching", label: "Coaching" },
    ]);
    await ready();
    expect((await setState({ state: "paused", reason: "coaching" })).status).toBe(200);
    const lunch = await setState({ state: "paused", reason: "lunch" });
    expect(lunch.status).toBe(422);
    expect(lunch.body.field_errors).toEqual([
      { field: "reason", message: "not one of the workspace's not-ready reasons (coaching)" },
    ]);
    expect(await me()).toMatchObject({ state: "paused", reason: "coaching" });
  });

  test("a reason only with a pause; the service's own reason and duplicates are refused", async () => {
    const withReady = await setState({ state: "ready", campaign_id: campaignId, reason: "break" });
    expect(withReady.status).toBe(422);
    expect(withReady.body.field_errors[0].field).toBe("reason");
    for (const reasons of [
      [{ code: "after_call", label: "After call" }],
      [
        { code: "break", label: "Break" },
        { code: "break", label: "Pause" },
      ],
    ]) {
      const refused = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
        token: adminToken,
        body: { not_ready_reasons: reasons },
      });
      expect(refused.status).toBe(422);
      expect(refused.body.field_errors[0].field).toMatch(/^not_ready_reasons\.\d\.code$/);
    }
    const bad = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: adminToken,
      body: { not_ready_reasons: [{ code: "Has Spaces", label: "x" }] },
    });
    expect(bad.status).toBe(400);
    // An agent may not change the list.
    const agent = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: agentToken,
      body: { not_ready_reasons: [] },
    });
    expect(agent.status).toBe(403);
  });
});

describe("a campaign's wrap-up limit", () => {
  test("a forgotten wrap-up ends with the default disposition, recorded as automatic", async () => {
    await setUp({ wrap_up_seconds: 30, default_disposition: "no_contact" });
    const callId = await onCall();
    await event(callId, "ended");
    w.clock.advance(29_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(0);
    expect((await me()).state).toBe("wrap_up");
    w.clock.advance(1_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(1);
    expect(await me()).toMatchObject({ state: "ready", call_id: null });
    expect(await cdrOf(callId)).toMatchObject({
      disposition: "no_contact",
      disposition_automatic: true,
    });
    // The agent's own disposition comes too late, and changes nothing.
    expect((await dispose(callId, "completed")).status).toBe(409);
    expect(await sweepAgentDeadlines(w.deps)).toBe(0);
  });

  test("an agent gone during the wrap-up (its grace ran out) is paused, not handed the next call", async () => {
    await setUp({ wrap_up_seconds: 30 });
    const callId = await onCall();
    await event(callId, "ended");
    await signOutAgent(w.deps, (await me()).user_id);
    expect(await me()).toMatchObject({ state: "wrap_up", pause_after_call: true });
    w.clock.advance(30_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(1);
    expect(await me()).toMatchObject({ state: "paused", call_id: null });
    expect(await claim()).toEqual([]);
  });

  test("an agent's own disposition in time is not automatic; no limit means none", async () => {
    await setUp({ wrap_up_seconds: 30 });
    const first = await onCall();
    await event(first, "ended");
    w.clock.advance(10_000);
    await dispose(first);
    expect((await cdrOf(first)).disposition_automatic).toBe(false);

    const { version } = (
      await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken })
    ).body.data.campaign;
    const patched = await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
      token: adminToken,
      body: { wrap_up_seconds: 0, version },
    });
    expect(patched.body.data.campaign.wrap_up_seconds).toBe(0);
    const [job] = await claim();
    const second = job?.call_id as string;
    await event(second, "answered");
    await event(second, "ended");
    w.clock.advance(3_600_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(0);
    expect((await me()).state).toBe("wrap_up");
  });

  test("a callback cannot be the default disposition", async () => {
    w = await createWorkspace();
    adminToken = await w.login("admin@acme.test");
    const refused = await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "C", default_disposition: "callback" },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.field_errors).toEqual([
      {
        field: "default_disposition",
        message: "a callback needs a time: it cannot be the default",
      },
    ]);
  });
});

describe("a breath after each call", () => {
  test("the agent is paused for after_call, then ready by itself; nothing is dialled meanwhile", async () => {
    await setUp({ after_call_pause_seconds: 10 });
    const callId = await onCall();
    await event(callId, "ended");
    await dispose(callId);
    const resting = await me();
    expect(resting).toMatchObject({
      state: "paused",
      reason: "after_call",
      ready_at: new Date(w.clock.now() + 10_000).toISOString(),
    });
    expect(await claim()).toEqual([]);
    w.clock.advance(9_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(0);
    w.clock.advance(1_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(1);
    expect(await me()).toMatchObject({ state: "ready", reason: null, ready_at: null });
    expect(await claim()).toHaveLength(1);
  });

  test("a pause asked for during the call wins over the breath, and ends only when the agent says", async () => {
    await setUp({ after_call_pause_seconds: 10 });
    const callId = await onCall();
    await setState({ state: "paused", reason: "break" });
    await event(callId, "ended");
    await dispose(callId);
    expect(await me()).toMatchObject({ state: "paused", reason: "break", ready_at: null });
    w.clock.advance(60_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(0);
    expect((await me()).state).toBe("paused");
  });

  test("an agent who pauses during the breath stays paused", async () => {
    await setUp({ after_call_pause_seconds: 10 });
    const callId = await onCall();
    await event(callId, "ended");
    await dispose(callId);
    await setState({ state: "paused", reason: "training" });
    w.clock.advance(20_000);
    expect(await sweepAgentDeadlines(w.deps)).toBe(0);
    expect(await me()).toMatchObject({ state: "paused", reason: "training" });
  });
});

describe("an agent's figures for the day", () => {
  test("calls, talk, wrap-up and time paused for each reason, the current state up to now", async () => {
    await setUp();
    const callId = await onCall();
    await event(callId, "ended");
    w.clock.advance(20_000);
    await dispose(callId);
    w.clock.advance(30_000);
    await setState({ state: "paused", reason: "break" });
    w.clock.advance(600_000);
    await setState({ state: "paused", reason: "lunch" });
    w.clock.advance(120_000);
    const figures = async (query = "") =>
      (
        await w.request("GET", `/api/v1/agents/me/figures${query}`, {
          token: agentToken,
        })
      ).body.data.figures;
    // The board writes states behind: the log has what the agent left once they commit.
    await w.deps.dialer.agents.settled();
    const today = await figures();
    expect(today).toMatchObject({
      calls: 1,
      talk_seconds: 60,
      wrap_up_seconds: 20,
      average_talk_seconds: 60,
      average_wrap_up_seconds: 20,
      paused_seconds_by_reason: { break: 600, lunch: 120 },
      day: {
        start: "2026-03-02T00:00:00.000Z",
        end: "2026-03-03T00:00:00.000Z",
        time_zone: "Etc/UTC",
      },
    });
    expect(today.seconds_by_state).toMatchObject({
      ready: 30 + 5,
      on_call: 60,
      wrap_up: 20,
      paused: 720,
    });
    // A day in another zone: New York's day started at 05:00 UTC.
    expect((await figures("?time_zone=America/New_York")).day).toEqual({
      start: "2026-03-02T05:00:00.000Z",
      end: "2026-03-03T05:00:00.000Z",
      time_zone: "America/New_York",
    });
    const bad = await w.request("GET", "/api/v1/agents/me/figures?time_zone=Mars/Base", {
      token: agentToken,
    });
    expect(bad.status).toBe(422);
    expect(bad.body.field_errors[0].field).toBe("time_zone");
  });
});

describe("what a supervisor does to the agent's campaign", () => {
  test("the agent's socket hears the pause and who did it; agents of other campaigns do not", async () => {
    await setUp();
    const listening = listenOnLoopback({ app: w.app, deps: w.deps });
    try {
      await w.user(w.acme.id, "lead@acme.test", "supervisor");
      const supervisor = await w.login("lead@acme.test");
      await w.user(w.acme.id, "other@acme.test", "agent");
      const otherToken = await w.login("other@acme.test");
      const elsewhere = (
        await w.request("POST", "/api/v1/campaigns", {
          token: adminToken,
          body: { name: "Elsewhere", regulatory_profile: "none" },
        })
      ).body.data.campaign.id;
      await ready();
      const socket = await openSocket(listening.wsUrl("/ws/agent", agentToken));
      await socket.next("agent.state");
      const other = await openSocket(listening.wsUrl("/ws/agent", otherToken));
      await other.next("agent.state");
      other.send(JSON.stringify({ type: "pause", campaign_id: elsewhere }));
      await other.next("ack");

      const paused = await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
        token: supervisor,
        body: { action: "pause" },
      });
      expect(paused.status).toBe(200);
      expect(await socket.next("campaign.status")).toMatchObject({
        campaign_id: campaignId,
        status: "paused",
        from: "running",
        by: { actor_type: "user", email: "lead@acme.test" },
      });
      await Bun.sleep(100);
      expect(other.messages.filter((m) => m.type === "campaign.status")).toEqual([]);
      socket.socket.close();
      other.socket.close();
    } finally {
      await listening.stop();
    }
  });
});

describe("a supervisor's pacing", () => {
  test("a new ratio is pushed to supervisors as the campaign now is", async () => {
    await setUp();
    const listening = listenOnLoopback({ app: w.app, deps: w.deps });
    try {
      await w.user(w.acme.id, "lead@acme.test", "supervisor");
      const supervisor = await w.login("lead@acme.test");
      const socket = await openSocket(listening.wsUrl("/ws/supervisor", supervisor));
      await socket.next("snapshot");
      const { version } = (
        await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: supervisor })
      ).body.data.campaign;
      const patched = await w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
        token: supervisor,
        body: { version, dial_ratio: 2.5 },
      });
      expect(patched.status).toBe(200);
      expect(await socket.next("campaign.updated")).toMatchObject({
        campaign: { id: campaignId, dial_ratio: 2.5, version: version + 1 },
      });
      socket.socket.close();
    } finally {
      await listening.stop();
    }
  });
});

describe("what a supervisor does to an agent", () => {
  const supervise = (token: string, userId: string, body: Record<string, unknown>) =>
    w.request("POST", `/api/v1/agents/${userId}/state`, { token, body });

  test("a pause with a reason, told to the agent with who did it, and audited", async () => {
    await setUp();
    const listening = listenOnLoopback({ app: w.app, deps: w.deps });
    try {
      await w.user(w.acme.id, "lead@acme.test", "supervisor");
      const supervisor = await w.login("lead@acme.test");
      await ready();
      const agentId = (await me()).user_id as string;
      const socket = await openSocket(listening.wsUrl("/ws/agent", agentToken));
      await socket.next("agent.state");
      const paused = await supervise(supervisor, agentId, { state: "paused", reason: "meeting" });
      expect(paused.status).toBe(200);
      expect(paused.body.data.agent).toMatchObject({ state: "paused", reason: "meeting" });
      expect(await socket.next("agent.supervised")).toMatchObject({
        state: "paused",
        reason: "meeting",
        by: { email: "lead@acme.test" },
      });
      const audit = await w.request("GET", "/api/v1/audit-events", { token: adminToken });
      expect(
        audit.body.data.items.find((event: { action: string }) => event.action === "agent.paused"),
      ).toMatchObject({ target_id: agentId, details: { reason: "meeting" } });
      socket.socket.close();
    } finally {
      await listening.stop();
    }
  });

  test("the board: each agent's state, call and day, and the counts by state and reason", async () => {
    await setUp();
    await w.user(w.acme.id, "lead@acme.test", "supervisor");
    const supervisor = await w.login("lead@acme.test");
    await w.user(w.acme.id, "resting@acme.test", "agent");
    const resting = await w.login("resting@acme.test");
    await w.request("POST", "/api/v1/agents/me/state", {
      token: resting,
      body: { state: "paused", campaign_id: campaignId, reason: "lunch" },
    });
    const callId = await onCall();
    const board = await w.request("GET", "/api/v1/agents/board", { token: supervisor });
    expect(board.status).toBe(200);
    expect(board.body.data.counts).toEqual({
      by_state: { paused: 1, on_call: 1 },
      paused_by_reason: { lunch: 1 },
    });
    const onIt = board.body.data.agents.find(
      (row: { agent: { state: string } }) => row.agent.state === "on_call",
    );
    expect(onIt).toMatchObject({
      agent: { call_id: callId },
      call: { id: callId, phone: "+14155552671" },
      figures: { seconds_by_state: { on_call: 60 } },
    });
    expect((await w.request("GET", "/api/v1/agents/board", { token: agentToken })).status).toBe(
      403,
    );
  });

  test("on a call: a pause waits for the disposition, a sign-out is refused; others are refused", async () => {
    await setUp();
    await w.user(w.acme.id, "lead@acme.test", "supervisor");
    const supervisor = await w.login("lead@acme.test");
    const callId = await onCall();
    const agentId = (await me()).user_id as string;
    expect((await supervise(supervisor, agentId, { state: "offline" })).status).toBe(409);
    const later = await supervise(supervisor, agentId, { state: "paused" });
    expect(later.body.data.agent).toMatchObject({ state: "on_call", pause_after_call: true });
    await event(callId, "ended");
    await dispose(callId);
    expect(await me()).toMatchObject({ state: "paused" });
    // An agent cannot supervise; an id of another workspace or of no one is 404.
    await w.user(w.acme.id, "peer@acme.test", "agent");
    const peer = await w.login("peer@acme.test");
    expect((await supervise(peer, agentId, { state: "paused" })).status).toBe(403);
    // Nobody at the desk: a pause never signs an agent in, and a sign-out has no one to sign out.
    const peerId = (await w.request("GET", "/api/v1/agents/me", { token: peer })).body.data.agent
      .user_id as string;
    for (const state of ["paused", "offline"]) {
      const away = await supervise(supervisor, peerId, { state });
      expect({ state, status: away.status }).toEqual({ state, status: 409 });
    }
    const board = await w.request("GET", "/api/v1/agents/board", { token: supervisor });
    expect(
      board.body.data.agents.some(
        (row: { agent: { user_id: string } }) => row.agent.user_id === peerId,
      ),
    ).toBe(false);
    expect((await supervise(supervisor, crypto.randomUUID(), { state: "paused" })).status).toBe(
      404,
    );
    const outsider = await w.tenant("other.test");
    const stranger = await w.user(outsider.id, "x@other.test", "agent");
    expect((await supervise(supervisor, stranger.id, { state: "paused" })).status).toBe(404);
    expect((await supervise(supervisor, agentId, { state: "ready" })).status).toBe(400);
  });
});

describe("a campaign's disposition codes", () => {
  const patch = async (body: Record<string, unknown>) => {
    const { version } = (
      await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken })
    ).body.data.campaign;
    return w.request("PATCH", `/api/v1/campaigns/${campaignId}`, {
      token: adminToken,
      body: { ...body, version },
    });
  };
  const SALES_CODES = [
    { code: "sale", label: "Sale", hotkey: "s", outcome: "done" },
    { code: "not_interested", label: "Not interested", hotkey: "n", outcome: "done" },
    { code: "call_me", label: "Call me later", hotkey: "c", outcome: "callback" },
    { code: "busy_now", label: "Busy now", hotkey: null, outcome: "retry" },
    { code: "remove_me", label: "Remove me", hotkey: "x", outcome: "do_not_call" },
  ];

  test("a new campaign has the default set; a call takes only its campaign's codes, each doing what it says", async () => {
    await setUp();
    const campaign = (
      await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken })
    ).body.data.campaign;
    expect(campaign.disposition_codes.map((code: { code: string }) => code.code)).toEqual([
      "completed",
      "callback",
      "do_not_call",
      "no_contact",
      "answering_machine",
      "wrong_number",
    ]);
    const changed = await patch({
      disposition_codes: SALES_CODES,
      default_disposition: "busy_now",
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data.campaign.disposition_codes).toEqual(SALES_CODES);

    const callId = await onCall();
    await event(callId, "ended");
    const other = await dispose(callId, "completed");
    expect(other.status).toBe(422);
    expect(other.body.field_errors).toEqual([
      {
        field: "disposition",
        message:
          "not one of the campaign's disposition codes (sale, not_interested, call_me, busy_now, remove_me)",
      },
    ]);
    expect((await cdrOf(callId)).disposition).toBeNull();
    expect((await dispose(callId, "remove_me")).status).toBe(200);
    expect(await cdrOf(callId)).toMatchObject({
      disposition: "remove_me",
      disposition_outcome: "do_not_call",
    });
    const dnc = await w.request("GET", "/api/v1/dnc?phone=%2B14155552671", { token: adminToken });
    expect(dnc.body.data.items).toHaveLength(1);
  });

  test("the codes' names, keys and default are checked; nothing changes on a refusal", async () => {
    await setUp();
    const refusals: [Record<string, unknown>, string][] = [
      [
        { disposition_codes: [...SALES_CODES, { ...SALES_CODES[0], hotkey: "z" }] },
        "disposition_codes.5.code",
      ],
      [
        { disposition_codes: [...SALES_CODES, { ...SALES_CODES[0], code: "again" }] },
        "disposition_codes.5.hotkey",
      ],
      [
        { disposition_codes: [{ code: "x", label: "X", hotkey: "p", outcome: "done" }] },
        "disposition_codes.0.hotkey",
      ],
      [{ disposition_codes: SALES_CODES }, "default_disposition"],
      [{ disposition_codes: SALES_CODES, default_disposition: "call_me" }, "default_disposition"],
      [{ default_disposition: "sale" }, "default_disposition"],
    ];
    for (const [body, field] of refusals) {
      const refused = await patch(body);
      expect(refused.status).toBe(422);
      expect(refused.body.field_errors[0].field).toBe(field);
    }
    const badShape = await patch({
      disposition_codes: [{ code: "Sale!", label: "S", hotkey: null, outcome: "done" }],
    });
    expect(badShape.status).toBe(400);
    const campaign = (
      await w.request("GET", `/api/v1/campaigns/${campaignId}`, { token: adminToken })
    ).body.data.campaign;
    expect(campaign.disposition_codes).toHaveLength(6);
    expect(campaign.default_disposition).toBe("no_contact");
  });

  test("a retry code retries the lead; a callback code needs its time", async () => {
    await setUp();
    await patch({ disposition_codes: SALES_CODES, default_disposition: "busy_now" });
    const callId = await onCall();
    await event(callId, "ended");
    const noTime = await dispose(callId, "call_me");
    expect(noTime.status).toBe(400);
    expect((await dispose(callId, "busy_now")).status).toBe(200);
    expect(await cdrOf(callId)).toMatchObject({ disposition_outcome: "retry" });
  });
});

describe("what the agent sees of a lead", () => {
  test("its own callbacks due, and on the next call the lead's earlier attempts with their notes", async () => {
    await setUp({ max_attempts: 5 });
    const first = await onCall();
    await event(first, "ended");
    const dueAt = new Date(w.clock.now() + 3_600_000).toISOString();
    const callback = await w.request("POST", `/api/v1/calls/${first}/disposition`, {
      token: agentToken,
      body: { disposition: "callback", callback_at: dueAt, notes: "Wants the gold plan" },
    });
    expect(callback.status).toBe(200);
    const callbacks = await w.request("GET", "/api/v1/agents/me/callbacks", {
      token: agentToken,
    });
    expect(callbacks.body.data.items).toEqual([
      expect.objectContaining({
        phone: "+14155552671",
        due_at: dueAt,
        call_id: first,
        notes: "Wants the gold plan",
      }),
    ]);
    // Nothing to show without a lead of one's own.
    const none = await w.request("GET", "/api/v1/agents/me/history", { token: agentToken });
    expect(none.body.data.items).toEqual([]);

    // The other lead is called first; an hour on, the callback is due and comes back.
    const [other] = await claim();
    await event(other?.call_id as string, "ended");
    w.clock.advance(3_600_000);
    const [again] = await claim();
    const second = again?.call_id as string;
    await event(second, "answered");
    const history = await w.request("GET", "/api/v1/agents/me/history", { token: agentToken });
    expect(history.body.data.items).toEqual([
      expect.objectContaining({
        call_id: first,
        attempt: 1,
        outcome: "answered",
        disposition: "callback",
        disposition_outcome: "callback",
        agent_email: "agent@acme.test",
        notes: "Wants the gold plan",
      }),
    ]);
    await event(second, "ended");
    await dispose(second, "completed");
    const after = await w.request("GET", "/api/v1/agents/me/callbacks", { token: agentToken });
    expect(after.body.data.items).toEqual([]);
  });

  test("another agent's later callback makes the lead theirs; a supervisor's list is their own", async () => {
    await setUp();
    const first = await onCall();
    await event(first, "ended");
    await w.request("POST", `/api/v1/calls/${first}/disposition`, {
      token: agentToken,
      body: {
        disposition: "callback",
        callback_at: new Date(w.clock.now() + 60_000).toISOString(),
      },
    });
    await w.user(w.acme.id, "second@acme.test", "agent");
    const secondToken = await w.login("second@acme.test");
    await setState({ state: "paused" });
    await w.request("POST", "/api/v1/agents/me/state", {
      token: secondToken,
      body: { state: "ready", campaign_id: campaignId },
    });
    w.clock.advance(60_000);
    const jobs = await claim();
    const retry = jobs.find((job) => job.call_id !== first)?.call_id as string;
    await event(retry, "answered");
    await event(retry, "ended");
    const lead = await w.request("POST", `/api/v1/calls/${retry}/disposition`, {
      token: secondToken,
      body: {
        disposition: "callback",
        callback_at: new Date(w.clock.now() + 60_000).toISOString(),
      },
    });
    expect(lead.status).toBe(200);
    const mine = await w.request("GET", "/api/v1/agents/me/callbacks", { token: agentToken });
    const theirs = await w.request("GET", "/api/v1/agents/me/callbacks", { token: secondToken });
    const phones = (reply: typeof mine) =>
      reply.body.data.items.map((item: { phone: string }) => item.phone);
    expect(phones(theirs)).toContain("+14155552671");
    expect(phones(mine)).not.toContain("+14155552671");
  });
});
