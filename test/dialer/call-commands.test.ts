import { describe, expect, test } from "bun:test";
import { restoredSnapshot } from "../../actors/campaign.machine.ts";
import { type LiveCall, noLeads } from "../../actors/dialing.ts";
import type { AgentPresence } from "../../src/dialer/agents.ts";
import {
  type AgentsAtHand,
  type CallCommand,
  callStep,
  leaseFrom,
} from "../../src/dialer/call-commands.ts";
import { campaignRecord, contextWith, dialingWith } from "../helpers/campaigns.ts";

/**
 * A call's changes decided without a database: the row to write, what the campaign's actor
 * adopts, the agent's next state and the pushes, from the dialing state, the agents at hand
 * and the time.
 */
const CLAIMED_AT = Date.parse("2026-03-02T12:00:00.000Z");
const AT = CLAIMED_AT + 4_000;
const campaign = campaignRecord({ status: "running", maxAttempts: 3, retryDelaySeconds: 600 });

const liveCall = (overrides: Partial<LiveCall> = {}): LiveCall => ({
  id: "call-1",
  tenantId: campaign.tenantId,
  campaignId: campaign.id,
  leadListId: "list-1",
  leadId: "lead-1",
  edgeNodeId: "node-1",
  agentId: null,
  phone: "+14155552671",
  callerId: "+14155550100",
  attempt: 1,
  timeoutSeconds: 30,
  status: "claimed",
  bridged: false,
  machine: false,
  outcome: null,
  hangupCause: null,
  disposition: null,
  leaseExpiresAt: leaseFrom(CLAIMED_AT),
  claimedAt: new Date(CLAIMED_AT),
  ringingAt: null,
  answeredAt: null,
  endedAt: null,
  bridgeMs: null,
  claimKey: null,
  updatedAt: new Date(CLAIMED_AT),
  lead: { id: "lead-1", phone: "+14155552671", timezone: "UTC", fields: {}, attempts: 1 },
  ...overrides,
});

const snapshotWith = (call: LiveCall) =>
  restoredSnapshot(
    contextWith("running", {
      campaign,
      dialing: {
        ...dialingWith(),
        calls: { [call.id]: call },
        leads: { ...noLeads(), Dialing: 1 },
      },
    }),
  );

const agent = (userId: string, overrides: Partial<AgentPresence> = {}): AgentPresence => ({
  userId,
  tenantId: campaign.tenantId,
  state: "ready",
  campaignId: campaign.id,
  callId: null,
  since: 0,
  ...overrides,
});

/** The agents at hand: by id, and the campaign's longest ready. */
const agentsOf = (known: AgentPresence[], longestReady?: AgentPresence): AgentsAtHand => ({
  get: (userId) => known.find((entry) => entry.userId === userId),
  longestReady: () => longestReady,
});

const event = (
  type: "ringing" | "answered" | "machine",
  agents: AgentsAtHand = agentsOf([]),
): CallCommand => ({ type: "call.event", callId: "call-1", event: type, at: AT, agents });

