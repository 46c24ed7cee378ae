import { beforeEach, describe, expect, test } from "bun:test";
import { DatabaseUnavailableError } from "../../db/availability.ts";
import { findPresence, type PresenceRow } from "../../db/queries/presence.ts";
import { runStatement } from "../../db/statement.ts";
import { AgentBoard, type AgentChange, type AgentPresence } from "../../src/dialer/agents.ts";
import { expireGraces, restorePresence } from "../../src/dialer/presence.ts";
import { silentLogger } from "../../src/logger.ts";
import { createHarness, type Harness } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

const GRACE_MS = 30_000;
const RENEW_MS = 5_000;

// The harness itself rather than a workspace built on it: after `restart()` its `deps` are the new ones.
let w: Harness;
let acmeId: string;
let agentId: string;
let agentToken: string;
let campaignId: string;

beforeEach(async () => {
  w = await createHarness({ env: { AGENT_DISCONNECT_GRACE_SECONDS: String(GRACE_MS / 1000) } });
  acmeId = (await w.tenant("acme.test", "Acme")).id;
  await w.user(acmeId, "admin@acme.test", "admin");
  agentId = (await w.user(acmeId, "agent@acme.test", "agent")).id;
  agentToken = await w.login("agent@acme.test");
  const admin = await w.login("admin@acme.test");
  campaignId = (await w.request("POST", "/api/v1/campaigns", { token: admin, body: { name: "C" } }))
    .body.data.campaign.id;
});

const setState = (body: Record<string, unknown>) =>
  w.request("POST", "/api/v1/agents/me/state", { token: agentToken, body });
const myAgent = async () =>
  (await w.request("GET", "/api/v1/agents/me", { token: agentToken })).body.data.agent;
const row = () => findPresence(w.deps.rawDb, agentId);
const graceOf = async () =>
  (
    await runStatement<{ grace: number | null }>(
      w.deps.rawDb,
      `select round(extract(epoch from grace_until) * 1000)::float8 as grace
       from agent_presence where user_id = $1::uuid`,
      [agentId],
    )
  )[0]?.grace;

describe("presence rows", () => {
  test("a state change is answered after its row commits, and a restart carries on from it", async () => {
    const ready = await setState({ state: "ready", campaign_id: campaignId });
    expect(ready.status).toBe(200);
    expect(await row()).toMatchObject({
      userId: agentId,
      tenantId: acmeId,
      email: "agent@acme.test",
      state: "ready",
      campaignId,
      callId: null,
      reason: null,
      pauseAfterCall: false,
      readyAt: null,
      since: Date.parse(ready.body.data.agent.since),
      version: 1,
    });
    w.clock.advance(1_000);
    const paused = await setState({ state: "paused" });
    expect(await row()).toMatchObject({ state: "paused", campaignId, version: 2 });

    w.restart();
    expect((await myAgent()).state).toBe("offline");
    expect(await restorePresence(w.deps)).toBe(1);
    expect(await myAgent()).toEqual(paused.body.data.agent);
    // Restoring writes nothing back.
    await w.deps.dialer.agents.settled();
    expect((await row())?.version).toBe(2);

    await setState({ state: "offline" });
    // The row stays, signed out, so that its version keeps rising across sessions.
    expect(await row()).toMatchObject({ state: "offline", version: 3 });
    w.restart();
    expect(await restorePresence(w.deps)).toBe(0);
    expect((await myAgent()).state).toBe("offline");
  });

  test("changes queued while a batch is written go in order, the latest last", async () => {
    const board = w.deps.dialer.agents;
    const agent = { userId: agentId, tenantId: acmeId, campaignId, callId: null };
    board.set({ ...agent, state: "ready" }, 1);
    board.set({ ...agent, state: "paused" }, 2);
    board.set({ ...agent, state: "ready" }, 3);
    await board.persisted(agentId);
    expect(await row()).toMatchObject({ state: "ready", since: 3 });
    // The first went alone; the two queued behind it went as one write.
    expect((await row())?.version).toBe(2);
  });
});

