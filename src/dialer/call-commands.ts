import type { CampaignSnapshot } from "../../actors/campaign.machine.ts";
import {
  type HopperLead,
  type LeadMove,
  type LeadState,
  type LiveCall,
  takeFromHopper,
} from "../../actors/dialing.ts";
import type { CampaignDecision } from "../../actors/ports.ts";
import type { CallRow, claimLeads, LeadRetry, settleDisposition } from "../../db/queries/dialer.ts";
import { badRequest, conflict, forbidden, INVALID_BODY } from "../errors.ts";
import type { AgentBoard, AgentPresence } from "./agents.ts";
import { type DialJob, jobOf } from "./claim-replies.ts";
import { outcomeOf } from "./outcome.ts";

/**
 * The dialer's commands as pure steps: a claim's placements, what a node reports (ringing,
 * answered, a machine, the end), the end the service declares itself (a lease run out, a node
 * that lost the call), a disposition and a reservation given up. Each is decided from the
 * campaign's dialing state, what the command carries (the agents at hand, a call as the
 * database holds it) and the time: the rows to write, what the campaign's actor adopts, the
 * agents' next states and the pushes, and the reply. The port is `callPipeline` (service.ts).
 */

/** How long a node lets a call ring before giving up. */
export const RING_TIMEOUT_SECONDS = 30;
/** A claimed call with no event for ring time plus this grace has failed. */
const LEASE_GRACE_SECONDS = 30;

/** Until when a call stays the node's without another event from it. */
export const leaseFrom = (at: number) =>
  new Date(at + (RING_TIMEOUT_SECONDS + LEASE_GRACE_SECONDS) * 1000);

/** The agents a step may read: by id, the campaign's longest ready, its ready by wait. */
export type AgentsAtHand = Pick<AgentBoard, "get" | "longestReady" | "readyByWait">;

export type CallCommand =
  /**
   * Places up to `count` calls on a node from the campaign's hopper (the caller has paced the
   * campaign and refilled a stale hopper first).
   */
  | {
      type: "calls.place";
      count: number;
      node: { nodeId: string; capacity: number | undefined };
      claimKey: string | undefined;
      agents: AgentsAtHand;
      /** The ids of new calls. */
      newId: () => string;
    }
  | {
      type: "call.event";
      callId: string;
      event: "ringing" | "answered" | "machine";
      /** When the node says it happened. */
      at: number;
      agents: AgentsAtHand;
    }
  /** An agent's or a supervisor's verdict on a connected call, read from the database. */
  | {
      type: "call.disposition";
      call: CallRow;
      disposition: Disposition;
      /** As the client sent it, for a callback. */
      callbackAt: string | undefined;
      /** Who gives it: the call's agent, or a supervisor (or a key) for any call. */
      by: { actor: { actorType: "user" | "api_key"; actorId: string }; supervising: boolean };
      agents: AgentsAtHand;
    }
  /** A preview call's reservation given up: whoever is free takes it when it is answered. */
  | { type: "call.release"; callId: string; at: number }
  | {
      type: "call.end";
      callId: string;
      hangupCause: string | null;
      /** The node's answer-to-bridge time, when it reports one. */
      bridgeMs?: number | undefined;
      at: number;
    };

export const DISPOSITIONS = ["completed", "callback", "do_not_call", "no_contact"] as const;
export type Disposition = (typeof DISPOSITIONS)[number];

/** Where a disposition leaves its lead; `no_contact` retries it instead. */
const SETTLED_LEAD_STATES = {
  completed: "Completed",
  callback: "Callback",
  do_not_call: "DoNotCall",
} as const;

export type CallWrite =
  /** A disposition with its lead's next state (and the number's DNC entry), or its retry. */
  | { type: "settle"; settle: Omit<Parameters<typeof settleDisposition>[1], "fence"> }
  /** Leads marked `Dialing` with their new calls, those still callable when re-checked. */
  | { type: "claim"; claim: Omit<Parameters<typeof claimLeads>[1], "fence"> }
  | { type: "save"; row: CallRow }
  /** An answered call given to an agent. */
  | { type: "bridge"; row: CallRow }
  /** An ended call, its CDR and, unless an agent took it, its lead's next attempt. */
  | {
      type: "end";
      ended: CallRow;
      ringSeconds: number;
      talkSeconds: number;
      retry: LeadRetry | undefined;
    };

