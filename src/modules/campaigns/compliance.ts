import { findTenantCampaign } from "../../../db/queries/campaigns.ts";
import { answeredCdrsSince, firstStartOf } from "../../../db/queries/dialer.ts";
import type { ServiceDeps } from "../../deps.ts";
import {
  ComplianceLedger,
  entriesFromCdrs,
  evidenceCsv,
  LEGAL_WINDOW_MS,
  type LedgerView,
} from "../../dialer/ledger.ts";
import { notFound } from "../../errors.ts";
import { isUuid } from "../../identity/tenant-scope.ts";

const viewOf = (view: LedgerView) => ({
  from: new Date(view.from).toISOString(),
  to: new Date(view.to).toISOString(),
  live_answers: view.liveAnswers,
  abandons: view.abandons,
  abandon_rate: view.abandonRate,
  abandon_budget: view.budget,
});

/**
 * A campaign's compliance ledger at this instant, rebuilt from its CDRs: live answers and
 * abandons (no agent, or bridged after 2 s) over the legal window (the campaign's life while
 * under 30 days, else the last 30 days) and over the last 24 hours.
 */
async function ledgerOf(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const campaign = isUuid(campaignId)
    ? await findTenantCampaign(deps.db, { tenantId, campaignId })
    : undefined;
  if (!campaign) throw notFound("campaign");
  const now = deps.clock.now();
  const started = await firstStartOf(deps.db, campaign.id);
  const firstStartedAt = started ? new Date(started).getTime() : now;
  const rows = await answeredCdrsSince(deps.longWorkDb, {
    campaignId: campaign.id,
    since: new Date(now - LEGAL_WINDOW_MS),
  });
  return { campaign, now, firstStartedAt, ledger: ComplianceLedger.from(entriesFromCdrs(rows)) };
}

export async function campaignCompliance(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const { campaign, now, firstStartedAt, ledger } = await ledgerOf(deps, tenantId, campaignId);
  const report = ledger.report(now, { firstStartedAt, maxAbandonRate: campaign.maxAbandonRate });
  return {
    compliance: {
      campaign_id: campaign.id,
      at: new Date(now).toISOString(),
      max_abandon_rate: campaign.maxAbandonRate,
      basis: report.basis,
      window: viewOf(report.window),
      last_24_hours: viewOf(report.day),
      abandon_budget: report.budget,
    },
  };
}

/** The calls counted in the legal window, one CSV row each: the evidence behind the rates. */
export async function complianceEvidence(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const { now, firstStartedAt, ledger } = await ledgerOf(deps, tenantId, campaignId);
  return evidenceCsv(ledger.evidence(now, firstStartedAt));
}