describe("a write the database refuses", () => {
  test("is logged; set never throws, the waiting caller hears of it, and later writes go on", async () => {
    const logged: string[] = [];
    const board = new AgentBoard({
      raw: w.deps.rawDb,
      clock: w.clock,
      logger: { ...silentLogger, error: (message) => logged.push(message) },
      graceMs: GRACE_MS,
    });
    const agent = { userId: agentId, tenantId: acmeId, campaignId, callId: null };
    // Not a uuid: the statement fails every time, so it is not retried.
    expect(() => board.set({ ...agent, tenantId: "not-a-uuid", state: "ready" }, 1)).not.toThrow();
    expect(board.get(agentId)?.state).toBe("ready");
    await expect(board.persisted(agentId)).rejects.toThrow();
    expect(logged).toEqual(["agents' presence could not be written"]);
    board.hold(agentId);
    await board.settled();
    expect(logged).toHaveLength(1);
    board.set({ ...agent, state: "paused" }, 2);
    await board.persisted(agentId);
    expect(await row()).toMatchObject({ state: "paused", since: 2 });
  });
});

describe("a write the database could not take", () => {
  test("leaves the change standing and queued, so the waiting caller hears its outcome is unknown", async () => {
    // The database's first statement is refused as a stopped server refuses it.
    const real = w.deps.rawDb;
    let refusals = 1;
    const refusingOnce = <T extends object>(target: T, method: string): T =>
      new Proxy(target, {
        get(inner, property) {
          if (property === method && refusals > 0) {
            refusals--;
            return () =>
              Promise.reject(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }));
          }
          const value = Reflect.get(inner, property, inner);
          return typeof value === "function" ? value.bind(inner) : value;
        },
      });
    const raw =
      real.kind === "pglite"
        ? { ...real, client: refusingOnce(real.client, "query") }
        : { ...real, client: refusingOnce(real.client, "unsafe") };
    const board = new AgentBoard({
      raw,
      clock: w.clock,
      logger: silentLogger,
      graceMs: GRACE_MS,
    });
    const agent = { userId: agentId, tenantId: acmeId, campaignId, callId: null };
    board.set({ ...agent, state: "paused" }, 1);
    const heard = await board.persisted(agentId).catch((error: unknown) => error);
    expect(heard).toBeInstanceOf(DatabaseUnavailableError);
    expect((heard as DatabaseUnavailableError).failure).toBe("outcome_unknown");
    // The change stands and is written with the next write.
    expect(board.get(agentId)?.state).toBe("paused");
    await board.settled();
    expect(await row()).toBeUndefined();
    board.hold(agentId);
    await board.settled();
    expect(await row()).toMatchObject({ state: "paused", since: 1 });
  });
});

describe("the states an agent left", () => {
  test("each is logged with its reason and length, also when several come between two writes", async () => {
    const board = new AgentBoard({
      raw: w.deps.rawDb,
      clock: w.clock,
      logger: silentLogger,
      graceMs: GRACE_MS,
    });
    const agent = { userId: agentId, tenantId: acmeId, campaignId, callId: null };
    board.set({ ...agent, state: "ready" }, 1_000);
    // Set while the first write is on its way: written together as the latest state.
    board.set({ ...agent, state: "paused", reason: "break" }, 2_000);
    board.set({ ...agent, state: "paused", reason: "lunch" }, 5_000);
    board.set({ ...agent, state: "ready", reason: null }, 9_000);
    await board.persisted(agentId);
    const spans = await runStatement<{ state: string; reason: string | null; ms: number }>(
      w.deps.rawDb,
      `select state, reason, round(extract(epoch from started_at) * 1000)::float8 as ms
       from agent_state_log where user_id = $1::uuid order by started_at`,
      [agentId],
    );
    expect(spans).toEqual([
      { state: "ready", reason: null, ms: 1_000 },
      { state: "paused", reason: "break", ms: 2_000 },
      { state: "paused", reason: "lunch", ms: 5_000 },
    ]);
  });
});

