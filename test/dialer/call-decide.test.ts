import { describe, expect, test } from "bun:test";
import { type CampaignSnapshot, restoredSnapshot } from "../../actors/campaign.machine.ts";
import type {
  AgentsAtHand,
  CallEventCommand,
  CampaignCommand,
  CommandInputs,
  DispositionCommand,
} from "../../actors/commands.ts";
import { type HopperLead, type LiveCall, noLeads } from "../../actors/dialing.ts";
import { LiveCalls } from "../../actors/live-calls.ts";
import { decide } from "../../actors/registry.ts";
import type { AgentPresence } from "../../src/dialer/agents.ts";
import {
  leaseFrom,
  NODE_LOST_AFTER_MS,
  rowOf,
  sampledForAgents,
} from "../../src/dialer/call-decide.ts";
import {
  agentsAtHand,
  liveCall as aLiveCall,
  campaignRecord,
  contextWith,
  dialingWith,
  hopperLead,
  inputsWith,
} from "../helpers/campaigns.ts";

/**
 * Every command of a campaign's calls decided without a database: the rows to write, what
 * the campaign's actor adopts, the agents' next states and the pushes, the reply, from the
 * dialing state, what was gathered for the command and the time.
 */
const CLAIMED_AT = Date.parse("2026-03-02T12:00:00.000Z");
const AT = CLAIMED_AT + 4_000;
const campaign = campaignRecord({ status: "running", maxAttempts: 3, retryDelaySeconds: 600 });

