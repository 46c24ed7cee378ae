import { beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let adminToken: string;
let firstToken: string;
let secondToken: string;
let secondId: string;
let nodeKey: string;
let otherNodeKey: string;
let campaignId: string;

/** Noon in New York: inside the calling window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");
const SECOND_PHONE = "sip:1002@127.0.0.1:5092";

beforeEach(async () => {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  adminToken = await w.login("admin@acme.test");
  await w.user(w.acme.id, "first@acme.test", "agent", { phoneUri: "sip:1001@127.0.0.1:5091" });
  secondId = (await w.user(w.acme.id, "second@acme.test", "agent", { phoneUri: SECOND_PHONE })).id;
  firstToken = await w.login("first@acme.test");
  secondToken = await w.login("second@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", {
      token: adminToken,
      body: { name: "Dial", regulatory_profile: "none", max_attempts: 5 },
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
  const register = async (name: string) =>
    (
      await w.request("POST", "/api/v1/edge-nodes", {
        token: adminToken,
        body: { name, max_concurrent_calls: 10 },
      })
    ).body.data.key as string;
  nodeKey = await register("edge");
  otherNodeKey = await register("other edge");
  await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
    token: adminToken,
    body: { action: "start" },
  });
});

const ready = (token: string) =>
  w.request("POST", "/api/v1/agents/me/state", {
    token,
    body: { state: "ready", campaign_id: campaignId },
  });
const stateOf = async (token: string) =>
  (await w.request("GET", "/api/v1/agents/me", { token })).body.data.agent;
const event = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
  w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
    token: nodeKey,
    body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
  });
const poll = async (key: string, ack: string[] = [], waitMs = 0) => {
  const reply = await w.request("POST", "/api/v1/nodes/commands", {
    token: key,
    body: { ack, wait_ms: waitMs },
  });
  expect(reply.status).toBe(200);
  return reply.body.data.commands as {
    id: string;
    type: string;
    call_id: string;
    to?: { agent_id: string | null; agent_uri: string | null; phone: string | null };
  }[];
};
const control = (token: string, callId: string, what: string, body?: Record<string, unknown>) =>
  w.request("POST", `/api/v1/calls/${callId}/${what}`, { token, ...(body ? { body } : {}) });

/** The first agent alone is ready and talks to the first lead. */
async function firstOnCall(): Promise<string> {
  await ready(firstToken);
  const claimed = await w.request("POST", "/api/v1/nodes/jobs/claim", {
    token: nodeKey,
    body: { max: 1 },
  });
  const callId = claimed.body.data.jobs[0].call_id as string;
  w.clock.advance(3_000);
  const answered = await event(callId, "answered");
  expect(answered.body.data.call.action).toBe("bridge");
  w.clock.advance(30_000);
  return callId;
}

describe("commands to the node", () => {
  test("a hang-up reaches the call's node, again and again until acknowledged, and no other node", async () => {
    const callId = await firstOnCall();
    expect(await poll(nodeKey)).toEqual([]);
    const asked = await control(firstToken, callId, "hangup");
    expect(asked.status).toBe(200);
    expect(asked.body.data.call.id).toBe(callId);
    const [command] = await poll(nodeKey);
    expect(command).toMatchObject({ type: "hangup", call_id: callId });
    // Not acknowledged (a reply lost, a node restarted): handed out again, with the same id.
    expect((await poll(nodeKey)).map((c) => c.id)).toEqual([command?.id as string]);
    expect(await poll(otherNodeKey, [command?.id as string])).toEqual([]);
    expect(await poll(nodeKey, [command?.id as string])).toEqual([]);
    // The node hangs up; the end is reported as for any call, and the agent wraps it up.
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(await stateOf(firstToken)).toMatchObject({ state: "wrap_up", call_id: callId });
    expect((await control(firstToken, callId, "hangup")).status).toBe(409);
    // Another agent is refused as before, not told that the call is over.
    expect((await control(secondToken, callId, "hangup")).status).toBe(403);
  });

  test("a hang-up asked again sends no second command, and no transfer follows it", async () => {
    const callId = await firstOnCall();
    expect((await control(firstToken, callId, "hangup")).status).toBe(200);
    const again = await control(adminToken, callId, "hangup");
    expect(again.status).toBe(200);
    expect(again.body.data.call.id).toBe(callId);
    expect((await poll(nodeKey)).map((c) => c.type)).toEqual(["hangup"]);
    await ready(secondToken);
    const transfer = await control(firstToken, callId, "transfer", { agent_id: secondId });
    expect(transfer.status).toBe(409);
    expect(transfer.body.message).toContain("being hung up");
    expect(await stateOf(secondToken)).toMatchObject({ state: "ready" });
  });

  test("a command whose call ends before it is carried out is withdrawn", async () => {
    const callId = await firstOnCall();
    expect((await control(firstToken, callId, "hangup")).status).toBe(200);
    expect((await poll(nodeKey)).map((c) => c.type)).toEqual(["hangup"]);
    // The call ends another way before the node acknowledges: the command is moot.
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(await poll(nodeKey)).toEqual([]);
    // So is a manual dial whose call failed before the node took it: it places nothing.
    await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: firstToken,
      body: { disposition: "completed" },
    });
    const beat = (ids?: string[]) =>
      w.request("POST", "/api/v1/nodes/heartbeat", {
        token: nodeKey,
        body: { active_calls: 0, ...(ids ? { active_call_ids: ids } : {}) },
      });
    await beat();
    const dialled = await w.request("POST", "/api/v1/agents/me/dial", {
      token: firstToken,
      body: { phone: "+14155559999" },
    });
    expect(dialled.status).toBe(200);
    w.clock.advance(11_000);
    // The node never took it: its heartbeat does not list the call, which fails NODE_LOST.
    await beat([]);
    expect(await poll(nodeKey)).toEqual([]);
  });

  test("a poll that waited through its node's revocation is handed no command", async () => {
    const callId = await firstOnCall();
    const waiting = poll(nodeKey, [], 1_500);
    await Bun.sleep(20);
    const nodes = await w.request("GET", "/api/v1/edge-nodes", { token: adminToken });
    const edge = nodes.body.data.items.find((node: { name: string }) => node.name === "edge");
    await w.request("DELETE", `/api/v1/edge-nodes/${edge.id}`, { token: adminToken });
    expect((await control(firstToken, callId, "hangup")).status).toBe(200);
    expect(await waiting).toEqual([]);
  });

  test("a poll waiting for commands is answered as soon as one is made", async () => {
    const callId = await firstOnCall();
    const started = performance.now();
    const waiting = poll(nodeKey, [], 10_000);
    await Bun.sleep(20);
    await control(firstToken, callId, "hangup");
    const commands = await waiting;
    expect(commands.map((c) => c.type)).toEqual(["hangup"]);
    // Well before the poll's own limit: the command woke it.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test("only the call's agent or a supervisor controls it; ids of nothing are 404", async () => {
    const callId = await firstOnCall();
    expect((await control(secondToken, callId, "hangup")).status).toBe(403);
    expect((await control(adminToken, callId, "hangup")).status).toBe(200);
    expect((await control(firstToken, crypto.randomUUID(), "hangup")).status).toBe(404);
    expect((await control(firstToken, "not-a-call", "hangup")).status).toBe(404);
    const outsider = await w.tenant("other.test");
    await w.user(outsider.id, "stranger@other.test", "supervisor");
    const stranger = await w.login("stranger@other.test", undefined, "other.test");
    expect((await control(stranger, callId, "hangup")).status).toBe(404);
    // A platform admin acts in the workspace it names, and in its own otherwise.
    const root = await w.login("root@platform.test");
    expect((await control(root, callId, "hangup")).status).toBe(404);
    const named = await w.request("POST", `/api/v1/calls/${callId}/hangup?tenant_id=${w.acme.id}`, {
      token: root,
    });
    expect(named.status).toBe(200);
    const unknown = await w.request("POST", `/api/v1/calls/${callId}/hangup?force=1`, {
      token: adminToken,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.field_errors).toEqual([{ field: "force", message: "unknown field" }]);
  });
});

