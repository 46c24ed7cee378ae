import { findDnc } from "../../db/queries/calls.ts";
import { findTenantCampaign } from "../../db/queries/campaigns.ts";
import { findLead, numberLimitsAt } from "../../db/queries/dialer.ts";
import {
  leadWindowAt,
  numberLimitsOf,
  placeOf,
  profileInForce,
  type ZoneSource,
} from "../compliance/lead-rules.ts";
import type { ProfileName } from "../compliance/profiles.ts";
import type { ServiceDeps } from "../deps.ts";
import { notFound } from "../errors.ts";
import { isUuid } from "../identity/tenant-scope.ts";
import { campaignStatsFor } from "../modules/campaigns/service.ts";
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
  const [campaign, lead] = await Promise.all([
    isUuid(campaignId) ? findTenantCampaign(deps.db, { tenantId, campaignId }) : undefined,
    isUuid(leadId) ? findLead(deps.db, { tenantId, leadId }) : undefined,
  ]);
  if (!campaign) throw notFound("campaign");
  if (!lead || lead.campaignId !== campaign.id) throw notFound("lead");
  const now = deps.clock.now();
  const profile = profileInForce(campaign.regulatoryProfile as ProfileName, now);
  const placed = { ...lead, zoneSource: lead.zoneSource as ZoneSource };
  const limits = numberLimitsOf(profile, placeOf(placed).states, campaign.dialMode === "preview");
  const [dnc, overLimits, stats] = await Promise.all([
    findDnc(deps.db, { tenantId, phone: lead.phone }),
    numberLimitsAt(deps.db, { tenantId, phone: lead.phone, at: new Date(now), limits }),
    campaign.status === "running" ? campaignStatsFor(deps, tenantId, campaign.id) : undefined,
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
  if (!FINAL.has(lead.state) && lead.attempts >= campaign.maxAttempts) {
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