const liveCall = (overrides: Partial<LiveCall> = {}): LiveCall =>
  aLiveCall({
    tenantId: campaign.tenantId,
    campaignId: campaign.id,
    leaseExpiresAt: leaseFrom(CLAIMED_AT),
    claimedAt: new Date(CLAIMED_AT),
    updatedAt: new Date(CLAIMED_AT),
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
        calls: LiveCalls.of([call]),
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

/** The agents at hand: `known` by id, and `ready` as the campaign's ready agents. */
const agentsOf = (known: AgentPresence[], ready?: AgentPresence): AgentsAtHand =>
  agentsAtHand(ready ? [...known, ready] : known);

const event = (
  type: "ringing" | "answered" | "machine" | "ended",
  hangupCause: string | null = null,
): CallEventCommand => ({
  type: "call.event",
  nodeId: "node-1",
  callId: "call-1",
  event: type,
  at: AT,
  hangupCause,
  bridgeMs: null,
});

/** Decides `command` with the agents at hand (none by default). */
const callStep = <C extends CampaignCommand>(
  snapshot: CampaignSnapshot,
  command: C,
  agents: AgentsAtHand = agentsOf([]),
  inputs: Partial<CommandInputs> = {},
) => decide(snapshot, command, inputsWith({ agents, ...inputs }), AT);

describe("a node's event for a call, decided", () => {
  test("ringing saves the call ringing with a new lease, adopted and announced; a repeat changes nothing", () => {
    const call = liveCall();
    const decision = callStep(snapshotWith(call), event("ringing"));
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
    expect(decision.effects({})).toEqual([
      { type: "announce", call: expect.objectContaining({ status: "ringing" }), event: "ringing" },
    ]);
    const again = callStep(snapshotWith(liveCall({ status: "ringing" })), event("ringing"));
    expect(again.writes).toEqual([]);
    expect(again.adopt({})).toEqual([]);
  });

  test("a machine is marked once", () => {
    const decision = callStep(snapshotWith(liveCall({ status: "ringing" })), event("machine"));
    expect(decision.writes).toEqual([
      { type: "save", row: expect.objectContaining({ machine: true }) },
    ]);
    expect(decision.effects({})).toEqual([expect.objectContaining({ event: "machine" })]);
    expect(callStep(snapshotWith(liveCall({ machine: true })), event("machine")).writes).toEqual(
      [],
    );
  });

  test("an answer goes to the agent the call reserved: bridged, the lead connected, the agent on the call", () => {
    const reserved = agent("agent-r", { state: "reserved", callId: "call-1" });
    const call = liveCall({ status: "ringing", agentId: "agent-r" });
    const decision = callStep(
      snapshotWith(call),
      event("answered"),
      agentsOf([reserved], agent("agent-other")),
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
    expect(decision.effects({})).toEqual([
      { type: "agent", agent: { ...reserved, state: "on_call", callId: "call-1" }, at: AT },
      expect.objectContaining({ event: "answered", agentMessage: "call.connected" }),
    ]);
    expect(decision.reply({}).call).toMatchObject({ action: "bridge", agent_id: "agent-r" });
  });

  test("without a reservation the longest-ready agent takes it; with nobody ready it is answered and hung up", () => {
    const call = liveCall({ status: "ringing" });
    const longest = agent("agent-l", { since: 1 });
    const later = agent("agent-m", { since: 2 });
    const taken = callStep(snapshotWith(call), event("answered"), agentsOf([later, longest]));
    expect(taken.writes[0]).toMatchObject({ type: "bridge", row: { agentId: "agent-l" } });
    const alone = callStep(snapshotWith(call), event("answered"));
    expect(alone.writes).toEqual([
      {
        type: "save",
        row: expect.objectContaining({ status: "answered", bridged: false, agentId: null }),
      },
    ]);
    expect(alone.effects({})).toEqual([expect.objectContaining({ event: "answered" })]);
    expect(alone.reply({}).call.action).toBe("hangup");
    // A repeat of the answer writes nothing and answers as before.
    const repeat = callStep(
      snapshotWith(liveCall({ status: "answered", bridged: true, agentId: "agent-l" })),
      event("answered"),
    );
    expect(repeat.writes).toEqual([]);
    expect(repeat.reply({}).call.action).toBe("bridge");
  });

  test("a call the campaign no longer holds is answered as stored, or not found; another node's call is not found", () => {
    const stored = rowOf(liveCall({ status: "ended", outcome: "busy" }));
    const snapshot = snapshotWith(liveCall({ id: "call-2" }));
    const repeat = callStep(snapshot, event("ended", "USER_BUSY"), agentsOf([]), { call: stored });
    expect(repeat.writes).toEqual([]);
    expect(repeat.reply({}).call).toMatchObject({ id: "call-1", status: "ended", outcome: "busy" });
    const status = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return (error as { status: number }).status;
      }
      return undefined;
    };
    expect(status(() => callStep(snapshot, event("ringing")))).toBe(404);
    expect(
      status(() =>
        callStep(snapshotWith(liveCall({ edgeNodeId: "node-2" })), event("ringing"), agentsOf([]), {
          call: rowOf(liveCall({ edgeNodeId: "node-2" })),
        }),
      ),
    ).toBe(404);
  });
});

describe("a call's end, decided", () => {
  test("a call no agent took ends with its CDR and its lead retried after the campaign's delay", () => {
    const decision = callStep(
      snapshotWith(liveCall({ status: "ringing" })),
      event("ended", "USER_BUSY"),
    );
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
        lead: { state: "Retry", nextAttemptAt: new Date(AT + 600_000) },
      },
    ]);
    expect(decision.adopt({})).toEqual([
      expect.objectContaining({
        type: "dialing.callEnded",
        outcome: "busy",
        lead: { from: "Dialing", to: "Retry" },
        endedAt: AT,
      }),
    ]);
    expect(decision.effects({})).toEqual([
      expect.objectContaining({ type: "announce", event: "ended", agentMessage: "call.ended" }),
    ]);
  });

  test("an end dated before the answer (a node's clock behind) is dated at the answer, not before", () => {
    const decision = callStep(snapshotWith(bridgedToAgent()), {
      ...event("ended", "NORMAL_CLEARING"),
      at: Date.parse("2000-01-01T00:00:00Z"),
    });
    expect(decision.writes[0]).toMatchObject({
      type: "end",
      ended: expect.objectContaining({ endedAt: new Date(CLAIMED_AT + 2_000) }),
      ringSeconds: 2,
      talkSeconds: 0,
    });
    expect(decision.effects({})[0]).toMatchObject({ type: "agentLeaves", at: CLAIMED_AT + 2_000 });
  });

  test("its last attempt exhausts the lead", () => {
    const last = liveCall({ status: "ringing", attempt: 3 });
    const decision = callStep(snapshotWith(last), event("ended", "NO_ANSWER"));
    expect(decision.writes[0]).toMatchObject({
      type: "end",
      lead: { state: "Exhausted", nextAttemptAt: null },
    });
    expect(decision.adopt({})[0]).toMatchObject({ lead: { from: "Dialing", to: "Exhausted" } });
  });

  test("a bridged call's lead waits for the disposition, the call kept for it; its agent wraps up if still on it", () => {
    const decision = callStep(snapshotWith(bridgedToAgent()), event("ended", "NORMAL_CLEARING"));
    expect(decision.writes[0]).toMatchObject({ type: "end", lead: null, talkSeconds: 2 });
    expect(decision.adopt({})).toEqual([expect.not.objectContaining({ lead: expect.anything() })]);
    expect(decision.adopt({})[0]).toMatchObject({
      wrapUp: { id: "call-1", status: "ended", endedAt: new Date(AT) },
    });
    expect(decision.effects({})[0]).toEqual({
      type: "agentLeaves",
      userId: "agent-a",
      callId: "call-1",
      state: "wrap_up",
      breathMs: 0,
      at: AT,
    });
  });

  test("the end that leaves every lead final and no call in flight completes the campaign with it", () => {
    const last = liveCall({ status: "ringing", attempt: 3 });
    const snapshot = restoredSnapshot(
      contextWith("running", {
        campaign,
        dialing: {
          ...dialingWith(),
          calls: LiveCalls.of([last]),
          leads: { ...noLeads(), Dialing: 1, Completed: 4 },
        },
      }),
    );
    const decision = callStep(snapshot, event("ended", "NO_ANSWER"));
    expect(decision.writes.map((write) => write.type)).toEqual(["end", "status"]);
    expect(decision.writes[1]).toMatchObject({
      to: "completed",
      action: "complete",
      by: { actorType: "system", actorId: null },
    });
    expect(decision.adopt({ relayed: true }).map((adopted) => adopted.type)).toEqual([
      "dialing.callEnded",
      "campaign.complete",
    ]);
    // A retry left to dial keeps it running.
    const retried = callStep(
      snapshotWith(liveCall({ status: "ringing" })),
      event("ended", "NO_ANSWER"),
    );
    expect(retried.writes.map((write) => write.type)).toEqual(["end"]);
  });
});

