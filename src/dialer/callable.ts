import { findDnc } from "../../db/queries/calls.ts";
import { findTenantCampaign } from "../../db/queries/campaigns.ts";
import { findLead } from "../../db/queries/dialer.ts";
import type { ServiceDeps } from "../deps.ts";
import { notFound } from "../errors.ts";
import { isUuid } from "../identity/tenant-scope.ts";
import { callingWindow } from "./calling-window.ts";

interface Reason {
  code: string;
  message: string;
}

const FINAL = new Set(["Completed", "Exhausted", "DoNotCall"]);

/**
 * Why a lead is or is not callable now, and when it next will be: the campaign's status, the
 * lead's state, its attempts, the do-not-call list, the retry or callback time, and the
 * calling window in the lead's time zone. `next_callable_at` is null when nothing will change
 * by itself (a final lead, no attempts left, a number on the do-not-call list).
 */
export async function explainCallable(
  deps: ServiceDeps,
  tenantId: string,
  campaignId: string,
  leadId: string,
) {
  const campaign = isUuid(campaignId)
    ? await findTenantCampaign(deps.db, { tenantId, campaignId })
    : undefined;
  if (!campaign) throw notFound("campaign");
  const lead = isUuid(leadId)
    ? await findLead(deps.db, { tenantId: campaign.tenantId, leadId })
    : undefined;
  if (!lead || lead.campaignId !== campaign.id) throw notFound("lead");
  const now = deps.clock.now();
  const reasons: Reason[] = [];
  let permanent = false;
  if (campaign.status !== "running") {
    reasons.push({ code: "campaign_not_running", message: `the campaign is ${campaign.status}` });
  }
  if (FINAL.has(lead.state)) {
    reasons.push({ code: "lead_final", message: `the lead is ${lead.state}` });
    permanent = true;
  } else if (lead.state === "Dialing" || lead.state === "Connected") {
    reasons.push({ code: "call_in_progress", message: `the lead is ${lead.state}` });
  }
  if (!FINAL.has(lead.state) && lead.attempts >= campaign.maxAttempts) {
    reasons.push({
      code: "no_attempts_left",
      message: `${lead.attempts} of ${campaign.maxAttempts} attempts used`,
    });
    permanent = true;
  }
  if (await findDnc(deps.db, { tenantId, phone: lead.phone })) {
    reasons.push({ code: "do_not_call", message: "the number is on the do-not-call list" });
    permanent = true;
  }
  let earliest = now;
  const due = lead.nextAttemptAt?.getTime();
  if ((lead.state === "Retry" || lead.state === "Callback") && due !== undefined && due > now) {
    const code = lead.state === "Retry" ? "retry_not_due" : "callback_not_due";
    reasons.push({
      code,
      message: `${lead.state.toLowerCase()} due at ${new Date(due).toISOString()}`,
    });
    earliest = due;
  }
  const window = callingWindow(
    lead.timezone,
    campaign.callingWindowStart,
    campaign.callingWindowEnd,
    earliest,
  );
  if (!window.open) {
    if (earliest === now) {
      reasons.push({
        code: "outside_calling_window",
        message: `outside ${campaign.callingWindowStart}–${campaign.callingWindowEnd} in ${lead.timezone}`,
      });
    }
    earliest = window.opensAt;
  }
  return {
    callable: {
      lead_id: lead.id,
      callable: reasons.length === 0,
      reasons,
      next_callable_at: permanent ? null : new Date(earliest).toISOString(),
    },
  };
}
