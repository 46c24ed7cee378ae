import { findDnc } from "../../db/queries/calls.ts";
import { findTenantCampaign } from "../../db/queries/campaigns.ts";
import {
  callUnderWayTo,
  manualLead,
  newestCallerId,
  nodeWithRoom,
  undoManualLead,
} from "../../db/queries/dials.ts";
import { zonesOf } from "../compliance/zones.ts";
import type { ServiceDeps } from "../deps.ts";
import { conflict, forbidden, notFound, unprocessable } from "../errors.ts";
import { recordAudit } from "../identity/audit.ts";
import type { Principal } from "../identity/principal.ts";
import { campaignRecordOf } from "../modules/campaigns/store.ts";
import { NODE_OFFLINE_AFTER_MS } from "../modules/edge-nodes/model.ts";
import { canonicalTimeZone, normalisePhone } from "../modules/leads/normalise.ts";
import type { AgentPresence } from "./agents.ts";
import { judgeEligibility } from "./eligibility.ts";
import type { CallView, PreviewView } from "./model.ts";
import { offeredTo } from "./preview-decide.ts";

/**
 * What an agent dials: the lead its preview offers (or passes on it), or a number it types.
 * Each runs on the campaign's owner (`preview-decide.ts`); a typed number is checked first
 * against the do-not-call list and every rule of the campaign's profile, and becomes a lead of
 * the campaign's list of such numbers only once it passed.
 */

/** The agent behind a request: a person, present on the board. */
function agentOf(deps: ServiceDeps, principal: Principal): AgentPresence {
  if (principal.kind !== "user") throw forbidden("API keys are not agents");
  const agent = deps.dialer.agents.get(principal.user.id);
  if (!agent?.campaignId) throw conflict("you are not signed in to a campaign");
  return agent;
}

/**
 * The lead offered to the agent now, if any, as its desktop shows it. Offers live with the
 * campaign's owner: another process asks it.
 */
export async function currentPreview(
  deps: ServiceDeps,
  agent: AgentPresence | undefined,
): Promise<PreviewView | null> {
  if (!agent?.campaignId || agent.state !== "reserved" || agent.callId !== null) return null;
  const here = deps.campaigns.peek(agent.campaignId);
  if (here) return here.campaign.tenantId === agent.tenantId ? offeredTo(here, agent.userId) : null;
  return deps.campaigns
    .run(
      { tenantId: agent.tenantId, campaignId: agent.campaignId },
      { type: "preview", agentId: agent.userId },
    )
    .catch(() => null);
}

/** Dials the lead offered: a second dial of the same offer finds none (409). */
export async function dialPreview(
  deps: ServiceDeps,
  principal: Principal,
): Promise<{ call: CallView }> {
  const agent = agentOf(deps, principal);
  const campaignId = agent.campaignId as string;
  const reply = await deps.campaigns.run(
    { tenantId: agent.tenantId, campaignId },
    { type: "call.dial", agentId: agent.userId, leadId: null },
  );
  if (!reply.call)
    throw conflict(
      "the lead can no longer be dialled: it was put on the do-not-call list, or its number is over a limit",
    );
  return { call: reply.call };
}

/** Passes on the lead offered, with why: it goes back to the hopper, and the skip is audited. */
export async function skipPreview(
  deps: ServiceDeps,
  principal: Principal,
  input: { reason: string },
  requestId: string,
): Promise<{ skipped: boolean }> {
  const agent = agentOf(deps, principal);
  const campaignId = agent.campaignId as string;
  const offered = await currentPreview(deps, agent);
  const reply = await deps.campaigns.run(
    { tenantId: agent.tenantId, campaignId },
    { type: "preview.skip", agentId: agent.userId },
  );
  await recordAudit(deps.db, {
    tenantId: agent.tenantId,
    actorType: "user",
    actorId: agent.userId,
    action: "lead.skipped",
    targetType: "lead",
    targetId: offered?.lead.id ?? null,
    requestId,
    at: new Date(deps.clock.now()),
    details: { campaign_id: campaignId, reason: input.reason },
  });
  return reply;
}