describe("the ends the service declares, decided", () => {
  const snapshotOf = (calls: LiveCall[]) =>
    restoredSnapshot(
      contextWith("running", {
        campaign,
        dialing: {
          ...dialingWith(),
          calls: LiveCalls.of(calls),
          leads: { ...noLeads(), Dialing: calls.length },
        },
      }),
    );

  test("calls whose lease ran out fail and are retried; a call no longer in flight is left alone", () => {
    const decision = decide(
      snapshotOf([liveCall()]),
      { type: "calls.expire", callIds: ["call-1", "call-gone"] },
      inputsWith(),
      AT,
    );
    expect(decision.writes).toEqual([
      expect.objectContaining({
        type: "end",
        ended: expect.objectContaining({ hangupCause: "LEASE_EXPIRED", outcome: "failed" }),
        lead: { state: "Retry", nextAttemptAt: new Date(AT + 600_000) },
      }),
    ]);
    expect(decision.reply({})).toBe(1);
  });

  test("a node's heartbeat without a call claimed long enough ago ends it as lost; younger and other nodes' calls stay", () => {
    const old = liveCall({ id: "call-old" });
    const young = liveCall({
      id: "call-young",
      claimedAt: new Date(AT + 7_000 - NODE_LOST_AFTER_MS + 1),
    });
    const held = liveCall({ id: "call-held" });
    const elsewhere = liveCall({ id: "call-elsewhere", edgeNodeId: "node-2" });
    const decision = decide(
      snapshotOf([old, young, held, elsewhere]),
      { type: "node.reconcile", nodeId: "node-1", heldCallIds: ["CALL-HELD"] },
      inputsWith(),
      AT + 7_000,
    );
    expect(decision.writes).toEqual([
      expect.objectContaining({
        type: "end",
        ended: expect.objectContaining({ id: "call-old", hangupCause: "NODE_LOST" }),
      }),
    ]);
    expect(decision.reply({})).toBe(1);
  });
});

