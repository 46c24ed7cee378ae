import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createWorkspace } from "../helpers/app.ts";
import { importFile } from "../helpers/leads.ts";
import { listenOnLoopback, openSocket } from "../helpers/sockets.ts";

/** 2026-03-02T17:00Z is noon in New York: inside the default 08:00–21:00 window. */
const NOON_NEW_YORK = Date.parse("2026-03-02T17:00:00Z");
const PHONE = "+12125550123";
// Extra columns are stored verbatim: a second number and an account with leading zeros
// must reach the agent exactly as imported, never as numbers.
const CSV = `phone,timezone,alt_phone,account\n${PHONE},America/New_York,+15551234567,00123\n`;

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let w: Workspace;
let listening: ReturnType<typeof listenOnLoopback>;
let adminToken: string;
let agentToken: string;
let campaignId: string;
let listPath: string;
let nodeKey: string;

beforeEach(async () => {
  w = await createWorkspace();
  w.clock.advance(NOON_NEW_YORK - w.clock.now());
  adminToken = await w.login("admin@acme.test");
  await w.user(w.acme.id, "agent@acme.test", "agent");
  agentToken = await w.login("agent@acme.test");
  campaignId = (
    await w.request("POST", "/api/v1/campaigns", { token: adminToken, body: { name: "Phones" } })
  ).body.data.campaign.id;
  const list = await w.request("POST", `/api/v1/campaigns/${campaignId}/lead-lists`, {
    token: adminToken,
    body: { name: "L", caller_id: "+14155550100" },
  });
  listPath = `/api/v1/campaigns/${campaignId}/lead-lists/${list.body.data.lead_list.id}`;
  expect(
    (await importFile(w, `${listPath}/import`, adminToken, CSV)).body.data.import,
  ).toMatchObject({ imported: 1, rejected: 0 });
  nodeKey = (
    await w.request("POST", "/api/v1/edge-nodes", {
      token: adminToken,
      body: { name: "edge", max_concurrent_calls: 10 },
    })
  ).body.data.key;
  listening = listenOnLoopback(w);
});

afterEach(() => listening.stop());

const nodeEvent = (callId: string, type: string, extra: Record<string, unknown> = {}) =>
  w.request("POST", `/api/v1/nodes/calls/${callId}/events`, {
    token: nodeKey,
    body: { type, at: new Date(w.clock.now()).toISOString(), ...extra },
  });
const agentState = async () =>
  (await w.request("GET", "/api/v1/agents/me", { token: agentToken })).body.data.agent.state;

