import type { CampaignRecord } from "../../actors/campaign.machine.ts";
import { findTenantCampaign } from "../../db/queries/campaigns.ts";
import { findLeadWithDnc, numberLimitsAt } from "../../db/queries/dialer.ts";
import {
  leadWindowAt,
  numberLimitsOf,
  placeOf,
  profileInForce,
  type ZoneSource,
} from "../compliance/lead-rules.ts";
import type { ServiceDeps } from "../deps.ts";
import { notFound } from "../errors.ts";
import { isUuid } from "../identity/tenant-scope.ts";
import type { CampaignStats } from "../modules/campaigns/model.ts";
import { campaignStatsFor } from "../modules/campaigns/service.ts";
import { campaignRecordOf } from "../modules/campaigns/store.ts";
import { GOVERNOR_REASON_PREFIX } from "./governor.ts";
import type { EligibilityView } from "./model.ts";

type Reason = EligibilityView["reasons"][number];

const FINAL = new Set(["Completed", "Exhausted", "DoNotCall"]);
const COOLDOWN_AFTER: Record<string, string> = {
  abandoned: "an abandoned call",
  machine: "an answering-machine verdict",
  do_not_call_request: "a do-not-call request",
};

const iso = (at: number | Date | null) => (at === null ? null : new Date(at).toISOString());

/**
 * Why a lead may or may not be dialled now, each reason with when it lifts by itself (null:
 * it does not), and the first instant every rule allows it: the campaign's state, the lead's,
 * its attempts, the do-not-call list, its retry or callback time, the number's caps and
 * cool-downs across the workspace, the governor, and the calling window of the campaign, the
 * profile and the lead's states in every zone it may be in. The limits are the claim's own
 * (`number_limits`), so the answer says what the next claim would do.
 */
export async function leadEligibility(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  leadId: string,
): Promise<EligibilityView> {
  // A campaign this process runs is read from its actor, and its stats asked for at once,
  // beside the lead and its number's do-not-call entry (one read).
  const live = isUuid(campaignId) ? deps.campaigns.peek(campaignId)?.campaign : undefined;
  const known = live?.tenantId === tenantId ? live : undefined;
  const [row, found, liveStats] = await Promise.all([
    known || !isUuid(campaignId)
      ? undefined
      : findTenantCampaign(deps.db, { tenantId, campaignId }),
    isUuid(leadId) ? findLeadWithDnc(deps.db, { tenantId, leadId }) : undefined,
    known?.status === "running" ? campaignStatsFor(deps, tenantId, known.id) : undefined,
  ]);
  const campaign = known ?? (row && campaignRecordOf(row));
  if (!campaign) throw notFound("campaign");
  const lead = found?.lead;
  if (!lead || lead.campaignId !== campaign.id) throw notFound("lead");
  const dnc = found.dncSource === null ? undefined : { source: found.dncSource };
  return judgeEligibility(deps, {
    tenantId,
    campaign,
    lead,
    dnc,
    stats: liveStats,
    statsRead: !!known,
    agentReserved: campaign.dialMode === "preview",
  });
}

/** A lead, or a number about to be one, as eligibility judges it. */
export interface JudgedLead {
  id: string;
  phone: string;
  timezone: string;
  zoneSource: string;
  state: string;
  attempts: number;
  nextAttemptAt: Date | null;
}

/**
 * The rules a lead passes or not, from what was read of it: its campaign, its number's
 * do-not-call entry, and the campaign's stats when already at hand (`statsRead`). A call with
 * its agent reserved (`agentReserved`: preview, a number dialled by hand) has the limits of one.
 */