describe("a claim's placements, decided", () => {
  const hopperOf = (leads: HopperLead[], dialMode: "progressive" | "preview" = "progressive") =>
    restoredSnapshot(
      contextWith("running", {
        campaign: { ...campaign, dialMode, dialRatio: 2 },
        dialing: { ...dialingWith(leads), leads: { ...noLeads(), Fresh: leads.length } },
      }),
    );
  const place = (count: number) => ({
    type: "claim" as const,
    nodeId: "node-1",
    capacity: null,
    count,
    claimKey: "claim-1",
  });
  const newIds = () => {
    let ids = 0;
    return () => `new-${++ids}`;
  };

  test("the first leads of the hopper are claimed; those out of attempts are dropped; only the marked become calls", () => {
    const snapshot = hopperOf([
      hopperLead("a"),
      hopperLead("spent", { attempts: 3 }),
      hopperLead("b"),
      hopperLead("c"),
    ]);
    const decision = callStep(snapshot, place(2), agentsOf([agent("agent-1")]), {
      newId: newIds(),
    });
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
    expect(decision.effects(facts)).toEqual([
      expect.objectContaining({ type: "paced", campaignId: campaign.id }),
      expect.objectContaining({ type: "announce", event: "claimed", agentMessage: undefined }),
    ]);
  });

  test("pacing caps the share: one ready agent at ratio 2 places two calls however many the node offers", () => {
    const snapshot = hopperOf(["a", "b", "c", "d"].map((id) => hopperLead(id)));
    const decision = callStep(snapshot, place(10), agentsOf([agent("agent-1")]));
    const [write] = decision.writes;
    expect(write?.type === "claim" && write.claim.candidates).toHaveLength(2);
  });

  test("in preview a claim dials nothing: each ready agent is offered a lead, longest waiting first", () => {
    const waiting = agent("agent-p", { since: 1 });
    const later = agent("agent-q", { since: 2 });
    const decision = callStep(
      hopperOf([hopperLead("a"), hopperLead("b"), hopperLead("c")], "preview"),
      place(5),
      agentsOf([later, waiting]),
      { newId: newIds() },
    );
    expect(decision.writes).toEqual([]);
    expect(decision.reply({})).toEqual([]);
    expect(decision.adopt({})).toEqual([
      {
        type: "dialing.previewsOffered",
        offers: [
          { agentId: "agent-p", lead: expect.objectContaining({ id: "a" }), at: AT },
          { agentId: "agent-q", lead: expect.objectContaining({ id: "b" }), at: AT },
        ],
        removed: ["a", "b"],
      },
    ]);
    expect(decision.effects({})).toEqual([
      expect.objectContaining({ type: "paced" }),
      { type: "agent", agent: { ...waiting, state: "reserved", callId: null }, at: AT },
      expect.objectContaining({ type: "previewOffered", agentId: "agent-p" }),
      { type: "agent", agent: { ...later, state: "reserved", callId: null }, at: AT },
      expect.objectContaining({ type: "previewOffered", agentId: "agent-q" }),
    ]);
  });

  /** A preview campaign whose hopper offered lead "a" to agent-p. */
  const offered = () => {
    const snapshot = hopperOf([hopperLead("b")], "preview");
    const dialing = snapshot.context.dialing as NonNullable<typeof snapshot.context.dialing>;
    const previews = new Map([["agent-p", { lead: hopperLead("a"), offeredAt: AT - 1_000 }]]);
    return { ...snapshot, context: { ...snapshot.context, dialing: { ...dialing, previews } } };
  };

  test("a preview's dial places its call on an online node, reserved for the agent, by a dial command", () => {
    const agentP = agent("agent-p", { state: "reserved" });
    const decision = callStep(
      offered(),
      { type: "call.dial", agentId: "agent-p", leadId: null },
      agentsOf([agentP]),
      { newId: newIds(), dialNode: { nodeId: "node-2" } },
    );
    const [claimWrite, commandWrite] = decision.writes;
    expect(claimWrite).toMatchObject({
      type: "claim",
      claim: { edgeNodeId: "node-2", candidates: [{ leadId: "a", agentId: "agent-p" }] },
    });
    // The command is written only if the claim's statement marked the lead.
    expect(commandWrite).toMatchObject({
      type: "nodeCommand",
      onlyIfMarked: "a",
      command: { type: "dial", edgeNodeId: "node-2", callId: "new-1" },
    });
    const marked = { marked: [{ id: "a", prior: "Fresh" as const, attempts: 1 }] };
    expect(decision.adopt(marked).map((event) => event.type)).toEqual([
      "dialing.previewEnded",
      "dialing.callsPlaced",
    ]);
    expect(decision.effects(marked)[0]).toEqual({
      type: "agent",
      agent: expect.objectContaining({ state: "reserved", callId: "new-1" }),
      at: AT,
    });
    expect(decision.reply(marked).call).toMatchObject({ id: "new-1", agent_id: "agent-p" });
    // Not marked (put on the do-not-call list meanwhile): no call, the agent is ready again.
    expect(decision.reply({ marked: [] }).call).toBeNull();
    expect(decision.effects({ marked: [] })).toEqual([
      { type: "agent", agent: { ...agentP, state: "ready", callId: null }, at: AT },
    ]);
  });

  test("a second dial, a dial with no node online, and a skip without an offer are refused", () => {
    const agentP = agent("agent-p", { state: "reserved" });
    const dial = { type: "call.dial" as const, agentId: "agent-p", leadId: null };
    expect(() =>
      callStep(hopperOf([], "preview"), dial, agentsOf([agentP]), { dialNode: { nodeId: "n" } }),
    ).toThrow("no lead is offered");
    expect(() => callStep(offered(), dial, agentsOf([agentP]))).toThrow("no edge node is online");
    expect(() =>
      callStep(
        hopperOf([], "preview"),
        { type: "preview.skip", agentId: "agent-p" },
        agentsOf([agentP]),
      ),
    ).toThrow("no lead is offered");
  });

  test("a skip puts the lead back in the hopper and the agent ready", () => {
    const agentP = agent("agent-p", { state: "reserved" });
    const decision = callStep(
      offered(),
      { type: "preview.skip", agentId: "agent-p" },
      agentsOf([agentP]),
    );
    expect(decision.adopt({})).toEqual([
      { type: "dialing.previewEnded", agentId: "agent-p", back: true },
    ]);
    expect(decision.effects({})).toEqual([
      { type: "agent", agent: { ...agentP, state: "ready" }, at: AT },
    ]);
  });

  test("a refill read for the claim is adopted before the placements, and taken from", () => {
    const snapshot = hopperOf([]);
    const decision = callStep(snapshot, place(1), agentsOf([agent("agent-1")]), {
      hopper: { leads: [hopperLead("fresh")], dueOnly: false },
    });
    const [write] = decision.writes;
    expect(write?.type === "claim" && write.claim.candidates.map((c) => c.leadId)).toEqual([
      "fresh",
    ]);
    expect(decision.adopt({ marked: [] }).map((adopted) => adopted.type)).toEqual([
      "dialing.hopperFilled",
      "dialing.callsPlaced",
    ]);
  });

  test("nothing is claimed when pacing allows none, the hopper is empty, or the campaign is not running", () => {
    for (const [snapshot, agents] of [
      [hopperOf([hopperLead("a")]), agentsOf([])],
      [hopperOf([]), agentsOf([agent("agent-1")])],
      [
        restoredSnapshot(contextWith("paused", { dialing: dialingWith([hopperLead("a")]) })),
        agentsOf([agent("agent-1")]),
      ],
    ] as const) {
      const decision = callStep(snapshot, place(3), agents);
      expect(decision.writes).toEqual([]);
      expect(decision.reply({})).toEqual([]);
    }
  });
});