/**
 * What committing reported: the leads a claim marked (with their state before and their
 * attempts), and a lead's next state when a call's end settled it.
 */
export interface CallFacts {
  marked?: Awaited<ReturnType<typeof claimLeads>> | undefined;
  leadAfter?: LeadState | undefined;
}

export type CallEffect =
  | { type: "agent"; agent: Omit<AgentPresence, "since">; at: number }
  /** The agent leaves the call for `state`, if it is still on it when the end has committed. */
  | { type: "agentLeaves"; userId: string; callId: string; state: "wrap_up" | "ready"; at: number }
  /** The agent is ready again, if still wrapping up the call when its disposition has committed. */
  | { type: "agentWrappedUp"; userId: string; callId: string; at: number }
  /** The campaign's numbers changed without a push of their own. */
  | { type: "statsChanged"; tenantId: string; campaignId: string }
  | {
      type: "announce";
      call: CallRow | LiveCall;
      event: string;
      agentMessage?: "call.offered" | "call.connected" | "call.ended" | undefined;
    };

/** The call as it now stands; an answer also says whether the node bridges or hangs up. */
export interface CallReply {
  call: CallRow;
  answer?: "bridge" | "hangup" | undefined;
}

export interface CallReplies {
  "calls.place": DialJob[];
  "call.event": CallReply;
  "call.end": CallReply;
  "call.disposition": CallReply;
  "call.release": CallReply;
}

type Decision<R = CallReply> = CampaignDecision<CallWrite, CallFacts, R, CallEffect>;

/**
 * Decides a claim's placements, or a change to a call in flight (which the caller has found
 * among the campaign's calls).
 */
export function callStep<C extends CallCommand>(
  snapshot: CampaignSnapshot,
  command: C,
  now: number,
): Decision<CallReplies[C["type"]]> {
  const decision =
    command.type === "calls.place"
      ? placeStep(snapshot, command as Extract<CallCommand, { type: "calls.place" }>, now)
      : command.type === "call.disposition"
        ? dispositionStep(
            snapshot,
            command as Extract<CallCommand, { type: "call.disposition" }>,
            now,
          )
        : changeStep(
            snapshot,
            command as Extract<CallCommand, { type: "call.event" | "call.end" }>,
          );
  return decision as Decision<CallReplies[C["type"]]>;
}

function changeStep(
  snapshot: CampaignSnapshot,
  command: Extract<CallCommand, { type: "call.event" | "call.end" | "call.release" }>,
): Decision {
  const call = snapshot.context.dialing?.calls[command.callId];
  if (!call) throw new Error(`call ${command.callId} is not in flight`);
  if (command.type === "call.end") return endStep(snapshot, call, command);
  if (command.type === "call.release") {
    if (call.bridged || call.agentId === null) return unchanged(call);
    const row: CallRow = { ...rowOf(call), agentId: null, updatedAt: new Date(command.at) };
    return {
      writes: [{ type: "save", row }],
      adopt: () => [{ type: "dialing.callChanged", call: { ...row, lead: call.lead } }],
      reply: () => ({ call: row }),
    };
  }
  const at = new Date(command.at);
  switch (command.event) {
    case "ringing":
      if (call.status !== "claimed") return unchanged(call);
      return changed(call, {
        ...rowOf(call),
        status: "ringing",
        ringingAt: at,
        leaseExpiresAt: leaseFrom(command.at),
        updatedAt: at,
      });
    case "machine":
      if (call.machine) return unchanged(call);
      return changed(call, { ...rowOf(call), machine: true, updatedAt: at }, "machine");
    case "answered":
      if (call.status === "answered") {
        return {
          ...unchanged(call),
          reply: () => ({ call: rowOf(call), answer: call.bridged ? "bridge" : "hangup" }),
        };
      }
      return answerStep(call, command.agents, command.at);
  }
}

