import { afterEach, describe, expect, test } from "bun:test";
import { dialerOnLoopback, startSipNode, until } from "../helpers/edge.ts";
import { sipPort } from "../helpers/ports.ts";
import { SipPhone } from "../helpers/sip-phone.ts";

/**
 * The node between the real service (in-process, on loopback) and scripted SIP phones: the
 * trunk's leads on one side, the agent's phone on the other.
 */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function scene(
  phones: string[],
  options: {
    dialRatio?: number;
    credentials?: { user: string; password: string };
    tcp?: boolean;
    dialMode?: "preview" | "progressive";
  } = {},
) {
  const trunk = await SipPhone.start(sipPort(), { tcp: options.tcp ?? false });
  const agentPhone = await SipPhone.start(sipPort());
  cleanups.push(
    () => trunk.stop(),
    () => agentPhone.stop(),
  );
  const service = await dialerOnLoopback({
    phones,
    agentUri: `sip:agent@127.0.0.1:${agentPhone.port}`,
    dialRatio: options.dialRatio ?? 1,
    ...(options.dialMode ? { dialMode: options.dialMode } : {}),
  });
  cleanups.push(() => service.server.stop(true));
  const lines: string[] = [];
  const edge = await startSipNode({
    baseUrl: service.baseUrl,
    nodeKey: service.nodeKey,
    port: sipPort(),
    trunkPort: trunk.port,
    trunkTransport: options.tcp ? "tcp" : "udp",
    maxRingSeconds: 2,
    credentials: options.credentials ?? null,
    log: (line) => lines.push(line),
  });
  cleanups.push(() => edge.stop(1_000));
  return { trunk, agentPhone, service, edge, lines };
}