describe("a disposition, decided", () => {
  const connected = bridgedToAgent({ status: "ended", endedAt: new Date(CLAIMED_AT + 3_000) });
  const dispose = (overrides: Partial<DispositionCommand> = {}): DispositionCommand => ({
    type: "call.disposition",
    callId: "call-1",
    disposition: "completed",
    callbackAt: null,
    by: { actorType: "user", actorId: "agent-a", supervising: false },
    ...overrides,
  });
  const wrapping = agentsOf([agent("agent-a", { state: "wrap_up", callId: "call-1" })]);
  // The call has ended: the campaign's dialing state no longer holds it.
  const snapshot = restoredSnapshot(
    contextWith("running", {
      campaign,
      dialing: { ...dialingWith(), leads: { ...noLeads(), Connected: 1, Fresh: 1 } },
    }),
  );
  const settle = (command: DispositionCommand, call = rowOf(connected)) =>
    callStep(snapshot, command, wrapping, { call });
  const refusal = (command: DispositionCommand, call = rowOf(connected)) => {
    try {
      settle(command, call);
    } catch (error) {
      return (error as { status: number; code: string }).status;
    }
    return undefined;
  };

  test("the call's agent settles its lead; the wrap-up ends and the agent is ready again if still on it", () => {
    const decision = settle(dispose());
    expect(decision.writes).toEqual([
      {
        type: "settle",
        call: expect.objectContaining({ disposition: "completed", updatedAt: new Date(AT) }),
        by: { actorType: "user", actorId: "agent-a" },
        lead: { state: "Completed", nextAttemptAt: null },
        addToDnc: false,
      },
    ]);
    expect(decision.adopt({})).toEqual([
      { type: "dialing.leadsMoved", moves: [{ from: "Connected", to: "Completed" }] },
      { type: "dialing.dispositioned", callId: "call-1" },
      { type: "dialing.wrappedUp", wrapMs: AT - (CLAIMED_AT + 3_000), at: AT },
    ]);
    expect(decision.effects({})).toEqual([
      { type: "agentWrappedUp", userId: "agent-a", callId: "call-1", breathMs: 0, at: AT },
      { type: "statsChanged", tenantId: campaign.tenantId, campaignId: campaign.id },
    ]);
  });

  test("no contact retries the lead, or exhausts it on its last attempt; do-not-call adds the number; a callback needs a future time", () => {
    expect(settle(dispose({ disposition: "no_contact" })).writes[0]).toMatchObject({
      lead: { state: "Retry", nextAttemptAt: new Date(AT + 600_000) },
    });
    expect(
      settle(dispose({ disposition: "no_contact" }), { ...rowOf(connected), attempt: 3 }).writes[0],
    ).toMatchObject({ lead: { state: "Exhausted", nextAttemptAt: null } });
    expect(settle(dispose({ disposition: "do_not_call" })).writes[0]).toMatchObject({
      lead: { state: "DoNotCall" },
      addToDnc: true,
    });
    const later = new Date(AT + 3_600_000).toISOString();
    expect(settle(dispose({ disposition: "callback", callbackAt: later })).writes[0]).toMatchObject(
      { lead: { state: "Callback", nextAttemptAt: new Date(later) } },
    );
    expect(refusal(dispose({ disposition: "callback" }))).toBe(400);
    expect(
      refusal(dispose({ disposition: "callback", callbackAt: new Date(AT).toISOString() })),
    ).toBe(400);
  });

  test("another agent is refused, a supervisor is not; an unknown, unconnected or settled call is refused", () => {
    const other = { actorType: "user" as const, actorId: "agent-b", supervising: false };
    expect(refusal(dispose({ by: other }))).toBe(403);
    expect(refusal(dispose({ by: { ...other, supervising: true } }))).toBeUndefined();
    expect(refusal(dispose(), { ...rowOf(connected), bridged: false })).toBe(409);
    expect(refusal(dispose(), { ...rowOf(connected), disposition: "completed" })).toBe(409);
    expect(() => callStep(snapshot, dispose(), wrapping)).toThrow("call not found");
  });
});