describe("a node's times", () => {
  test("are never later than the service's clock, nor earlier than the stage the call reached", async () => {
    const callId = await firstOnCall();
    const answeredAt = new Date(w.clock.now() - 30_000).toISOString();
    const later = new Date(w.clock.now() + 86_400_000).toISOString();
    expect((await event(callId, "ended", { at: later })).status).toBe(200);
    const cdrs = await w.request("GET", "/api/v1/cdrs", { token: adminToken });
    const cdr = cdrs.body.data.items.find((row: { call_id: string }) => row.call_id === callId);
    expect(cdr).toMatchObject({
      answered_at: answeredAt,
      ended_at: new Date(w.clock.now()).toISOString(),
      talk_seconds: 30,
    });
  });
});

describe("a blind transfer", () => {
  test("to another ready agent: the node calls their phone, then the call is theirs", async () => {
    const callId = await firstOnCall();
    // Not ready yet: refused, and nothing is sent to the node.
    const early = await control(firstToken, callId, "transfer", { agent_id: secondId });
    expect(early.status).toBe(422);
    expect(early.body.field_errors[0].field).toBe("agent_id");
    expect(await poll(nodeKey)).toEqual([]);
    await ready(secondToken);
    const asked = await control(firstToken, callId, "transfer", { agent_id: secondId });
    expect(asked.status).toBe(200);
    expect(asked.body.data.call.transfer).toMatchObject({
      status: "pending",
      to_agent_id: secondId,
    });
    // The second agent is held for it, so no other call takes them meanwhile.
    expect(await stateOf(secondToken)).toMatchObject({ state: "reserved", call_id: callId });
    expect((await control(firstToken, callId, "transfer", { agent_id: secondId })).status).toBe(
      409,
    );
    const [command] = await poll(nodeKey);
    expect(command).toMatchObject({
      type: "transfer",
      call_id: callId,
      to: { agent_id: secondId, agent_uri: SECOND_PHONE, phone: null },
    });
    w.clock.advance(4_000);
    const reported = await event(callId, "transferred");
    expect(reported.body.data.call).toMatchObject({ agent_id: secondId });
    expect(await stateOf(secondToken)).toMatchObject({ state: "on_call", call_id: callId });
    expect(await stateOf(firstToken)).toMatchObject({ state: "ready", call_id: null });
    // The second agent ends it and dispositions it; the CDR records the transfer.
    w.clock.advance(20_000);
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(await stateOf(secondToken)).toMatchObject({ state: "wrap_up", call_id: callId });
    const disposed = await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: secondToken,
      body: { disposition: "completed" },
    });
    expect(disposed.status).toBe(200);
    const cdrs = await w.request("GET", "/api/v1/cdrs", { token: adminToken });
    const cdr = cdrs.body.data.items.find((row: { call_id: string }) => row.call_id === callId);
    expect(cdr).toMatchObject({
      agent_id: secondId,
      disposition: "completed",
      transfer: { status: "done", to_agent_id: secondId, to_phone: null },
    });
  });

  test("a transfer that fails leaves the lead with its agent and frees the one asked for", async () => {
    const callId = await firstOnCall();
    await ready(secondToken);
    await control(firstToken, callId, "transfer", { agent_id: secondId });
    const failed = await event(callId, "transfer_failed", {
      reason: "the agent's phone answered 486",
    });
    expect(failed.body.data.call.transfer).toMatchObject({
      status: "failed",
      reason: "the agent's phone answered 486",
    });
    expect(await stateOf(firstToken)).toMatchObject({ state: "on_call", call_id: callId });
    expect(await stateOf(secondToken)).toMatchObject({ state: "ready", call_id: null });
  });

  test("a transfer the call's end cuts short is recorded as failed, and its agent freed", async () => {
    const callId = await firstOnCall();
    await ready(secondToken);
    await control(firstToken, callId, "transfer", { agent_id: secondId });
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(await stateOf(secondToken)).toMatchObject({ state: "ready", call_id: null });
    const cdrs = await w.request("GET", "/api/v1/cdrs", { token: adminToken });
    const cdr = cdrs.body.data.items.find((row: { call_id: string }) => row.call_id === callId);
    expect(cdr.transfer).toMatchObject({
      status: "failed",
      to_agent_id: secondId,
      reason: "the call ended before the transfer was made",
    });
  });

  test("to a number only when the workspace allows it; the agent then wraps the call up", async () => {
    const callId = await firstOnCall();
    const refused = await control(firstToken, callId, "transfer", { phone: "+14155550199" });
    expect(refused.status).toBe(422);
    expect(refused.body.field_errors[0].field).toBe("phone");
    const malformed = await control(firstToken, callId, "transfer", { phone: "555-0199" });
    expect(malformed.status).toBe(400);
    const both = await control(firstToken, callId, "transfer", {
      phone: "+14155550199",
      agent_id: secondId,
    });
    expect(both.status).toBe(422);
    const patched = await w.request("PATCH", `/api/v1/tenants/${w.acme.id}`, {
      token: adminToken,
      body: { transfer_numbers: ["+14155550199"] },
    });
    expect(patched.body.data.tenant.transfer_numbers).toEqual(["+14155550199"]);
    expect((await control(firstToken, callId, "transfer", { phone: "+14155550199" })).status).toBe(
      200,
    );
    const [command] = await poll(nodeKey);
    expect(command?.to).toEqual({ agent_id: null, agent_uri: null, phone: "+14155550199" });
    await event(callId, "transferred");
    expect(await stateOf(firstToken)).toMatchObject({ state: "wrap_up", call_id: callId });
    // The conversation is the number's now: neither sent on again nor hung up from here.
    for (const [what, body] of [["transfer", { phone: "+14155550199" }], ["hangup"]] as const) {
      const refused = await control(firstToken, callId, what, body);
      expect(refused.status).toBe(409);
      expect(refused.body.message).toContain("goes on without its agent");
    }
    expect(await poll(nodeKey, [command?.id as string])).toEqual([]);
    // The conversation goes on without the agent, who may disposition it meanwhile.
    const disposed = await w.request("POST", `/api/v1/calls/${callId}/disposition`, {
      token: firstToken,
      body: { disposition: "completed" },
    });
    expect(disposed.status).toBe(200);
    expect(await stateOf(firstToken)).toMatchObject({ state: "ready" });
    await event(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    expect(await stateOf(firstToken)).toMatchObject({ state: "ready", call_id: null });
  });
});