describe("edge node over SIP", () => {
  test("an answered lead is bridged to the agent's phone, media flows between the two, the lead's BYE ends both", async () => {
    const { trunk, agentPhone, service, edge } = await scene(["+14155552671"]);
    trunk.defaultBehaviour = { kind: "answer", afterMs: 300, hangUpAfterMs: 1_500 };
    await service.start();
    const lead = await until(() => trunk.calls[0], "the INVITE to the lead");
    expect(lead.user).toBe("+14155552671");
    expect(lead.from).toBe("+14155550100");
    const agent = await until(() => agentPhone.calls[0], "the INVITE to the agent's phone");
    // The agent's phone shows the lead's number.
    expect(agent.from).toBe("+14155552671");
    // The lead was re-INVITEd to the agent's media, and the agent's ACK carried the lead's.
    await until(() => lead.invites === 2 || undefined, "the lead's re-INVITE");
    // The ACK to the agent and the re-INVITE to the lead go out together, in either order.
    await until(() => agent.target, "the agent's ACK");
    expect(lead.target?.port).toBe(agent.rtpPort);
    expect(agent.target?.port).toBe(lead.rtpPort);
    await until(() => lead.ended !== null || undefined, "the lead's hang-up", 5_000);
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({
      outcome: "answered",
      hangup_cause: "NORMAL_CLEARING",
      agent_id: service.agentId,
    });
    expect(cdr.talk_seconds).toBeGreaterThanOrEqual(1);
    expect(cdr.bridge_ms).toBeGreaterThan(0);
    expect(cdr.bridge_ms).toBeLessThan(2_000);
    // RTP went from each phone straight to the other, never through the node.
    expect(lead.received.get(`127.0.0.1:${agent.rtpPort}`) ?? 0).toBeGreaterThan(20);
    expect(agent.received.get(`127.0.0.1:${lead.rtpPort}`) ?? 0).toBeGreaterThan(20);
    await until(() => agent.ended === "bye-received" || undefined, "the BYE to the agent");
    // The node lets go of the call once the service acknowledged its end.
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "the node to let go");
    expect(await service.inFlight()).toBe(0);
  }, 60_000);

  test("busy, no answer and a rejection with a Q.850 reason: the INVITE's final answer is the outcome", async () => {
    const phones = ["+14155552671", "+14155552672", "+14155552673", "+14155552674"];
    const { trunk, agentPhone, service, edge } = await scene(phones, { dialRatio: 5 });
    trunk.behaviours.set("+14155552671", { kind: "busy", afterMs: 200 });
    trunk.behaviours.set("+14155552672", { kind: "ring" });
    trunk.behaviours.set("+14155552673", { kind: "reject", status: 404 });
    trunk.behaviours.set("+14155552674", {
      kind: "reject",
      status: 603,
      reason: 'Q.850;cause=17;text="User busy"',
    });
    await service.start();
    const rows = await until(async () => {
      const all = await service.cdrs();
      return all.length === 4 ? all : undefined;
    }, "four CDRs");
    const byPhone = Object.fromEntries(rows.map((r) => [r.phone, r]));
    expect(byPhone["+14155552671"]).toMatchObject({ outcome: "busy", hangup_cause: "USER_BUSY" });
    expect(byPhone["+14155552672"]).toMatchObject({
      outcome: "no_answer",
      hangup_cause: "NO_ANSWER",
    });
    expect(byPhone["+14155552673"]).toMatchObject({
      outcome: "failed",
      hangup_cause: "UNALLOCATED_NUMBER",
    });
    expect(byPhone["+14155552674"]).toMatchObject({ outcome: "busy", hangup_cause: "USER_BUSY" });
    // The unanswered call was cancelled at the ring limit (2 s here), not left ringing.
    expect(trunk.calls.find((c) => c.user === "+14155552672")?.ended).toBe("cancelled");
    expect(agentPhone.calls).toHaveLength(0);
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "no call left on the node");
    expect(await service.inFlight()).toBe(0);
  }, 60_000);

  test("a 503 from the trunk is its verdict, not a network fault; a Q.850 Reason decides the cause", async () => {
    const phones = ["+14155552671", "+14155552672"];
    const { trunk, service, edge } = await scene(phones, { dialRatio: 5 });
    trunk.behaviours.set("+14155552671", { kind: "reject", status: 503 });
    trunk.behaviours.set("+14155552672", {
      kind: "reject",
      status: 503,
      reason: 'Q.850;cause=34;text="No circuit available"',
    });
    await service.start();
    const rows = await until(async () => {
      const all = await service.cdrs();
      return all.length === 2 ? all : undefined;
    }, "two CDRs");
    const byPhone = Object.fromEntries(rows.map((r) => [r.phone, r]));
    // RFC 3398: 503 → 41; the Reason header's cause, when there is one, wins (RFC 3326).
    expect(byPhone["+14155552671"]).toMatchObject({ hangup_cause: "NORMAL_TEMPORARY_FAILURE" });
    expect(byPhone["+14155552672"]).toMatchObject({ hangup_cause: "NORMAL_CIRCUIT_CONGESTION" });
    // One INVITE each: the trunk's 503 is not retried against the same address.
    expect(trunk.calls.map((c) => c.user).sort()).toEqual(phones);
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "no call left on the node");
  }, 60_000);

  test("an unreachable trunk: nothing answers the INVITE, the call fails at the ring limit", async () => {
    const service = await dialerOnLoopback({ phones: ["+14155552671"], agentUri: null });
    cleanups.push(() => service.server.stop(true));
    // Nothing listens on the trunk's port.
    const edge = await startSipNode({
      baseUrl: service.baseUrl,
      nodeKey: service.nodeKey,
      port: sipPort(),
      trunkPort: sipPort(),
      maxRingSeconds: 1,
    });
    cleanups.push(() => edge.stop(1_000));
    await service.start();
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "failed", hangup_cause: "RECOVERY_ON_TIMER_EXPIRE" });
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "no call left on the node");
  }, 60_000);

  test("a TCP trunk that refuses the connection: the node's own 503 is a network fault", async () => {
    const service = await dialerOnLoopback({ phones: ["+14155552671"], agentUri: null });
    cleanups.push(() => service.server.stop(true));
    // Nothing listens on the trunk's port: the connection is refused at once.
    const edge = await startSipNode({
      baseUrl: service.baseUrl,
      nodeKey: service.nodeKey,
      port: sipPort(),
      trunkPort: sipPort(),
      trunkTransport: "tcp",
      maxRingSeconds: 5,
    });
    cleanups.push(() => edge.stop(1_000));
    await service.start();
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "failed", hangup_cause: "NETWORK_OUT_OF_ORDER" });
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "no call left on the node");
  }, 60_000);

  test("a stop claims no more, lets the live call finish and reports its end before it returns", async () => {
    const { trunk, service, edge } = await scene(["+14155552671", "+14155552672"]);
    trunk.defaultBehaviour = { kind: "answer", afterMs: 100, hangUpAfterMs: 1_500 };
    await service.start();
    await until(() => edge.node.liveCallIds.length === 1 || undefined, "a live call");
    await until(() => trunk.live()[0], "the answer");
    const stopped = performance.now();
    await edge.node.stop(10_000);
    // It waited for the lead's hang-up rather than cutting the call.
    expect(performance.now() - stopped).toBeGreaterThan(500);
    expect(trunk.calls.map((c) => c.ended)).toEqual(["bye-sent"]);
    const rows = await service.cdrs();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ outcome: "answered", hangup_cause: "NORMAL_CLEARING" });
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "no call left on the node");
    expect(await service.inFlight()).toBe(0);
  }, 60_000);

  test("a trunk that asks for digest credentials gets them", async () => {
    const { trunk, service } = await scene(["+14155552671"], {
      credentials: { user: "edge", password: "s3cret" },
    });
    trunk.requireAuth = { realm: "trunk.test", user: "edge", password: "s3cret" };
    trunk.defaultBehaviour = { kind: "answer", afterMs: 100, hangUpAfterMs: 1_000 };
    await service.start();
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "answered", hangup_cause: "NORMAL_CLEARING" });
    expect(trunk.challenges).toBe(1);
  }, 60_000);

  test("wrong digest credentials fail the call", async () => {
    const wrong = await scene(["+14155552671"], {
      credentials: { user: "edge", password: "wrong" },
    });
    wrong.trunk.requireAuth = { realm: "trunk.test", user: "edge", password: "s3cret" };
    await wrong.service.start();
    const [refused] = await until(async () => {
      const rows = await wrong.service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    // Signed once; a second 401 is the trunk's verdict (RFC 3398: 401 → CALL_REJECTED).
    expect(refused).toMatchObject({ outcome: "failed", hangup_cause: "CALL_REJECTED" });
    expect(wrong.trunk.challenges).toBe(2);
  }, 60_000);

  test("the agent hangs up: the lead gets a BYE too, the call ends NORMAL_CLEARING", async () => {
    const { trunk, agentPhone, service, edge } = await scene(["+14155552671"]);
    trunk.defaultBehaviour = { kind: "answer", afterMs: 100 };
    await service.start();
    const agent = await until(() => agentPhone.calls[0], "the INVITE to the agent's phone");
    await until(() => agent.answerAckedAt ?? undefined, "the bridge");
    await Bun.sleep(1_100);
    agent.hangUp();
    await until(() => trunk.calls[0]?.ended === "bye-received" || undefined, "the BYE to the lead");
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "answered", hangup_cause: "NORMAL_CLEARING" });
    expect(cdr.talk_seconds).toBeGreaterThanOrEqual(1);
    await until(() => edge.node.liveCallIds.length === 0 || undefined, "no call left on the node");
  }, 60_000);

  test("no agent free when the lead answers: the lead is hung up at once, the call abandoned", async () => {
    const { trunk, agentPhone, service } = await scene(["+14155552671"]);
    trunk.defaultBehaviour = { kind: "answer", afterMs: 300 };
    await service.start();
    await until(() => trunk.calls[0], "the INVITE to the lead");
    // The agent leaves before the lead answers.
    await service.w.request("POST", "/api/v1/agents/me/state", {
      token: service.agentToken,
      body: { state: "paused" },
    });
    await until(() => trunk.calls[0]?.ended === "bye-received" || undefined, "the BYE to the lead");
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "abandoned", hangup_cause: "NORMAL_CLEARING" });
    expect(agentPhone.calls).toHaveLength(0);
  }, 60_000);

  test("a TCP trunk: the lead is called, bridged and hung up over TCP", async () => {
    const { trunk, agentPhone, service } = await scene(["+14155552671"], { tcp: true });
    trunk.defaultBehaviour = { kind: "answer", afterMs: 100, hangUpAfterMs: 1_200 };
    await service.start();
    const lead = await until(() => trunk.calls[0], "the INVITE to the lead");
    await until(() => lead.invites === 2 || undefined, "the lead's re-INVITE");
    expect(lead.target?.port).toBe(agentPhone.calls[0]?.rtpPort as number);
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "answered", hangup_cause: "NORMAL_CLEARING" });
  }, 60_000);
});