describe("an agent's state, decided", () => {
  const command = (state: "ready" | "paused" | "offline", campaignId: string | null = null) => ({
    type: "agent.state" as const,
    agent: { userId: "agent-a", tenantId: campaign.tenantId, email: "a@acme.test" },
    state,
    campaignId,
  });
  const stateOf = (
    agents: AgentPresence[],
    run: CampaignCommand,
    inputs: Partial<CommandInputs> = {},
  ) => {
    try {
      return callStep(
        snapshotWith(liveCall({ agentId: "agent-a" })),
        run,
        agentsOf(agents),
        inputs,
      );
    } catch (error) {
      return (error as { status: number }).status;
    }
  };

  test("an agent on a call cannot leave it; one in wrap-up cannot be ready; ready needs a campaign of the tenant", () => {
    expect(
      stateOf([agent("agent-a", { state: "on_call", callId: "call-9" })], command("offline")),
    ).toBe(409);
    expect(
      stateOf([agent("agent-a", { state: "on_call", callId: "call-9" })], command("ready")),
    ).toBe(409);
    expect(
      stateOf(
        [agent("agent-a", { state: "wrap_up", callId: "call-9" })],
        command("ready", campaign.id),
      ),
    ).toBe(409);
    expect(stateOf([], command("ready"))).toBe(400);
    expect(stateOf([], command("ready", "another-campaign"), { namedCampaignKnown: false })).toBe(
      404,
    );
  });

  test("a reserved agent who pauses keeps the call being placed, and pauses after it; signing out is refused", () => {
    const reserved = agent("agent-a", { state: "reserved", callId: "call-1" });
    const decision = callStep(
      snapshotWith(liveCall({ agentId: "agent-a" })),
      command("paused"),
      agentsOf([reserved]),
    );
    // Nothing is released: answered, the call goes to the agent, never to nobody.
    expect(decision.writes).toEqual([]);
    expect(decision.effects({})).toEqual([
      {
        type: "agent",
        agent: expect.objectContaining({
          state: "reserved",
          callId: "call-1",
          pauseAfterCall: true,
        }),
        at: AT,
      },
      { type: "agentPersisted", userId: "agent-a" },
    ]);
    expect(stateOf([reserved], command("offline"))).toBe(409);
  });

  test("a reserved agent who is gone gives the call up to whoever is free; the agent's row commits before the reply", () => {
    const reserved = agent("agent-a", { state: "reserved", callId: "call-1" });
    const decision = callStep(
      snapshotWith(liveCall({ agentId: "agent-a" })),
      { ...command("offline"), gone: true },
      agentsOf([reserved]),
    );
    expect(decision.writes).toEqual([
      { type: "save", row: expect.objectContaining({ id: "call-1", agentId: null }) },
    ]);
    expect(decision.effects({})).toEqual([
      {
        type: "agent",
        agent: expect.objectContaining({ state: "offline", callId: null }),
        at: AT,
      },
      { type: "agentPersisted", userId: "agent-a" },
    ]);
    expect(decision.reply({}).agent).toMatchObject({ state: "offline" });
  });

  test("reserved for a call the campaign no longer holds, an agent changes freely", () => {
    const stale = agent("agent-a", { state: "reserved", callId: "call-gone" });
    const decision = callStep(snapshotWith(liveCall()), command("paused"), agentsOf([stale]));
    expect(decision.reply({}).agent).toMatchObject({ state: "paused", call_id: null });
  });
});

