import type { CampaignRow } from "../../../db/queries/campaigns.ts";
import { findTenantCampaign } from "../../../db/queries/campaigns.ts";
import { answeredCdrsSince, firstStartOf, mediaCountsSince } from "../../../db/queries/dialer.ts";
import { profileInForce } from "../../compliance/lead-rules.ts";
import type { ProfileName } from "../../compliance/profiles.ts";
import type { ServiceDeps } from "../../deps.ts";
import { abandonLimitOf, abandonPeriodOf } from "../../dialer/governor.ts";
import {
  ComplianceLedger,
  entriesFromCdrs,
  evidenceCsv,
  type LedgerView,
  RETAINED_MS,
  verdictsFromCdrs,
} from "../../dialer/ledger.ts";
import { notFound } from "../../errors.ts";
import { isUuid } from "../../identity/tenant-scope.ts";
import { heardOnCall, MEDIA_CSV_COLUMNS, mediaCsvFields } from "../cdrs/model.ts";
import { campaignRecordOf } from "./store.ts";

const viewOf = (view: LedgerView) => ({
  from: new Date(view.from).toISOString(),
  to: new Date(view.to).toISOString(),
  live_answers: view.liveAnswers,
  abandons: view.abandons,
  estimated_false_positives: view.estimatedFalsePositives,
  abandon_rate: view.abandonRate,
  abandon_budget: view.budget,
});

/**
 * A campaign's compliance ledger at this instant, rebuilt from its CDRs: live answers and
 * abandons (no agent, or bridged after 2 s), kept for the longest period a profile counts over.
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
    since: new Date(now - RETAINED_MS),
  });
  const media = new Map(rows.map((row) => [row.callId, row.media]));
  return {
    campaign,
    now,
    firstStartedAt,
    period: abandonPeriodOf(campaign.regulatoryProfile as ProfileName, now),
    ledger: ComplianceLedger.from(entriesFromCdrs(rows), verdictsFromCdrs(rows)),
    media,
  };
}

/**
 * What the nodes heard and played over the window: the abandon message's record, opt-outs,
 * detection's verdicts, and its false positives estimated from the machine verdicts agents
 * judged, counted with the abandons as Ofcom counts them.
 */
function mediaCompliance(
  campaign: CampaignRow,
  counts: Awaited<ReturnType<typeof mediaCountsSince>>,
  window: LedgerView,
  now: number,
) {
  const people = counts.sampledJudged - counts.sampledMachines;
  const falsePositiveRate = counts.sampledJudged > 0 ? people / counts.sampledJudged : null;
  return {
    abandon_message: {
      required:
        profileInForce(campaign.regulatoryProfile as ProfileName, now).abandonMessage !== undefined,
      version: campaign.abandonMessageVersion,
      played: counts.abandonPlayed,
      completed: counts.abandonCompleted,
      not_played: counts.abandonNotPlayed,
    },
    voicemail_drops: counts.voicemailPlayed,
    opt_outs: counts.optOuts,
    amd: {
      verdicts: {
        human: counts.human,
        machine: counts.machine,
        fax: counts.fax,
        unknown: counts.unknown,
      },
      sampled: counts.sampled,
      sampled_judged: counts.sampledJudged,
      false_positive_rate: falsePositiveRate,
      estimated_false_positives: window.estimatedFalsePositives,
    },
  };
}

export async function campaignCompliance(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const { campaign, now, firstStartedAt, period, ledger } = await ledgerOf(
    deps,
    tenantId,
    campaignId,
  );
  // The limit in force: the campaign's own, never past its profile's.
  const maxAbandonRate = abandonLimitOf(campaignRecordOf(campaign), now);
  const report = ledger.report(now, { firstStartedAt, maxAbandonRate, period });
  const counts = await mediaCountsSince(deps.longWorkDb, {
    campaignId: campaign.id,
    since: new Date(report.window.from),
  });
  return {
    compliance: {
      campaign_id: campaign.id,
      at: new Date(now).toISOString(),
      max_abandon_rate: maxAbandonRate,
      basis: report.basis,
      window: viewOf(report.window),
      last_24_hours: viewOf(report.day),
      abandon_budget: report.budget,
      media: mediaCompliance(campaign, counts, report.window, now),
    },
  };
}

/** The calls counted in the legal window, one CSV row each: the evidence behind the rates. */
export async function complianceEvidence(deps: ServiceDeps, tenantId: string, campaignId: string) {
  const { now, firstStartedAt, period, ledger, media } = await ledgerOf(deps, tenantId, campaignId);
  return evidenceCsv(ledger.evidence(now, firstStartedAt, period), {
    columns: MEDIA_CSV_COLUMNS,
    cells: (callId) => {
      const fields: Record<string, unknown> = mediaCsvFields(
        heardOnCall({ media: media.get(callId) ?? null }),
      );
      return MEDIA_CSV_COLUMNS.map((column) => String(fields[column] ?? ""));
    },
  });
}