export async function judgeEligibility(
  deps: ServiceDeps,
  input: {
    tenantId: string;
    campaign: CampaignRecord;
    lead: JudgedLead;
    dnc: { source: string } | undefined;
    stats: CampaignStats | null | undefined;
    statsRead: boolean;
    agentReserved: boolean;
  },
): Promise<EligibilityView> {
  const { tenantId, campaign, lead, dnc, statsRead: known } = input;
  const liveStats = input.stats;
  const now = deps.clock.now();
  const profile = profileInForce(campaign.regulatoryProfile, now);
  const placed = { ...lead, zoneSource: lead.zoneSource as ZoneSource };
  const limits = numberLimitsOf(profile, placeOf(placed).states, input.agentReserved);
  const limited =
    limits.cap !== null ||
    limits.afterAbandoned !== null ||
    limits.afterMachine !== null ||
    limits.afterDncRequest !== null;
  const [overLimits, stats] = await Promise.all([
    limited
      ? numberLimitsAt(deps.db, { tenantId, phone: lead.phone, at: new Date(now), limits })
      : [],
    liveStats ??
      (!known && campaign.status === "running"
        ? campaignStatsFor(deps, tenantId, campaign.id)
        : undefined),
  ]);

  const reasons: Reason[] = [];
  let permanent = false;
  // Instants before which something other than the window keeps the lead waiting.
  let earliest = now;
  const waitFor = (until: number) => {
    earliest = Math.max(earliest, until);
  };
  if (campaign.status !== "running") {
    reasons.push({
      code: "campaign_not_running",
      message: `The campaign is ${campaign.status}`,
      until: null,
    });
  }
  if (FINAL.has(lead.state)) {
    reasons.push({ code: "lead_final", message: `The lead is ${lead.state}`, until: null });
    permanent = true;
  } else if (lead.state === "Dialing" || lead.state === "Connected") {
    reasons.push({ code: "call_in_progress", message: `The lead is ${lead.state}`, until: null });
  }
  if (
    !FINAL.has(lead.state) &&
    lead.state !== "Callback" &&
    lead.attempts >= campaign.maxAttempts
  ) {
    reasons.push({
      code: "max_attempts",
      message: `${lead.attempts} of the campaign's ${campaign.maxAttempts} attempts used`,
      until: null,
    });
    permanent = true;
  }
  if (dnc) {
    reasons.push({
      code: "do_not_call",
      message: `The number is on the workspace's do-not-call list (${dnc.source})`,
      until: null,
    });
    permanent = true;
  }
  for (const limit of overLimits) {
    const message =
      limit.code === "attempt_cap"
        ? `The number has had ${limits.cap?.max} calls in ${limits.cap?.hours} h across the workspace`
        : `The number may not be called again so soon after ${COOLDOWN_AFTER[limit.reason] ?? limit.reason}`;
    reasons.push({ code: limit.code, message, until: iso(limit.until) });
    waitFor(limit.until.getTime());
  }
  const held = stats?.dial_ratio_reason.startsWith(GOVERNOR_REASON_PREFIX) ?? false;
  if (held && (stats?.agents_by_state.ready ?? 0) === 0) {
    reasons.push({
      code: "abandon_budget",
      message: `${stats?.dial_ratio_reason}; no agent is ready to reserve`,
      until: null,
    });
  }

  const window = { start: campaign.callingWindowStart, end: campaign.callingWindowEnd };
  const open = leadWindowAt(placed, profile, window, now);
  for (const reason of open.reasons)
    reasons.push({ code: reason.code, message: reason.message, until: iso(reason.until) });
  // A lead the rules put off carries their time as its own: it is not due for another reason.
  const due = lead.nextAttemptAt?.getTime();
  const explained = reasons.some(
    (reason) => reason.until && Date.parse(reason.until) >= (due ?? 0),
  );
  if (due !== undefined && due > now && !FINAL.has(lead.state) && !explained) {
    reasons.push({
      code: "not_due",
      message: `The lead's ${lead.state === "Callback" ? "callback" : "next attempt"} is due at ${iso(due)}`,
      until: iso(due),
    });
  }
  if (due !== undefined) waitFor(due);
  const opens = earliest === now ? open : leadWindowAt(placed, profile, window, earliest);
  const nextEligible = permanent || opens.nextOpenAt === null ? null : opens.nextOpenAt;

  return {
    lead_id: lead.id,
    dialable: reasons.length === 0,
    reasons,
    next_eligible_at: iso(nextEligible),
    zone: { value: lead.timezone, source: placed.zoneSource },
    profile: { name: profile.name, version: profile.version },
  };
}