/** The call's row, without the lead the actor keeps beside it. */
export function rowOf(call: LiveCall): CallRow {
  const { lead: _lead, ...row } = call;
  return row;
}

/**
 * Takes leads from the hopper (those outside their calling window or out of attempts are
 * dropped from it), pairs each with its new call (in preview, with a ready agent, longest
 * waiting first), and has the claim mark them; only the leads it marked become calls.
 */
function placeStep(
  snapshot: CampaignSnapshot,
  command: Extract<CallCommand, { type: "calls.place" }>,
  now: number,
): Decision<DialJob[]> {
  const { campaign, dialing } = snapshot.context;
  if (!dialing || command.count <= 0) return { writes: [], adopt: () => [], reply: () => [] };
  const { taken, dropped } = takeFromHopper(dialing, campaign, now, command.count);
  if (taken.length === 0 && dropped.length === 0)
    return { writes: [], adopt: () => [], reply: () => [] };
  const agents =
    campaign.dialMode === "preview" ? command.agents.readyByWait(campaign.id, taken.length) : [];
  const candidates = taken.map((lead, index) => ({
    lead,
    agent: agents[index],
    callId: command.newId(),
    leadId: lead.id,
    leadListId: lead.leadListId,
    phone: lead.phone,
    callerId: lead.callerId ?? campaign.callerId ?? "",
    agentId: agents[index]?.userId ?? null,
  }));
  const claim = {
    tenantId: campaign.tenantId,
    campaignId: campaign.id,
    edgeNodeId: command.node.nodeId,
    candidates,
    maxAttempts: campaign.maxAttempts,
    timeoutSeconds: RING_TIMEOUT_SECONDS,
    now: new Date(now),
    leaseExpiresAt: leaseFrom(now),
    claimKey: command.claimKey,
    nodeCapacity: command.node.capacity,
  };
  // Jobs go out in the hopper's order: the dialing order.
  const placedBy = ({ marked = [] }: CallFacts) => {
    const markedById = new Map(marked.map((mark) => [mark.id, mark]));
    return candidates.flatMap((candidate) => {
      const mark = markedById.get(candidate.lead.id);
      return mark ? [{ candidate, mark, call: placedCall(claim, candidate, mark) }] : [];
    });
  };
  return {
    writes: candidates.length > 0 ? [{ type: "claim", claim }] : [],
    adopt: (facts) => {
      const placed = placedBy(facts);
      return [
        {
          type: "dialing.callsPlaced",
          removed: [...taken, ...dropped].map((lead) => lead.id),
          calls: placed.map(({ call }) => call),
          from: placed.map(({ mark }) => mark.prior),
        },
      ];
    },
    effects: (facts) =>
      placedBy(facts).flatMap(({ candidate, call }): CallEffect[] => [
        ...(candidate.agent
          ? [
              {
                type: "agent" as const,
                agent: { ...candidate.agent, state: "reserved" as const, callId: call.id },
                at: now,
              },
            ]
          : []),
        {
          type: "announce",
          call,
          event: "claimed",
          agentMessage: call.agentId ? "call.offered" : undefined,
        },
      ]),
    reply: (facts) => placedBy(facts).map(({ call }) => jobOf(call)),
  };
}