describe("a recount after an import, decided", () => {
  test("the counts read are adopted and the stats pushed", () => {
    const leads = { ...noLeads(), Fresh: 7 };
    const decision = callStep(snapshotWith(liveCall()), { type: "leads.recount" }, agentsOf([]), {
      leads,
    });
    expect(decision.adopt({})).toEqual([{ type: "dialing.leadsCounted", leads }]);
    expect(decision.effects({})).toEqual([
      { type: "statsChanged", tenantId: campaign.tenantId, campaignId: campaign.id },
    ]);
  });
});

describe("what the node hears and plays, decided", () => {
  const heard = campaignRecord({
    status: "running",
    amdEnabled: true,
    machineAction: "voicemail",
    abandonMessageVersion: 3,
    voicemailMessageVersion: 5,
  });
  const snapshotOf = (call: LiveCall, overrides: Partial<typeof heard> = {}) =>
    restoredSnapshot(
      contextWith("running", {
        campaign: { ...heard, ...overrides },
        dialing: {
          ...dialingWith(),
          calls: LiveCalls.of([call]),
          leads: { ...noLeads(), Dialing: 1 },
        },
      }),
    );
  const detecting = () =>
    liveCall({
      campaignId: heard.id,
      tenantId: heard.tenantId,
      status: "answered",
      answeredAt: new Date(AT - 1_000),
      media: { detecting: true },
    });
  const verdict = (result: "human" | "machine" | "fax" | "unknown"): CallEventCommand => ({
    ...event("answered"),
    event: "amd",
    amd: { result, confidence: 0.9, ms: 1_800 },
  });
  const ready = agent("agent-a", { campaignId: heard.id });

  test("an answer while detection listens chooses nobody and says detect; without detection on, it is any answer", () => {
    const call = liveCall({ campaignId: heard.id, status: "ringing" });
    const decision = callStep(
      snapshotOf(call),
      { ...event("answered"), detecting: true },
      agentsOf([], ready),
    );
    expect(decision.writes).toEqual([
      {
        type: "save",
        row: expect.objectContaining({
          status: "answered",
          agentId: null,
          media: { detecting: true },
        }),
      },
    ]);
    expect(decision.reply({}).call).toMatchObject({ action: "detect" });
    const off = callStep(
      snapshotOf(call, { amdEnabled: false }),
      { ...event("answered"), detecting: true },
      agentsOf([], ready),
    );
    expect(off.reply({}).call).toMatchObject({ action: "bridge", agent_id: "agent-a" });
  });

  test("a person, or no verdict, is put through; a machine gets the voicemail message or is hung up on; a fax is hung up on", () => {
    for (const result of ["human", "unknown"] as const) {
      const decision = callStep(snapshotOf(detecting()), verdict(result), agentsOf([], ready));
      expect(decision.writes).toEqual([
        {
          type: "bridge",
          row: expect.objectContaining({
            agentId: "agent-a",
            answeredAt: new Date(AT - 1_000),
            media: { amd: { result, confidence: 0.9, ms: 1_800, sampled: false } },
          }),
        },
      ]);
      expect(decision.reply({}).call).toMatchObject({ action: "bridge", message: null });
    }
    const machine = callStep(snapshotOf(detecting()), verdict("machine"), agentsOf([], ready));
    expect(machine.writes).toEqual([
      { type: "save", row: expect.objectContaining({ machine: true, agentId: null }) },
    ]);
    expect(machine.reply({}).call).toMatchObject({
      action: "hangup",
      message: { kind: "voicemail", version: 5 },
    });
    const hungUp = callStep(
      snapshotOf(detecting(), { machineAction: "hangup" }),
      verdict("machine"),
    );
    expect(hungUp.reply({}).call).toMatchObject({ action: "hangup", message: null });
    const fax = callStep(snapshotOf(detecting(), { machineAction: "connect" }), verdict("fax"));
    expect(fax.reply({}).call).toMatchObject({ action: "hangup", message: null });
    const connected = callStep(
      snapshotOf(detecting(), { machineAction: "connect" }),
      verdict("machine"),
      agentsOf([], ready),
    );
    expect(connected.reply({}).call).toMatchObject({ action: "bridge" });
  });

  test("a sampled share of machine verdicts is put through, the same calls each time", () => {
    const sampled = callStep(
      snapshotOf(detecting(), { amdSamplePercent: 100 }),
      verdict("machine"),
      agentsOf([], ready),
    );
    expect(sampled.writes[0]).toMatchObject({
      type: "bridge",
      row: { media: { amd: { sampled: true } } },
    });
    const ids = Array.from({ length: 2_000 }, (_, i) => `call-${i}`);
    const share = ids.filter((id) => sampledForAgents(id, 10)).length / ids.length;
    expect(share).toBeGreaterThan(0.07);
    expect(share).toBeLessThan(0.13);
    // Chosen by the call's id: a larger share keeps every call a smaller one sampled.
    expect(ids.filter((id) => sampledForAgents(id, 10) && !sampledForAgents(id, 20))).toEqual([]);
    expect(ids.some((id) => sampledForAgents(id, 0))).toBe(false);
  });

  test("nobody free: the reply names the abandon message; the message played and an opt-out are recorded", () => {
    const call = liveCall({ campaignId: heard.id, status: "ringing" });
    const abandoned = callStep(snapshotOf(call), event("answered"));
    expect(abandoned.reply({}).call).toMatchObject({
      action: "hangup",
      message: { kind: "abandon", version: 3 },
    });
    const answered = liveCall({
      campaignId: heard.id,
      status: "answered",
      answeredAt: new Date(AT),
    });
    const played = callStep(snapshotOf(answered), {
      ...event("answered"),
      event: "message_played",
      message: { kind: "abandon", played: true, completed: false, reason: "cut off" },
    });
    expect(played.writes).toEqual([
      {
        type: "save",
        row: expect.objectContaining({
          media: {
            message: {
              kind: "abandon",
              played: true,
              completed: false,
              started_at: new Date(AT).toISOString(),
              reason: "cut off",
            },
          },
        }),
      },
    ]);
    const optOut = callStep(snapshotOf(answered), { ...event("answered"), event: "opt_out" });
    expect(optOut.writes).toEqual([
      {
        type: "optOut",
        row: expect.objectContaining({ media: { opted_out: true } }),
        at: new Date(AT),
      },
    ]);
    // Once committed, the number's other leads end wherever they are.
    expect(optOut.effects({})).toContainEqual({
      type: "listed",
      tenantId: answered.tenantId,
      phone: answered.phone,
    });
    const ended = callStep(
      snapshotOf(liveCall({ ...answered, media: { opted_out: true } })),
      event("ended", "NORMAL_CLEARING"),
    );
    expect(ended.writes[0]).toMatchObject({
      type: "end",
      lead: { state: "DoNotCall", nextAttemptAt: null },
    });
  });
});

