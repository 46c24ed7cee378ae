import type { CampaignEvent, CampaignSnapshot } from "../../actors/campaign.machine.ts";
import type {
  CampaignEffect,
  ClaimCommand,
  ClaimWrite,
  CommandInputs,
  CommitFacts,
  Decision,
} from "../../actors/commands.ts";
import {
  applyDialing,
  type DialingEvent,
  type HopperLead,
  type LiveCall,
  takeFromHopper,
} from "../../actors/dialing.ts";
import { leadWindowAt, numberLimitsOf, placeOf, profileInForce } from "../compliance/lead-rules.ts";
import type { Profile } from "../compliance/profiles.ts";
import { leaseFrom, RING_TIMEOUT_SECONDS } from "./call-decide.ts";
import { type DialJob, jobOf } from "./claim-replies.ts";
import { paceCampaign } from "./pacing.ts";
import { offersOf } from "./preview-decide.ts";

/**
 * A claim's share of one campaign, as a pure step: as many calls as the campaign's pacing
 * allows now (and no more than the node's share), from its hopper (refilled first with the
 * leads the port read, when it was empty or stale), each lead paired with its new call (in
 * preview, with a ready agent, longest waiting first). The claim's statement marks the leads
 * still dialable; only those become calls.
 */
export function decideClaim(
  snapshot: CampaignSnapshot,
  command: ClaimCommand,
  inputs: CommandInputs,
  now: number,
): Decision<DialJob[]> {
  const { campaign, dialing } = snapshot.context;
  if (campaign.status !== "running" || !dialing) return nothing;
  const refill: DialingEvent | undefined = inputs.hopper && {
    type: "dialing.hopperFilled",
    leads: inputs.hopper.leads,
    at: now,
    dueOnly: inputs.hopper.dueOnly,
  };
  const pacing = paceCampaign(
    campaign,
    dialing,
    inputs.agents.inCampaign(campaign.id),
    now,
    inputs.pacer,
  );
  const paced: CampaignEffect = { type: "paced", campaignId: campaign.id, pacing, at: now };
  const count = Math.min(command.count, pacing.calls);
  const hopper = refill ? applyDialing(dialing, refill, false) : dialing;
  const profile = profileInForce(campaign.regulatoryProfile, now);
  const window = { start: campaign.callingWindowStart, end: campaign.callingWindowEnd };
  const { taken, dropped, closed } =
    count > 0
      ? takeFromHopper(hopper, campaign.maxAttempts, count, (lead) =>
          leadWindowAt(lead, profile, window, now),
        )
      : { taken: [], dropped: [], closed: [] };
  const before: CampaignEvent[] = refill ? [refill] : [];
  if (taken.length === 0 && dropped.length === 0) {
    return { writes: [], adopt: () => before, effects: () => [paced], reply: () => [] };
  }
  const claimOf = (candidates: ClaimWrite["candidates"]): ClaimWrite => ({
    tenantId: campaign.tenantId,
    campaignId: campaign.id,
    edgeNodeId: command.nodeId,
    candidates,
    deferrals: closed.map(({ lead, opensAt }) => ({
      leadId: lead.id,
      until: new Date(opensAt ?? now + CLOSED_BEYOND_HORIZON_MS),
    })),
    profile: { name: profile.name, version: profile.version },
    governorHeld: pacing.governor?.held ?? false,
    maxAttempts: campaign.maxAttempts,
    timeoutSeconds: ringTimeoutOf(profile),
    now: new Date(now),
    leaseExpiresAt: leaseFrom(now),
    claimKey: command.claimKey,
    nodeCapacity: command.capacity,
  });
  // In preview nothing is dialled here: each ready agent is offered a lead, and dials it.
  if (campaign.dialMode === "preview") {
    const offers = offersOf(campaign, taken, inputs, now);
    const deferred = claimOf([]);
    return {
      writes: deferred.deferrals.length > 0 ? [{ type: "claim", claim: deferred }] : [],
      adopt: () => [
        ...before,
        {
          type: "dialing.previewsOffered",
          offers: offers.map(({ agent, lead }) => ({ agentId: agent.userId, lead, at: now })),
          removed: [...offers.map(({ lead }) => lead.id), ...dropped.map((lead) => lead.id)],
        },
      ],
      effects: () => [paced, ...offers.flatMap(({ effects }) => effects)],
      reply: () => [],
    };
  }
  const reserving = Math.min(taken.length, pacing.reserved);
  const agents = reserving > 0 ? inputs.agents.readyByWait(campaign.id, reserving) : [];
  // A lead meant for a reserved call waits for an agent rather than being dialled without one.
  const unreserved = pacing.calls - pacing.reserved;
  const dialled = taken.slice(0, agents.length + unreserved);
  const candidates = dialled.map((lead, index) => ({
    lead,
    agent: agents[index],
    callId: inputs.newId(),
    leadId: lead.id,
    leadListId: lead.leadListId,
    phone: lead.phone,
    callerId: lead.callerId ?? campaign.callerId ?? "",
    agentId: agents[index]?.userId ?? null,
    zone: lead.timezone,
    zoneSource: lead.zoneSource,
    limits: numberLimitsOf(profile, placeOf(lead).states, agents[index] !== undefined),
  }));
  const claim = claimOf(
    candidates.map(({ lead: _lead, agent: _agent, ...candidate }) => candidate),
  );
  // Jobs go out in the hopper's order: the dialing order.
  const placedBy = ({ marked = [] }: CommitFacts) => {
    const markedById = new Map(marked.map((mark) => [mark.id, mark]));
    return candidates.flatMap((candidate) => {
      const mark = markedById.get(candidate.lead.id);
      return mark ? [{ candidate, mark, call: placedCall(claim, candidate, mark) }] : [];
    });
  };
  return {
    writes: candidates.length > 0 || claim.deferrals.length > 0 ? [{ type: "claim", claim }] : [],
    adopt: (facts) => {
      const placed = placedBy(facts);
      return [
        ...before,
        {
          type: "dialing.callsPlaced",
          // A lead the node could not take keeps its place: it is dialled in its turn.
          removed: [...dialled.filter((lead) => !facts.unplaced?.has(lead.id)), ...dropped].map(
            (lead) => lead.id,
          ),
          calls: placed.map(({ call }) => call),
          from: placed.map(({ mark }) => mark.prior),
        },
      ];
    },
    effects: (facts) => [
      paced,
      ...placedBy(facts).flatMap(({ candidate, call }): CampaignEffect[] => [
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
    ],
    reply: (facts) => placedBy(facts).map(({ call }) => jobOf(call, campaign)),
  };
}

/** A lead closed for longer than the window looks ahead is tried again after this. */
export const CLOSED_BEYOND_HORIZON_MS = 86_400_000;

/** A call rings at least as long as the profile's minimum. */
export const ringTimeoutOf = (profile: Profile) =>
  Math.max(RING_TIMEOUT_SECONDS, profile.minRing?.seconds ?? 0);

const nothing: Decision<DialJob[]> = {
  writes: [],
  adopt: () => [],
  effects: () => [],
  reply: () => [],
};

/** The call a claim placed for a candidate the database marked. */
export function placedCall(
  claim: ClaimWrite,
  candidate: ClaimWrite["candidates"][number] & { lead: HopperLead },
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
    timeoutSeconds: claim.timeoutSeconds,
    status: "claimed",
    bridged: false,
    machine: false,
    media: null,
    notes: null,
    outcome: null,
    hangupCause: null,
    disposition: null,
    dispositionAutomatic: false,
    dispositionOutcome: null,
    leaseExpiresAt: claim.leaseExpiresAt,
    claimedAt: claim.now,
    ringingAt: null,
    answeredAt: null,
    endedAt: null,
    bridgeMs: null,
    updatedAt: claim.now,
    claimKey: claim.claimKey,
    profile: claim.profile.name,
    profileVersion: claim.profile.version,
    zone: candidate.zone,
    zoneSource: candidate.zoneSource,
    governorHeld: claim.governorHeld,
    lead: {
      id: lead.id,
      phone: lead.phone,
      timezone: lead.timezone,
      fields: lead.fields,
      attempts: mark.attempts,
    },
  };
}