describe("the grace deadline", () => {
  test("a socket's agent is renewed; once its sockets are gone, it is signed out at the deadline, by a process started since", async () => {
    await setState({ state: "ready", campaign_id: campaignId });
    const board = w.deps.dialer.agents;
    const start = w.clock.now();
    board.hold(agentId);
    await board.settled();
    expect(await graceOf()).toBe(start + GRACE_MS + RENEW_MS);

    w.clock.advance(GRACE_MS + RENEW_MS - 1_000);
    expect(await expireGraces(w.deps)).toBe(0);
    board.renewGraces();
    await board.settled();
    w.clock.advance(10_000);
    expect(await expireGraces(w.deps)).toBe(0);
    expect((await myAgent()).state).toBe("ready");

    const deadline = board.release(agentId, w.clock.now());
    await board.settled();
    expect(await graceOf()).toBe(deadline);
    // The process ends before its timer fires; the next one finds the deadline in the row.
    w.restart();
    await restorePresence(w.deps);
    w.clock.advance(GRACE_MS - 1);
    expect(await expireGraces(w.deps)).toBe(0);
    expect((await myAgent()).state).toBe("ready");
    w.clock.advance(1);
    expect(await expireGraces(w.deps)).toBe(1);
    expect((await myAgent()).state).toBe("offline");
    expect(await row()).toMatchObject({ state: "offline" });
    expect(await graceOf()).toBeNull();
    // Taken once: a second sweep finds nothing.
    expect(await expireGraces(w.deps)).toBe(0);
  });

  test("a socket that returns keeps the agent past the deadline its close set", async () => {
    await setState({ state: "ready", campaign_id: campaignId });
    const board = w.deps.dialer.agents;
    board.hold(agentId);
    const deadline = board.release(agentId, w.clock.now());
    board.hold(agentId);
    w.clock.advance(GRACE_MS + 1);
    expect(await expireGraces(w.deps, { userId: agentId, deadline })).toBe(0);
    expect(await expireGraces(w.deps)).toBe(0);
    expect((await myAgent()).state).toBe("ready");
  });

  test("an agent no socket ever held keeps its state however long", async () => {
    await setState({ state: "paused", campaign_id: campaignId });
    expect(await graceOf()).toBeNull();
    w.clock.advance(24 * 3_600_000);
    expect(await expireGraces(w.deps)).toBe(0);
    agentToken = await w.login("agent@acme.test");
    expect((await myAgent()).state).toBe("paused");
  });

  test("a session started within a running grace keeps that deadline", async () => {
    const board = w.deps.dialer.agents;
    board.hold(agentId);
    const deadline = board.release(agentId, w.clock.now());
    // Signed out and back over REST while the closed socket's grace runs: the grace still ends it.
    await setState({ state: "ready", campaign_id: campaignId });
    expect(await graceOf()).toBe(deadline);
    await setState({ state: "offline" });
    expect(await graceOf()).toBeNull();
  });
});