describe("the service's commands, carried out over SIP", () => {
  async function bridged() {
    const s = await scene(["+14155552671"]);
    s.trunk.defaultBehaviour = { kind: "answer", afterMs: 100 };
    await s.service.start();
    const agent = await until(() => s.agentPhone.calls[0], "the INVITE to the agent's phone");
    await until(() => agent.answerAckedAt ?? undefined, "the bridge");
    const lead = s.trunk.calls[0] as NonNullable<(typeof s.trunk.calls)[number]>;
    const callId = (
      await s.service.w.request("GET", "/api/v1/agents/me", { token: s.service.agentToken })
    ).body.data.agent.call_id as string;
    return { ...s, agent, lead, callId };
  }

  test("hang up from the desktop: both legs get a BYE, the call ends NORMAL_CLEARING", async () => {
    const { service, agent, lead, callId } = await bridged();
    const asked = await service.w.request("POST", `/api/v1/calls/${callId}/hangup`, {
      token: service.agentToken,
    });
    expect(asked.status).toBe(200);
    await until(() => lead.ended === "bye-received" || undefined, "the BYE to the lead");
    await until(() => agent.ended === "bye-received" || undefined, "the BYE to the agent");
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "answered", hangup_cause: "NORMAL_CLEARING" });
  }, 60_000);

  test("a transfer to a second agent: the lead is moved to their phone, the first leg let go", async () => {
    const { service, agent, lead, callId } = await bridged();
    const secondPhone = await SipPhone.start(sipPort());
    cleanups.push(() => secondPhone.stop());
    const { w } = service;
    const second = await w.user(w.acme.id, "second@acme.test", "agent", {
      phoneUri: `sip:second@127.0.0.1:${secondPhone.port}`,
    });
    const secondToken = await w.login("second@acme.test");
    await w.request("POST", "/api/v1/agents/me/state", {
      token: secondToken,
      body: { state: "ready", campaign_id: service.campaignId },
    });
    const asked = await w.request("POST", `/api/v1/calls/${callId}/transfer`, {
      token: service.agentToken,
      body: { agent_id: second.id },
    });
    expect(asked.status).toBe(200);
    const taken = await until(() => secondPhone.calls[0], "the INVITE to the second phone");
    expect(taken.from).toBe("+14155552671");
    await until(() => agent.ended === "bye-received" || undefined, "the BYE to the first agent");
    // The lead's media now goes to the second phone.
    await until(() => lead.invites === 3 || undefined, "the lead's second re-INVITE");
    await until(() => taken.target, "the second agent's ACK");
    expect(lead.target?.port).toBe(taken.rtpPort);
    const call = await until(async () => {
      const me = await w.request("GET", "/api/v1/agents/me", { token: secondToken });
      return me.body.data.agent.state === "on_call" ? me.body.data : undefined;
    }, "the second agent on the call");
    expect(call.call.transfer).toMatchObject({ status: "done", to_agent_id: second.id });
    // The second agent's hang-up ends the conversation for the lead.
    taken.hangUp();
    await until(() => lead.ended === "bye-received" || undefined, "the BYE to the lead");
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ agent_id: second.id, transfer: { status: "done" } });
  }, 60_000);
});