/**
 * Dials a number the agent typed, in the agent's campaign: refused with the reasons when the
 * do-not-call list or a rule of the campaign forbids it now, and nothing is stored then.
 */
export async function dialByHand(
  deps: ServiceDeps,
  principal: Principal,
  input: { phone: string; timezone?: string | undefined },
): Promise<{ call: CallView }> {
  const agent = agentOf(deps, principal);
  const campaignId = agent.campaignId as string;
  const { tenantId } = agent;
  if (agent.state !== "ready" && agent.state !== "paused")
    throw conflict(`you are ${agent.state.replace("_", " ")}: a number is dialled between calls`);
  if (normalisePhone(input.phone, undefined) !== input.phone)
    throw unprocessable("phone", "is not a valid phone number");
  const now = deps.clock.now();
  const [row, dnc, node, underWay] = await Promise.all([
    findTenantCampaign(deps.db, { tenantId, campaignId }),
    findDnc(deps.db, { tenantId, phone: input.phone }),
    nodeWithRoom(deps.db, { tenantId, since: new Date(now - NODE_OFFLINE_AFTER_MS) }),
    callUnderWayTo(deps.db, { tenantId, phone: input.phone }),
  ]);
  if (!row) throw notFound("campaign");
  const campaign = deps.campaigns.peek(campaignId)?.campaign ?? campaignRecordOf(row);
  if (campaign.status !== "running") throw conflict(`the campaign is ${campaign.status}`);
  // One person is never called twice at once, by the campaign or by hand.
  if (underWay) throw unprocessable("phone", UNDER_WAY);
  const zone = zoneOf(input);
  const judged = await judgeEligibility(deps, {
    tenantId,
    campaign,
    lead: {
      id: "",
      phone: input.phone,
      timezone: zone.timezone,
      zoneSource: zone.source,
      state: "Fresh",
      attempts: 0,
      nextAttemptAt: null,
    },
    dnc: dnc ? { source: dnc.source } : undefined,
    stats: undefined,
    statsRead: true,
    agentReserved: true,
  });
  if (!judged.dialable)
    throw unprocessable("phone", judged.reasons.map((reason) => reason.message).join("; "));
  if (!node) throw conflict("no edge node is online to place the call");
  const callerId = campaign.callerId ?? (await newestCallerId(deps.db, campaignId));
  if (!callerId)
    throw conflict("the campaign has no caller ID to show: give it one, or a lead list with one");
  const lead = await manualLead(deps.db, {
    tenantId,
    campaignId,
    callerId,
    phone: input.phone,
    timezone: zone.timezone,
    zoneSource: zone.source,
    ids: { list: Bun.randomUUIDv7(), lead: Bun.randomUUIDv7() },
    now: new Date(now),
  });
  if (!lead) throw unprocessable("phone", UNDER_WAY);
  try {
    const reply = await deps.campaigns.run(
      { tenantId, campaignId },
      { type: "call.dial", agentId: agent.userId, leadId: lead.id },
    );
    // Another claim placed a call to the number meanwhile.
    if (!reply.call) throw unprocessable("phone", UNDER_WAY);
    return { call: reply.call };
  } catch (error) {
    // Refused after all (the agent moved, the node went): nothing is left to dial by itself.
    await undoManualLead(deps.db, lead, new Date(deps.clock.now()));
    throw error;
  } finally {
    await deps.campaigns.run({ tenantId, campaignId }, { type: "leads.recount" });
  }
}

const UNDER_WAY = "a call to this number is under way";

/** The zone a typed number's hours are judged in: the one sent, else the number's own. */
function zoneOf(input: { phone: string; timezone?: string | undefined }) {
  if (input.timezone !== undefined) {
    const timezone = canonicalTimeZone(input.timezone);
    if (!timezone) throw unprocessable("timezone", "is not a known IANA time zone");
    return { timezone, source: "column" as const };
  }
  const timezone = zonesOf(input.phone)?.zones[0];
  if (!timezone)
    throw unprocessable("timezone", "the number's time zone is unknown: name it (an IANA zone)");
  return { timezone, source: "number" as const };
}