describe("an agent signed out at the deadline", () => {
  test("releases the call reserved for them, as the socket's timer does", async () => {
    const admin = await w.login("admin@acme.test");
    const preview = (
      await w.request("POST", "/api/v1/campaigns", {
        token: admin,
        body: {
          name: "P",
          dial_mode: "preview",
          regulatory_profile: "none",
          calling_window: { start: "00:00", end: "23:59" },
        },
      })
    ).body.data.campaign.id;
    const list = await w.request("POST", `/api/v1/campaigns/${preview}/lead-lists`, {
      token: admin,
      body: { name: "L", caller_id: "+14155550100" },
    });
    await importFile(
      w,
      `/api/v1/campaigns/${preview}/lead-lists/${list.body.data.lead_list.id}/import`,
      admin,
      "phone,timezone\n+14155552671,UTC\n",
    );
    const node = (
      await w.request("POST", "/api/v1/edge-nodes", {
        token: admin,
        body: { name: "edge", max_concurrent_calls: 10 },
      })
    ).body.data.key;
    await w.request("POST", `/api/v1/campaigns/${preview}/status`, {
      token: admin,
      body: { action: "start" },
    });
    await setState({ state: "ready", campaign_id: preview });
    await w.request("POST", "/api/v1/nodes/heartbeat", { token: node, body: { active_calls: 0 } });
    // The claim offers the lead; the agent dials it, and the call is reserved for them.
    await w.request("POST", "/api/v1/nodes/jobs/claim", { token: node, body: { max: 5 } });
    const dialled = await w.request("POST", "/api/v1/agents/me/preview/dial", {
      token: agentToken,
    });
    const callId = dialled.body.data.call.id as string;
    const reservedFor = async () =>
      (
        await runStatement<{ agentId: string | null }>(
          w.deps.rawDb,
          `select agent_id as "agentId" from calls where id = $1::uuid`,
          [callId],
        )
      )[0]?.agentId;
    expect(await reservedFor()).toBe(agentId);
    expect((await myAgent()).state).toBe("reserved");

    const board = w.deps.dialer.agents;
    board.hold(agentId);
    board.release(agentId, w.clock.now());
    await board.settled();
    w.restart();
    await restorePresence(w.deps);
    expect(await myAgent()).toMatchObject({ state: "reserved", call_id: callId });
    w.clock.advance(GRACE_MS);
    expect(await expireGraces(w.deps)).toBe(1);
    expect((await myAgent()).state).toBe("offline");
    expect(await reservedFor()).toBeNull();
    const answered = await w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
      token: node,
      body: { type: "answered", at: new Date(w.clock.now()).toISOString() },
    });
    expect(answered.body.data.call).toMatchObject({ agent_id: null, action: "hangup" });
  });
});

describe("adopting other processes' rows", () => {
  const rowOf = (version: number, state: string): PresenceRow => ({
    userId: "u1",
    tenantId: "t1",
    email: "u1@example.test",
    state,
    campaignId: "c1",
    callId: null,
    reason: null,
    pauseAfterCall: false,
    readyAt: null,
    since: version * 1_000,
    version,
  });

  test("a row is taken only when newer than the one held, and its listeners hear it as remote", () => {
    const board = new AgentBoard();
    const heard: [AgentPresence, AgentChange][] = [];
    board.subscribe((agent, change) => heard.push([agent, change]));
    expect(board.adopt(rowOf(2, "ready"))).toBe(true);
    expect(board.adopt(rowOf(1, "paused"))).toBe(false);
    expect(board.adopt(rowOf(2, "paused"))).toBe(false);
    expect(board.get("u1")).toMatchObject({ state: "ready", since: 2_000 });
    expect(board.inCampaign("c1", "ready").map((agent) => agent.userId)).toEqual(["u1"]);
    expect(heard).toEqual([[expect.objectContaining({ state: "ready" }), { remote: true }]]);
    expect(board.adopt(rowOf(3, "offline"))).toBe(true);
    expect(board.get("u1")).toBeUndefined();
    expect(board.inCampaign("c1")).toEqual([]);

    board.restore([rowOf(5, "paused")]);
    expect(board.adopt(rowOf(4, "ready"))).toBe(false);
    expect(board.get("u1")?.state).toBe("paused");
  });

  test("a row that comes while this board's own write is queued waits for it, and the higher version wins", async () => {
    const board = w.deps.dialer.agents;
    board.set({ userId: agentId, tenantId: acmeId, state: "ready", campaignId, callId: null }, 1);
    const newer = { ...(await rowOfAgent("paused")), version: 100 };
    expect(board.adopt(newer)).toBe(false);
    expect(board.get(agentId)?.state).toBe("ready");
    await board.persisted(agentId);
    expect(board.get(agentId)?.state).toBe("paused");
    expect(board.version(agentId)).toBe(100);
  });
});

async function rowOfAgent(state: string): Promise<PresenceRow> {
  return {
    userId: agentId,
    tenantId: acmeId,
    email: "agent@acme.test",
    state,
    campaignId,
    callId: null,
    reason: null,
    pauseAfterCall: false,
    readyAt: null,
    since: w.clock.now(),
    version: 1,
  };
}