describe("a campaign's messages, decided", () => {
  const audio = {
    base64: "UklGRg==",
    encoding: "pcm",
    sampleRate: 8000,
    durationMs: 1000,
    sha256: "ab",
    converted: false,
  };
  const by = { actorType: "user" as const, actorId: "admin" };

  test("a recording is written with the campaign, adopted as the campaign written; removing none is 404", () => {
    const snapshot = restoredSnapshot(contextWith("running", { campaign }));
    const decision = decide(
      snapshot,
      { type: "message", kind: "abandon", audio, by, requestId: "r" },
      inputsWith({}),
      AT,
    );
    expect(decision.writes).toEqual([
      expect.objectContaining({ type: "message", kind: "abandon", audio, at: new Date(AT) }),
    ]);
    const written = { ...campaign, abandonMessageVersion: 1 };
    expect(decision.adopt({ campaign: written })).toEqual([
      { type: "campaign.updated", campaign: written },
    ]);
    expect(() =>
      decide(
        snapshot,
        { type: "message", kind: "voicemail", audio: null, by, requestId: "r" },
        inputsWith({}),
        AT,
      ),
    ).toThrow("message not found");
  });
});

describe("a call's row", () => {
  test("is the call as the actor keeps it, every field but its lead", () => {
    const call = liveCall({ agentId: "agent-1", bridged: true, notes: "called back" });
    const { lead: _lead, ...expected } = call;
    const row = rowOf(call);
    expect(row).toEqual(expected);
    expect("lead" in row).toBe(false);
    expect(Object.keys(row).sort()).toEqual(Object.keys(expected).sort());
  });
});
