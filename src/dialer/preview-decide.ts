import type {
  CampaignContext,
  CampaignRecord,
  CampaignSnapshot,
} from "../../actors/campaign.machine.ts";
import type {
  CampaignEffect,
  ClaimWrite,
  CommandInputs,
  CommitFacts,
  Decision,
  DialCommand,
  DialReply,
  SkipCommand,
} from "../../actors/commands.ts";
import type { HopperLead } from "../../actors/dialing.ts";
import { leadWindowAt, numberLimitsOf, placeOf, profileInForce } from "../compliance/lead-rules.ts";
import { conflict, notFound, unprocessable } from "../errors.ts";
import { AFTER_CALL_REASON, type AgentPresence } from "./agents.ts";
import { leaseFrom } from "./call-decide.ts";
import { placedCall, ringTimeoutOf } from "./claim-decide.ts";
import { jobOf } from "./claim-replies.ts";
import { callView, type PreviewView, previewView } from "./model.ts";
import { nodeCommandOf } from "./node-commands.ts";

/**
 * A real preview and a number dialled by hand, as pure steps. In preview a claim dials
 * nothing: it offers each ready agent a lead (the agent is `reserved`, the lead out of the
 * hopper). The agent dials it, and only then is a call placed, by a `dial` command to an
 * online node; or skips it, and it goes back to the hopper. A number dialled by hand is a lead
 * of its own, placed the same way. Either call is reserved for its agent and checked as every
 * call is: the calling window here, the do-not-call list and the number's limits by the
 * claim's own statement.
 */

/** Offers for ready agents, the longest waiting first, one lead each. */
export function offersOf(
  campaign: CampaignRecord,
  leads: HopperLead[],
  inputs: CommandInputs,
  now: number,
): { agent: AgentPresence; lead: HopperLead; effects: CampaignEffect[] }[] {
  const agents = inputs.agents.readyByWait(campaign.id, leads.length);
  return agents.map((agent, index) => {
    const lead = leads[index] as HopperLead;
    return {
      agent,
      lead,
      effects: [
        { type: "agent", agent: { ...agent, state: "reserved", callId: null }, at: now },
        {
          type: "previewOffered",
          tenantId: campaign.tenantId,
          agentId: agent.userId,
          lead,
          offeredAt: now,
          expiresAt: now + campaign.previewTimeoutSeconds * 1000,
        },
      ],
    };
  });
}

/** The lead offered to an agent now, as the desktop shows it; null with none. */
export function offeredTo(
  context: Pick<CampaignContext, "campaign" | "dialing">,
  agentId: string,
): PreviewView | null {
  const offer = context.dialing?.previews.get(agentId);
  if (!offer) return null;
  const expiresAt = offer.offeredAt + context.campaign.previewTimeoutSeconds * 1000;
  return previewView(context.campaign.id, offer, offer.offeredAt, expiresAt);
}

/**
 * The agent passes on the lead offered (or its time ran out, `bySystem`): the lead goes back
 * to the hopper, the agent is ready for the next. Without an offer, 409.
 */
export function decidePreviewSkip(
  snapshot: CampaignSnapshot,
  command: SkipCommand,
  inputs: CommandInputs,
  now: number,
): Decision<{ skipped: boolean }> {
  const offer = snapshot.context.dialing?.previews.get(command.agentId);
  const agent = inputs.agents.get(command.agentId);
  const released: CampaignEffect[] =
    agent?.state === "reserved" && agent.callId === null
      ? [{ type: "agent", agent: { ...agent, state: "ready" }, at: now }]
      : [];
  if (!offer) {
    if (!command.bySystem)
      throw conflict("no lead is offered to you: it was dialled, skipped or withdrawn");
    // Reserved for an offer this campaign no longer holds (an owner before it made it): free.
    return { ...nothing({ skipped: false }), effects: () => released };
  }
  return {
    writes: [],
    adopt: () => [{ type: "dialing.previewEnded", agentId: command.agentId, back: true }],
    effects: () => released,
    reply: () => ({ skipped: true }),
  };
}

const nothing = <R>(reply: R): Decision<R> => ({
  writes: [],
  adopt: () => [],
  effects: () => [],
  reply: () => reply,
});

/**
 * Places a call for an agent: the lead offered to it (`leadId` null), or a number it dialled
 * by hand (`leadId`, read as `inputs.dialLead`). The call goes to `inputs.dialNode` as a
 * `dial` command, written only if the claim's statement marked the lead; if it did not (the
 * number was put on the do-not-call list, or is over a limit, since), the reply has no call.
 */
