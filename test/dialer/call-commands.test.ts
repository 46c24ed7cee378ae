import { describe, expect, test } from "bun:test";
import { restoredSnapshot } from "../../actors/campaign.machine.ts";
import { type HopperLead, type LiveCall, noLeads } from "../../actors/dialing.ts";
import type { AgentPresence } from "../../src/dialer/agents.ts";
import {
  type AgentsAtHand,
  type CallCommand,
  callStep,
  leaseFrom,
  rowOf,
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

/** A call "agent-a" took two seconds after its claim. */
const bridgedToAgent = (overrides: Partial<LiveCall> = {}) =>
  liveCall({
    status: "answered",
    bridged: true,
    agentId: "agent-a",
    answeredAt: new Date(CLAIMED_AT + 2_000),
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

const hopperLead = (id: string, overrides: Partial<HopperLead> = {}): HopperLead => ({
  id,
  leadListId: "list-1",
  phone: "+14155552671",
  timezone: "UTC",
  state: "Fresh",
  attempts: 0,
  callerId: "+14155550100",
  fields: {},
  ...overrides,
});

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
  readyByWait: (_campaignId, count) =>
    known.filter((entry) => entry.state === "ready").slice(0, count),
});

const event = (
  type: "ringing" | "answered" | "machine",
  agents: AgentsAtHand = agentsOf([]),
): Extract<CallCommand, { type: "call.event" }> => ({
  type: "call.event",
  callId: "call-1",
  event: type,
  at: AT,
  agents,
});

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
  const end = (hangupCause: string): Extract<CallCommand, { type: "call.end" }> => ({
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
    const call = bridgedToAgent();
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

describe("a claim's placements, decided", () => {
  const hopperOf = (leads: HopperLead[], dialMode: "progressive" | "preview" = "progressive") =>
    restoredSnapshot(
      contextWith("running", {
        campaign: { ...campaign, dialMode },
        dialing: { ...dialingWith(leads), leads: { ...noLeads(), Fresh: leads.length } },
      }),
    );
  let ids = 0;
  const place = (
    count: number,
    agents: AgentsAtHand = agentsOf([]),
  ): Extract<CallCommand, { type: "calls.place" }> => ({
    type: "calls.place",
    count,
    node: { nodeId: "node-1", capacity: undefined },
    claimKey: "claim-1",
    agents,
    newId: () => `new-${++ids}`,
  });

  test("the first leads of the hopper are claimed; those out of attempts are dropped; only the marked become calls", () => {
    ids = 0;
    const snapshot = hopperOf([
      hopperLead("a"),
      hopperLead("spent", { attempts: 3 }),
      hopperLead("b"),
      hopperLead("c"),
    ]);
    const decision = callStep(snapshot, place(2), AT);
    expect(decision.writes).toHaveLength(1);
    const [write] = decision.writes;
    expect(
      write?.type === "claim" && write.claim.candidates.map((c) => [c.leadId, c.callId]),
    ).toEqual([
      ["a", "new-1"],
      ["b", "new-2"],
    ]);
    expect(write).toMatchObject({
      claim: { claimKey: "claim-1", edgeNodeId: "node-1", maxAttempts: 3 },
    });
    // The database marked only "b" (another claim took "a" meanwhile).
    const facts = { marked: [{ id: "b", prior: "Fresh" as const, attempts: 1 }] };
    expect(decision.adopt(facts)).toEqual([
      {
        type: "dialing.callsPlaced",
        removed: ["a", "b", "spent"],
        calls: [
          expect.objectContaining({ id: "new-2", leadId: "b", attempt: 1, status: "claimed" }),
        ],
        from: ["Fresh"],
      },
    ]);
    expect(decision.reply(facts)).toEqual([
      expect.objectContaining({ call_id: "new-2", lead_id: "b", agent_id: null }),
    ]);
    expect(decision.effects?.(facts)).toEqual([
      expect.objectContaining({ type: "announce", event: "claimed", agentMessage: undefined }),
    ]);
  });

  test("in preview each call is reserved for a ready agent, longest waiting first, and offered to them", () => {
    ids = 0;
    const ready = agent("agent-p");
    const decision = callStep(
      hopperOf([hopperLead("a"), hopperLead("b")], "preview"),
      place(2, agentsOf([ready])),
      AT,
    );
    const [write] = decision.writes;
    expect(write?.type === "claim" && write.claim.candidates.map((c) => c.agentId)).toEqual([
      "agent-p",
      null,
    ]);
    const facts = {
      marked: [
        { id: "a", prior: "Fresh" as const, attempts: 1 },
        { id: "b", prior: "Fresh" as const, attempts: 1 },
      ],
    };
    expect(decision.effects?.(facts)).toEqual([
      { type: "agent", agent: { ...ready, state: "reserved", callId: "new-1" }, at: AT },
      expect.objectContaining({ event: "claimed", agentMessage: "call.offered" }),
      expect.objectContaining({ event: "claimed", agentMessage: undefined }),
    ]);
  });

  test("nothing is claimed when pacing allows none or the hopper is empty", () => {
    for (const [snapshot, count] of [
      [hopperOf([hopperLead("a")]), 0],
      [hopperOf([]), 3],
    ] as const) {
      const decision = callStep(snapshot, place(count), AT);
      expect(decision.writes).toEqual([]);
      expect(decision.reply({})).toEqual([]);
    }
  });
});

describe("a disposition, decided", () => {
  const connected = bridgedToAgent({ status: "ended", endedAt: new Date(CLAIMED_AT + 3_000) });
  const dispose = (
    overrides: Partial<Extract<CallCommand, { type: "call.disposition" }>> = {},
  ): Extract<CallCommand, { type: "call.disposition" }> => ({
    type: "call.disposition",
    call: rowOf(connected),
    disposition: "completed",
    callbackAt: undefined,
    by: { actor: { actorType: "user", actorId: "agent-a" }, supervising: false },
    agents: agentsOf([agent("agent-a", { state: "wrap_up", callId: "call-1" })]),
    ...overrides,
  });
  // The call has ended: the campaign's dialing state no longer holds it.
  const snapshot = restoredSnapshot(
    contextWith("running", { campaign, dialing: { ...dialingWith(), leads: noLeads() } }),
  );
  const refusal = (command: CallCommand) => {
    try {
      callStep(snapshot, command, AT);
    } catch (error) {
      return (error as { status: number; code: string }).status;
    }
    return undefined;
  };

  test("the call's agent settles its lead; the wrap-up ends and the agent is ready again if still on it", () => {
    const decision = callStep(snapshot, dispose(), AT);
    expect(decision.writes).toEqual([
      {
        type: "settle",
        settle: {
          call: expect.objectContaining({ disposition: "completed", updatedAt: new Date(AT) }),
          actor: { actorType: "user", actorId: "agent-a" },
          lead: { state: "Completed", nextAttemptAt: null },
          addToDnc: false,
        },
      },
    ]);
    expect(decision.adopt({ leadAfter: "Completed" })).toEqual([
      { type: "dialing.leadsMoved", moves: [{ from: "Connected", to: "Completed" }] },
      { type: "dialing.wrappedUp", wrapMs: AT - (CLAIMED_AT + 3_000), at: AT },
    ]);
    expect(decision.effects?.({})).toEqual([
      { type: "agentWrappedUp", userId: "agent-a", callId: "call-1", at: AT },
      { type: "statsChanged", tenantId: campaign.tenantId, campaignId: campaign.id },
    ]);
  });

  test("no contact retries the lead; do-not-call adds the number; a callback needs a future time", () => {
    expect(callStep(snapshot, dispose({ disposition: "no_contact" }), AT).writes[0]).toMatchObject({
      settle: { lead: { retry: { maxAttempts: 3, retryAt: new Date(AT + 600_000) } } },
    });
    expect(callStep(snapshot, dispose({ disposition: "do_not_call" }), AT).writes[0]).toMatchObject(
      { settle: { lead: { state: "DoNotCall" }, addToDnc: true } },
    );
    const later = new Date(AT + 3_600_000).toISOString();
    expect(
      callStep(snapshot, dispose({ disposition: "callback", callbackAt: later }), AT).writes[0],
    ).toMatchObject({ settle: { lead: { state: "Callback", nextAttemptAt: new Date(later) } } });
    expect(refusal(dispose({ disposition: "callback" }))).toBe(400);
    expect(
      refusal(dispose({ disposition: "callback", callbackAt: new Date(AT).toISOString() })),
    ).toBe(400);
  });

  test("another agent is refused, a supervisor is not; an unconnected or settled call is 409", () => {
    const other = { actor: { actorType: "user" as const, actorId: "agent-b" }, supervising: false };
    expect(refusal(dispose({ by: other }))).toBe(403);
    expect(refusal(dispose({ by: { ...other, supervising: true } }))).toBeUndefined();
    expect(refusal(dispose({ call: { ...rowOf(connected), bridged: false } }))).toBe(409);
    expect(refusal(dispose({ call: { ...rowOf(connected), disposition: "completed" } }))).toBe(409);
  });
});

describe("a reservation given up, decided", () => {
  test("a preview call's agent is cleared unless the call is already bridged", () => {
    const release = { type: "call.release", callId: "call-1", at: AT } as const;
    const reserved = liveCall({ status: "ringing", agentId: "agent-a" });
    const decision = callStep(snapshotWith(reserved), release, AT);
    expect(decision.writes).toEqual([
      { type: "save", row: expect.objectContaining({ agentId: null, updatedAt: new Date(AT) }) },
    ]);
    expect(decision.adopt({})).toEqual([
      { type: "dialing.callChanged", call: expect.objectContaining({ agentId: null }) },
    ]);
    expect(decision.effects).toBeUndefined();
    const bridged = liveCall({ status: "answered", bridged: true, agentId: "agent-a" });
    expect(callStep(snapshotWith(bridged), release, AT).writes).toEqual([]);
  });
});