describe("a node's event for a call, decided", () => {
  test("ringing saves the call ringing with a new lease, adopted and announced; a repeat changes nothing", () => {
    const call = liveCall();
    const decision = callStep(snapshotWith(call), event("ringing"), AT);
    expect(decision.writes).toEqual([
      {
        type: "save",
        row: expect.objectContaining({
          status: "ringing",
          ringingAt: new Date(AT),
          leaseExpiresAt: leaseFrom(AT),
        }),
      },
    ]);
    expect(decision.adopt({})).toEqual([
      { type: "dialing.callChanged", call: expect.objectContaining({ status: "ringing" }) },
    ]);
    expect(decision.effects?.({})).toEqual([
      { type: "announce", call: expect.objectContaining({ status: "ringing" }), event: "ringing" },
    ]);
    const again = callStep(snapshotWith(liveCall({ status: "ringing" })), event("ringing"), AT);
    expect(again.writes).toEqual([]);
    expect(again.adopt({})).toEqual([]);
  });

  test("a machine is marked once", () => {
    const decision = callStep(snapshotWith(liveCall({ status: "ringing" })), event("machine"), AT);
    expect(decision.writes).toEqual([
      { type: "save", row: expect.objectContaining({ machine: true }) },
    ]);
    expect(decision.effects?.({})).toEqual([expect.objectContaining({ event: "machine" })]);
    expect(
      callStep(snapshotWith(liveCall({ machine: true })), event("machine"), AT).writes,
    ).toEqual([]);
  });

  test("an answer goes to the agent the call reserved: bridged, the lead connected, the agent on the call", () => {
    const reserved = agent("agent-r", { state: "reserved", callId: "call-1" });
    const call = liveCall({ status: "ringing", agentId: "agent-r" });
    const decision = callStep(
      snapshotWith(call),
      event("answered", agentsOf([reserved], agent("agent-other"))),
      AT,
    );
    expect(decision.writes).toEqual([
      {
        type: "bridge",
        row: expect.objectContaining({ status: "answered", agentId: "agent-r", bridged: true }),
      },
    ]);
    expect(decision.adopt({})).toEqual([
      {
        type: "dialing.callChanged",
        call: expect.objectContaining({ bridged: true }),
        lead: { from: "Dialing", to: "Connected" },
      },
    ]);
    expect(decision.effects?.({})).toEqual([
      { type: "agent", agent: { ...reserved, state: "on_call", callId: "call-1" }, at: AT },
      expect.objectContaining({ event: "answered", agentMessage: "call.connected" }),
    ]);
    expect(decision.reply({}).answer).toBe("bridge");
  });

  test("without a reservation the longest-ready agent takes it; with nobody ready it is answered and hung up", () => {
    const ready = agent("agent-l");
    const call = liveCall({ status: "ringing" });
    const taken = callStep(snapshotWith(call), event("answered", agentsOf([], ready)), AT);
    expect(taken.writes[0]).toMatchObject({ type: "bridge", row: { agentId: "agent-l" } });
    const alone = callStep(snapshotWith(call), event("answered"), AT);
    expect(alone.writes).toEqual([
      {
        type: "save",
        row: expect.objectContaining({ status: "answered", bridged: false, agentId: null }),
      },
    ]);
    expect(alone.effects?.({})).toEqual([expect.objectContaining({ event: "answered" })]);
    expect(alone.reply({}).answer).toBe("hangup");
    // A repeat of the answer writes nothing and answers as before.
    const repeat = callStep(
      snapshotWith(liveCall({ status: "answered", bridged: true, agentId: "agent-l" })),
      event("answered"),
      AT,
    );
    expect(repeat.writes).toEqual([]);
    expect(repeat.reply({}).answer).toBe("bridge");
  });
});

describe("a call's end, decided", () => {
  const end = (hangupCause: string): CallCommand => ({
    type: "call.end",
    callId: "call-1",
    hangupCause,
    at: AT,
  });

  test("a call no agent took ends with its CDR and its lead's next attempt; the lead moves as the commit says", () => {
    const decision = callStep(snapshotWith(liveCall({ status: "ringing" })), end("USER_BUSY"), AT);
    expect(decision.writes).toEqual([
      {
        type: "end",
        ended: expect.objectContaining({
          status: "ended",
          outcome: "busy",
          hangupCause: "USER_BUSY",
        }),
        ringSeconds: 4,
        talkSeconds: 0,
        retry: { maxAttempts: 3, retryAt: new Date(AT + 600_000) },
      },
    ]);
    expect(decision.adopt({ leadAfter: "Retry" })).toEqual([
      expect.objectContaining({
        type: "dialing.callEnded",
        outcome: "busy",
        lead: { from: "Dialing", to: "Retry" },
        endedAt: AT,
      }),
    ]);
    expect(decision.effects?.({})).toEqual([
      expect.objectContaining({ type: "announce", event: "ended", agentMessage: "call.ended" }),
    ]);
  });

  test("a bridged call's lead waits for the disposition; its agent wraps up if still on it", () => {
    const call = liveCall({
      status: "answered",
      bridged: true,
      agentId: "agent-a",
      answeredAt: new Date(CLAIMED_AT + 2_000),
    });
    const decision = callStep(snapshotWith(call), end("NORMAL_CLEARING"), AT);
    expect(decision.writes[0]).toMatchObject({ type: "end", retry: undefined, talkSeconds: 2 });
    expect(decision.adopt({})).toEqual([expect.not.objectContaining({ lead: expect.anything() })]);
    expect(decision.effects?.({})[0]).toEqual({
      type: "agentLeaves",
      userId: "agent-a",
      callId: "call-1",
      state: "wrap_up",
      at: AT,
    });
  });

  test("a call the campaign no longer holds is not decided", () => {
    expect(() =>
      callStep(snapshotWith(liveCall()), { ...end("NODE_LOST"), callId: "call-2" }, AT),
    ).toThrow("not in flight");
  });
});