export function decideDial(
  snapshot: CampaignSnapshot,
  command: DialCommand,
  inputs: CommandInputs,
  now: number,
): Decision<DialReply> {
  const { campaign, dialing } = snapshot.context;
  if (campaign.status !== "running" || !dialing) throw conflict("the campaign is not running");
  const agent = inputs.agents.get(command.agentId);
  if (!agent || agent.tenantId !== campaign.tenantId || agent.campaignId !== campaign.id)
    throw conflict("you are not signed in to this campaign");
  const offer = dialing.previews.get(command.agentId);
  let lead: HopperLead;
  if (command.leadId === null) {
    if (!offer) throw conflict("no lead is offered to you: it was dialled, skipped or withdrawn");
    lead = offer.lead;
  } else {
    if (offer) throw conflict("dial or skip the lead offered to you first");
    if (agent.state !== "ready" && agent.state !== "paused")
      throw conflict(`you are ${agent.state.replace("_", " ")}: a number is dialled between calls`);
    if (!inputs.dialLead || inputs.dialLead.id !== command.leadId) throw notFound("lead");
    lead = inputs.dialLead;
  }
  const profile = profileInForce(campaign.regulatoryProfile, now);
  const window = leadWindowAt(
    lead,
    profile,
    { start: campaign.callingWindowStart, end: campaign.callingWindowEnd },
    now,
  );
  if (!window.open) {
    const opens = window.nextOpenAt
      ? `; it opens at ${new Date(window.nextOpenAt).toISOString()}`
      : "";
    throw unprocessable("phone", `outside the calling hours for the number's time zone${opens}`);
  }
  if (!inputs.dialNode) throw conflict("no edge node is online to place the call");
  const callId = inputs.newId();
  const candidate = {
    callId,
    leadId: lead.id,
    leadListId: lead.leadListId,
    phone: lead.phone,
    callerId: lead.callerId || campaign.callerId || "",
    agentId: agent.userId,
    zone: lead.timezone,
    zoneSource: lead.zoneSource,
    limits: numberLimitsOf(profile, placeOf(lead).states, true),
  };
  const claim: ClaimWrite = {
    tenantId: campaign.tenantId,
    campaignId: campaign.id,
    edgeNodeId: inputs.dialNode.nodeId,
    candidates: [candidate],
    deferrals: [],
    profile: { name: profile.name, version: profile.version },
    governorHeld: false,
    maxAttempts: campaign.maxAttempts,
    timeoutSeconds: ringTimeoutOf(profile),
    now: new Date(now),
    leaseExpiresAt: leaseFrom(now),
    claimKey: null,
    nodeCapacity: null,
  };
  const markOf = (facts: CommitFacts) => facts.marked?.find((mark) => mark.id === lead.id);
  const callOf = (mark: { attempts: number }) => placedCall(claim, { ...candidate, lead }, mark);
  const job = jobOf(callOf({ attempts: lead.attempts + 1 }), campaign);
  const dial = nodeCommandOf({
    id: inputs.newId(),
    tenantId: campaign.tenantId,
    nodeId: claim.edgeNodeId,
    callId,
    type: "dial",
    payload: { job },
    at: now,
  });
  const ended =
    command.leadId === null
      ? [{ type: "dialing.previewEnded" as const, agentId: agent.userId, back: false }]
      : [];
  return {
    writes: [
      { type: "claim", claim },
      { type: "nodeCommand", command: dial, onlyIfMarked: lead.id },
    ],
    adopt: (facts) => {
      const mark = markOf(facts);
      if (!mark) return ended;
      return [
        ...ended,
        {
          type: "dialing.callsPlaced",
          removed: [lead.id],
          calls: [callOf(mark)],
          from: [mark.prior],
        },
      ];
    },
    effects: (facts) => {
      const mark = markOf(facts);
      if (!mark) {
        return agent.state === "reserved"
          ? [{ type: "agent", agent: { ...agent, state: "ready", callId: null }, at: now }]
          : [];
      }
      const call = callOf(mark);
      // An agent paused for a reason who dials by hand is paused again after the call.
      const staysPaused = agent.state === "paused" && agent.reason !== AFTER_CALL_REASON;
      const reserved = {
        ...agent,
        state: "reserved" as const,
        callId,
        pauseAfterCall: staysPaused || !!agent.pauseAfterCall,
        reason: staysPaused ? (agent.reason ?? null) : null,
        readyAt: null,
      };
      return [
        { type: "agent", agent: reserved, at: now },
        { type: "announce", call, event: "claimed", agentMessage: "call.offered" },
      ];
    },
    reply: (facts) => {
      const mark = markOf(facts);
      return { call: mark ? callView(callOf(mark)) : null };
    },
  };
}