describe("a preview's dial, placed by the node on the service's command", () => {
  test("nothing rings until the agent dials; then the lead is called and bridged to the agent", async () => {
    const { trunk, agentPhone, service } = await scene(["+14155552671"], { dialMode: "preview" });
    trunk.defaultBehaviour = { kind: "answer", afterMs: 100, hangUpAfterMs: 1_000 };
    await service.start();
    const { w, agentToken } = service;
    const offered = await until(async () => {
      const me = await w.request("GET", "/api/v1/agents/me", { token: agentToken });
      return me.body.data.preview ?? undefined;
    }, "the offer");
    expect(offered.lead.phone).toBe("+14155552671");
    await Bun.sleep(300);
    expect(trunk.calls).toHaveLength(0);
    const dialled = await w.request("POST", "/api/v1/agents/me/preview/dial", {
      token: agentToken,
    });
    expect(dialled.status).toBe(200);
    const lead = await until(() => trunk.calls[0], "the INVITE to the lead");
    expect(lead.user).toBe("+14155552671");
    await until(() => agentPhone.calls[0], "the INVITE to the agent's phone");
    const [cdr] = await until(async () => {
      const rows = await service.cdrs();
      return rows.length > 0 ? rows : undefined;
    }, "the CDR");
    expect(cdr).toMatchObject({ outcome: "answered", agent_id: service.agentId });
    expect(trunk.calls).toHaveLength(1);
  }, 60_000);
});