/** The call a claim placed for a candidate the database marked. */
function placedCall(
  claim: {
    tenantId: string;
    campaignId: string;
    edgeNodeId: string;
    now: Date;
    leaseExpiresAt: Date;
    claimKey: string | undefined;
  },
  candidate: { lead: HopperLead; callId: string; agentId: string | null; callerId: string },
  mark: { attempts: number },
): LiveCall {
  const { lead } = candidate;
  return {
    id: candidate.callId,
    tenantId: claim.tenantId,
    campaignId: claim.campaignId,
    leadListId: lead.leadListId,
    leadId: lead.id,
    edgeNodeId: claim.edgeNodeId,
    agentId: candidate.agentId,
    phone: lead.phone,
    callerId: candidate.callerId,
    attempt: mark.attempts,
    timeoutSeconds: RING_TIMEOUT_SECONDS,
    status: "claimed",
    bridged: false,
    machine: false,
    outcome: null,
    hangupCause: null,
    disposition: null,
    leaseExpiresAt: claim.leaseExpiresAt,
    claimedAt: claim.now,
    ringingAt: null,
    answeredAt: null,
    endedAt: null,
    bridgeMs: null,
    updatedAt: claim.now,
    claimKey: claim.claimKey ?? null,
    lead: {
      id: lead.id,
      phone: lead.phone,
      timezone: lead.timezone,
      fields: lead.fields,
      attempts: mark.attempts,
    },
  };
}

const unchanged = (call: LiveCall): Decision => ({
  writes: [],
  adopt: () => [],
  reply: () => ({ call: rowOf(call) }),
});

/** A call's new row saved, adopted and announced as `event` (its status by default). */
function changed(call: LiveCall, row: CallRow, event: string = row.status): Decision {
  return {
    writes: [{ type: "save", row }],
    adopt: () => [{ type: "dialing.callChanged", call: { ...row, lead: call.lead } }],
    effects: () => [{ type: "announce", call: { ...row, lead: call.lead }, event }],
    reply: () => ({ call: row }),
  };
}

/** An answered call goes to its reserved agent, else the longest-ready one; with none, it is abandoned. */
function answerStep(call: LiveCall, agents: AgentsAtHand, now: number): Decision {
  const at = new Date(now);
  const reserved = call.agentId ? agents.get(call.agentId) : undefined;
  const agent =
    reserved && reserved.callId === call.id ? reserved : agents.longestReady(call.campaignId);
  // From here the call lasts as long as it lasts: it fails only if its node goes silent.
  const answered: CallRow = {
    ...rowOf(call),
    status: "answered",
    answeredAt: at,
    leaseExpiresAt: leaseFrom(now),
    updatedAt: at,
  };
  if (!agent) {
    const decision = changed(call, answered, "answered");
    return { ...decision, reply: () => ({ call: answered, answer: "hangup" }) };
  }
  const row: CallRow = { ...answered, agentId: agent.userId, bridged: true };
  const live: LiveCall = { ...row, lead: call.lead };
  const lead: LeadMove = { from: "Dialing", to: "Connected" };
  return {
    writes: [{ type: "bridge", row }],
    adopt: () => [{ type: "dialing.callChanged", call: live, lead }],
    effects: () => [
      { type: "agent", agent: { ...agent, state: "on_call", callId: call.id }, at: now },
      { type: "announce", call: live, event: "answered", agentMessage: "call.connected" },
    ],
    reply: () => ({ call: row, answer: "bridge" }),
  };
}

const seconds = (from: Date | null, to: Date | null) =>
  from && to ? Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000)) : 0;