describe("phone numbers over the agent socket", () => {
  test("call.connected carries the lead's numbers as imported; a disposition's strings stay strings", async () => {
    const agent = await openSocket(listening.wsUrl("/ws/agent", agentToken));
    await agent.next("agent.state");
    agent.send(JSON.stringify({ type: "ready", campaign_id: campaignId }));
    expect(await agent.next("ack")).toMatchObject({ for: "ready" });
    await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
    const claimed = await w.request("POST", "/api/v1/nodes/jobs/claim", {
      token: nodeKey,
      body: { max: 1 },
    });
    const callId = claimed.body.data.jobs[0].call_id as string;
    await nodeEvent(callId, "answered");

    const connected = await agent.next("call.connected");
    expect(connected.lead).toMatchObject({
      phone: PHONE,
      fields: { alt_phone: "+15551234567", account: "00123" },
    });
    expect(connected.call.phone).toBe(PHONE);
    // The wire text itself holds JSON strings, so any JSON client decodes them as strings.
    const frame = agent.frames.find((text) => text.includes('"call.connected"'));
    expect(frame).toContain(`"phone":"${PHONE}"`);
    expect(frame).toContain('"alt_phone":"+15551234567"');

    w.clock.advance(30_000);
    await nodeEvent(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    await agent.next("call.ended");
    const callbackAt = "2026-03-03T15:00:00.000Z";
    agent.send(
      JSON.stringify({
        type: "disposition",
        call_id: callId,
        disposition: "callback",
        callback_at: callbackAt,
      }),
    );
    expect(await agent.next("ack")).toMatchObject({
      for: "disposition",
      call: { id: callId, disposition: "callback", phone: PHONE },
    });
    const lead = (await w.request("GET", `${listPath}/leads`, { token: adminToken })).body.data
      .items[0];
    expect(lead).toMatchObject({ phone: PHONE, state: "Callback", next_attempt_at: callbackAt });
    agent.socket.close();
  });

  test("a socket opened mid-call and in wrap-up starts with the agent's call and its lead", async () => {
    const first = await openSocket(listening.wsUrl("/ws/agent", agentToken));
    expect(await first.next("agent.state")).toMatchObject({
      agent: { state: "offline" },
      call: null,
      lead: null,
    });
    first.send(JSON.stringify({ type: "ready", campaign_id: campaignId }));
    await first.next("ack");
    await w.request("POST", `/api/v1/campaigns/${campaignId}/status`, {
      token: adminToken,
      body: { action: "start" },
    });
    const claimed = await w.request("POST", "/api/v1/nodes/jobs/claim", {
      token: nodeKey,
      body: { max: 1 },
    });
    const callId = claimed.body.data.jobs[0].call_id as string;
    await nodeEvent(callId, "answered");
    const lead = { phone: PHONE, fields: { alt_phone: "+15551234567", account: "00123" } };
    // A second tab, or the same one reloaded.
    const onCall = await openSocket(listening.wsUrl("/ws/agent", agentToken));
    expect(await onCall.next("agent.state")).toMatchObject({
      agent: { state: "on_call", call_id: callId },
      call: { id: callId, status: "answered", phone: PHONE },
      lead,
    });
    w.clock.advance(30_000);
    await nodeEvent(callId, "ended", { hangup_cause: "NORMAL_CLEARING" });
    const wrapping = await openSocket(listening.wsUrl("/ws/agent", agentToken));
    expect(await wrapping.next("agent.state")).toMatchObject({
      agent: { state: "wrap_up", call_id: callId },
      call: { id: callId, status: "ended", outcome: "answered" },
      lead,
    });
    for (const socket of [first, onCall, wrapping]) socket.socket.close();
  });

  test("fields that look like numbers stay strings: the service answers about them, not about their type", async () => {
    const agent = await openSocket(listening.wsUrl("/ws/agent", agentToken));
    await agent.next("agent.state");
    agent.send(JSON.stringify({ type: "ready", campaign_id: "15551234567" }));
    expect(await agent.next("error")).toMatchObject({ code: "not_found" });
    agent.send(
      JSON.stringify({ type: "disposition", call_id: "15551234567", disposition: "completed" }),
    );
    expect(await agent.next("error")).toMatchObject({ code: "not_found" });
    agent.socket.close();
  });
});

describe("frames that are not JSON objects", () => {
  // Elysia turns a text frame that looks like a number or a JSON string into that value
  // before the handler sees it; none of these may be read as a command.
  const notObjects = [
    '"+15551234567"',
    "+15551234567",
    "15551234567",
    '"15551234567"',
    "true",
    "null",
    "[]",
    // JSON strings holding a command of either socket.
    JSON.stringify(JSON.stringify({ type: "pause" })),
    JSON.stringify(JSON.stringify({ type: "subscribe" })),
  ];

  for (const path of ["/ws/agent", "/ws/supervisor"]) {
    test(`${path} answers each with an error and stays open`, async () => {
      const token = path === "/ws/agent" ? agentToken : adminToken;
      const client = await openSocket(listening.wsUrl(path, token));
      await client.next(path === "/ws/agent" ? "agent.state" : "snapshot");
      if (path === "/ws/agent") {
        client.send(JSON.stringify({ type: "ready", campaign_id: campaignId }));
        await client.next("ack");
      }
      for (const frame of notObjects) {
        client.send(frame);
        expect({ frame, reply: await client.next("error") }).toEqual({
          frame,
          reply: {
            type: "error",
            code: "invalid_request",
            message: "messages are JSON objects, sent as text",
          },
        });
      }
      // A binary frame is not run, whatever JSON it holds.
      const command = path === "/ws/agent" ? { type: "pause" } : { type: "subscribe" };
      client.send(new TextEncoder().encode(JSON.stringify(command)));
      expect(await client.next("error")).toMatchObject({
        message: "messages are JSON objects, sent as text",
      });
      expect(client.socket.readyState).toBe(WebSocket.OPEN);
      if (path === "/ws/agent") {
        // The JSON string holding a pause command did not pause the agent.
        expect(await agentState()).toBe("ready");
        client.send(JSON.stringify({ type: "pause" }));
        expect(await client.next("ack")).toMatchObject({ for: "pause" });
      } else {
        client.send(JSON.stringify({ type: "subscribe", campaign_ids: [campaignId] }));
        expect(await client.next("subscribed")).toMatchObject({ campaign_ids: [campaignId] });
      }
      client.socket.close();
    });
  }
});

describe("messages that are not as their type says", () => {
  test("are answered with the API's field errors, in sentences", async () => {
    const agent = await openSocket(listening.wsUrl("/ws/agent", agentToken));
    await agent.next("agent.state");
    const cases = [
      [{ type: "bogus" }, [{ field: "type", message: "must be one of ready, pause, disposition" }]],
      [{ type: "ready" }, [{ field: "campaign_id", message: "is required" }]],
      [
        { type: "pause", reason: "x".repeat(65) },
        [{ field: "reason", message: "must be at most 64 characters" }],
      ],
      [{ type: "pause", extra: 1 }, [{ field: "extra", message: "unknown field" }]],
    ] as const;
    for (const [message, fieldErrors] of cases) {
      agent.send(JSON.stringify(message));
      expect({ message, reply: await agent.next("error") }).toEqual({
        message,
        reply: {
          type: "error",
          code: "invalid_request",
          message: "invalid message",
          field_errors: fieldErrors,
        },
      });
    }
    // Refused by the service rather than the schema: as over HTTP, field by field.
    agent.send(JSON.stringify({ type: "pause", reason: "nonexistent" }));
    expect(await agent.next("error")).toMatchObject({
      code: "validation_failed",
      field_errors: [{ field: "reason", message: expect.stringContaining("not-ready reasons") }],
    });
    agent.socket.close();
  });

  test("a subscribe leaves out an id that is no campaign, malformed ones too", async () => {
    const supervisor = await openSocket(listening.wsUrl("/ws/supervisor", adminToken));
    await supervisor.next("snapshot");
    const other = crypto.randomUUID();
    supervisor.send(
      JSON.stringify({ type: "subscribe", campaign_ids: [other, campaignId, "nope"] }),
    );
    expect(await supervisor.next("error")).toMatchObject({
      code: "not_found",
      campaign_ids: [other, "nope"],
    });
    expect(await supervisor.next("subscribed")).toMatchObject({ campaign_ids: [campaignId] });
    supervisor.socket.close();
  });
});
