import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createWorkspace } from "../helpers/app.ts";
import { listenOnLoopback, openSocket } from "../helpers/sockets.ts";

/**
 * Random ids, strings and sizes in every id-taking field of the socket protocol and the agent
 * routes: never a 5xx or an internal error, never an effect on another tenant, and the state
 * kept per client (the agent board, a socket's followed campaigns) stays bounded.
 */
type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let listening: ReturnType<typeof listenOnLoopback>;
let agentToken: string;
let supervisorToken: string;
let ownCampaign: string;
let foreignCampaign: string;
let foreignAdmin: string;

beforeAll(async () => {
  w = await createWorkspace();
  const admin = await w.login("admin@acme.test");
  await w.user(w.acme.id, "agent@acme.test", "agent");
  agentToken = await w.login("agent@acme.test");
  supervisorToken = admin;
  ownCampaign = (
    await w.request("POST", "/api/v1/campaigns", { token: admin, body: { name: "Own" } })
  ).body.data.campaign.id;
  await w.request("POST", `/api/v1/campaigns/${ownCampaign}/status`, {
    token: admin,
    body: { action: "start" },
  });
  const other = await w.tenant("other.test");
  await w.user(other.id, "admin@other.test", "admin");
  foreignAdmin = await w.login("admin@other.test");
  foreignCampaign = (
    await w.request("POST", "/api/v1/campaigns", { token: foreignAdmin, body: { name: "Theirs" } })
  ).body.data.campaign.id;
  listening = listenOnLoopback(w);
});

afterAll(() => listening?.stop());

/** Ids a client might send: real ones of both tenants, random UUIDs and any text at all. */
const anyId = () =>
  fc.oneof(
    fc.constantFrom(ownCampaign, foreignCampaign, ownCampaign.toUpperCase()),
    fc.uuid(),
    fc.string({ maxLength: 64 }),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.constantFrom("\u0000", "\ud800", `${"9".repeat(5000)}`, ""),
  );

const anyAgentMessage = () =>
  fc.oneof(
    fc.record({ type: fc.constant("ready"), campaign_id: anyId() }),
    fc.record({ type: fc.constant("pause"), campaign_id: anyId() }),
    fc.record({
      type: fc.constant("disposition"),
      call_id: anyId(),
      disposition: fc.constantFrom("completed", "callback", "do_not_call", "no_contact", "x"),
      callback_at: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
    }),
    fc.record({ type: fc.string({ maxLength: 12 }), campaign_id: anyId() }),
  );

const foreignReadsTheSame = async () =>
  (await w.request("GET", `/api/v1/campaigns/${foreignCampaign}`, { token: foreignAdmin })).body
    .data.campaign;

describe("hostile input on the agent routes and sockets", () => {
  test("the agent routes answer every id with a 4xx or success, never a 5xx", async () => {
    const before = await foreignReadsTheSame();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("ready", "paused", "offline"),
        anyId(),
        anyId(),
        async (state, campaignId, callId) => {
          const stateResponse = await w.request("POST", "/api/v1/agents/me/state", {
            token: agentToken,
            body: { state, campaign_id: campaignId },
          });
          expect(stateResponse.status).toBeLessThan(500);
          if (stateResponse.status === 200) {
            expect(stateResponse.body.data.agent.campaign_id).toBe(ownCampaign);
          }
          const disposition = await w.request(
            "POST",
            `/api/v1/calls/${encodeURIComponent(callId.toWellFormed()) || "x"}/disposition`,
            { token: agentToken, body: { disposition: "completed" } },
          );
          expect(disposition.status).toBeLessThan(500);
        },
      ),
      { numRuns: 150, seed: 22 },
    );
    expect(w.deps.dialer.agents.inCampaign(foreignCampaign)).toEqual([]);
    expect(await foreignReadsTheSame()).toEqual(before);
  });

  test("the agent socket answers every message and holds no state for another tenant", async () => {
    const before = await foreignReadsTheSame();
    const agent = await openSocket(listening.wsUrl("/ws/agent", agentToken));
    await agent.next("agent.state");
    await fc.assert(
      fc.asyncProperty(anyAgentMessage(), async (message) => {
        agent.messages.length = 0;
        agent.send(JSON.stringify(message));
        const deadline = Date.now() + 5000;
        while (!agent.messages.some((m) => m.type === "ack" || m.type === "error")) {
          if (Date.now() > deadline) throw new Error(`no answer to ${JSON.stringify(message)}`);
          await Bun.sleep(2);
        }
        const answer = agent.messages.find((m) => m.type === "ack" || m.type === "error");
        expect(answer?.code).not.toBe("internal_error");
      }),
      { numRuns: 200, seed: 7 },
    );
    expect(agent.socket.readyState).toBe(WebSocket.OPEN);
    expect(w.deps.dialer.agents.inCampaign(foreignCampaign)).toEqual([]);
    expect(w.deps.dialer.agents.inTenant(w.acme.id).length).toBeLessThanOrEqual(1);
    agent.socket.close();
    expect(await foreignReadsTheSame()).toEqual(before);
  });

  test("a supervisor's subscribes of any size follow at most 500 campaigns of its own tenant", async () => {
    const supervisor = await openSocket(listening.wsUrl("/ws/supervisor", supervisorToken));
    await supervisor.next("snapshot");
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(anyId(), fc.uuid()), { maxLength: 700 }), async (ids) => {
        supervisor.messages.length = 0;
        supervisor.send(JSON.stringify({ type: "subscribe", campaign_ids: ids }));
        const deadline = Date.now() + 5000;
        while (!supervisor.messages.some((m) => m.type === "subscribed" || m.type === "error")) {
          if (Date.now() > deadline) throw new Error("no answer to a subscribe");
          await Bun.sleep(2);
        }
        await Bun.sleep(5);
        const subscribed = supervisor.messages.find((m) => m.type === "subscribed");
        for (const id of subscribed?.campaign_ids ?? []) expect(id).toBe(ownCampaign);
        expect(supervisor.messages.some((m) => m.code === "internal_error")).toBe(false);
      }),
      { numRuns: 40, seed: 3 },
    );
    expect(supervisor.socket.readyState).toBe(WebSocket.OPEN);
    supervisor.socket.close();
  });
});