/** Ends a call: its outcome, its CDR, its lead's next state, its agent's next state. */
function endStep(
  snapshot: CampaignSnapshot,
  call: LiveCall,
  command: Extract<CallCommand, { type: "call.end" }>,
): Decision {
  const { campaign } = snapshot.context;
  const at = command.at;
  const outcome = outcomeOf(
    { bridged: call.bridged, answered: call.answeredAt !== null, machine: call.machine },
    command.hangupCause,
  );
  const ended: CallRow = {
    ...rowOf(call),
    status: "ended",
    outcome,
    hangupCause: command.hangupCause,
    endedAt: new Date(at),
    updatedAt: new Date(at),
    bridgeMs: command.bridgeMs ?? call.bridgeMs,
  };
  const next = ended.bridged && !ended.disposition ? "wrap_up" : "ready";
  return {
    writes: [
      {
        type: "end",
        ended,
        ringSeconds: seconds(ended.claimedAt, ended.answeredAt ?? ended.endedAt),
        talkSeconds: seconds(ended.answeredAt, ended.endedAt),
        // A bridged call's lead waits for the agent's disposition (unless it already came).
        retry: ended.bridged
          ? undefined
          : {
              maxAttempts: campaign.maxAttempts,
              retryAt: new Date(at + campaign.retryDelaySeconds * 1000),
            },
      },
    ],
    adopt: ({ leadAfter }) => [
      {
        type: "dialing.callEnded",
        callId: call.id,
        outcome,
        ...(leadAfter ? { lead: { from: "Dialing", to: leadAfter } } : {}),
        claimedAt: ended.claimedAt.getTime(),
        answeredAt: ended.answeredAt?.getTime() ?? null,
        endedAt: at,
        bridgeMs: ended.bridgeMs,
      },
    ],
    effects: () => [
      ...(ended.agentId
        ? [
            {
              type: "agentLeaves",
              userId: ended.agentId,
              callId: ended.id,
              state: next,
              at,
            } as const,
          ]
        : []),
      { type: "announce", call: ended, event: "ended", agentMessage: "call.ended" },
    ],
    reply: () => ({ call: ended }),
  };
}

/**
 * The agent's verdict on a connected call moves its lead (Completed, Callback, DoNotCall, or
 * Retry/Exhausted) and frees the agent. Only the call's agent or a supervisor may give it.
 */
function dispositionStep(
  snapshot: CampaignSnapshot,
  command: Extract<CallCommand, { type: "call.disposition" }>,
  now: number,
): Decision {
  const { call, disposition, by } = command;
  if (!by.supervising && call.agentId !== by.actor.actorId)
    throw forbidden("only the call's agent or a supervisor may disposition it");
  if (!call.bridged) throw conflict("only a call connected to an agent takes a disposition");
  if (call.disposition) throw conflict("the call already has a disposition");
  let callbackAt: Date | undefined;
  if (disposition === "callback") {
    callbackAt = command.callbackAt ? new Date(command.callbackAt) : undefined;
    if (!callbackAt || Number.isNaN(callbackAt.getTime()) || callbackAt.getTime() <= now) {
      throw badRequest(INVALID_BODY, [
        { field: "callback_at", message: "a future RFC 3339 time is required for a callback" },
      ]);
    }
  }
  const { campaign, dialing } = snapshot.context;
  const row: CallRow = { ...call, disposition, updatedAt: new Date(now) };
  const live = dialing?.calls[call.id];
  const agent = call.agentId ? command.agents.get(call.agentId) : undefined;
  const wrapping = agent?.callId === call.id && agent.state === "wrap_up";
  return {
    writes: [
      {
        type: "settle",
        settle: {
          call: row,
          actor: by.actor,
          lead:
            disposition === "no_contact"
              ? {
                  retry: {
                    maxAttempts: campaign.maxAttempts,
                    retryAt: new Date(now + campaign.retryDelaySeconds * 1000),
                  },
                }
              : {
                  state: SETTLED_LEAD_STATES[disposition],
                  nextAttemptAt: callbackAt ?? null,
                },
          addToDnc: disposition === "do_not_call",
        },
      },
    ],
    adopt: ({ leadAfter }) => [
      ...(leadAfter
        ? [
            {
              type: "dialing.leadsMoved" as const,
              moves: [{ from: "Connected" as const, to: leadAfter }],
            },
          ]
        : []),
      ...(live
        ? [{ type: "dialing.callChanged" as const, call: { ...row, lead: live.lead } }]
        : []),
      ...(wrapping && call.endedAt
        ? [{ type: "dialing.wrappedUp" as const, wrapMs: now - call.endedAt.getTime(), at: now }]
        : []),
    ],
    effects: () => [
      ...(call.agentId
        ? [{ type: "agentWrappedUp" as const, userId: call.agentId, callId: call.id, at: now }]
        : []),
      { type: "statsChanged", tenantId: call.tenantId, campaignId: call.campaignId },
    ],
    reply: () => ({ call: row }),
  };
}
