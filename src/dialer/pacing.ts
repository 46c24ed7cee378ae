import type { CampaignRecord } from "../../actors/campaign.machine.ts";
import type { recentCounts } from "../../actors/dialing.ts";

type RecentCounts = ReturnType<typeof recentCounts>;

/** Share of recent calls that a person or machine picked up; 0 before any call. */
export const answerRateOf = (counts: RecentCounts) =>
  counts.total === 0 ? 0 : counts.picked_up / counts.total;

/** Abandoned calls over calls answered by a person (bridged or abandoned). */
export const abandonRateOf = (counts: RecentCounts) => {
  const connected = counts.answered + counts.abandoned;
  return connected === 0 ? 0 : counts.abandoned / connected;
};

/**
 * The dial ratio a campaign runs at now, and why. Progressive: its `dial_ratio`. Predictive:
 * the inverse of the measured answer rate, capped by `dial_ratio`, and back to 1.0 while the
 * abandon rate is at or over `max_abandon_rate` or there are too few calls to measure.
 */
export function currentRatio(
  campaign: Pick<CampaignRecord, "dialMode" | "dialRatio" | "maxAbandonRate">,
  counts: RecentCounts,
) {
  if (campaign.dialMode === "preview")
    return { ratio: 1, reason: "preview: one call per ready agent" };
  if (campaign.dialMode !== "predictive")
    return { ratio: campaign.dialRatio, reason: "progressive: configured dial_ratio" };
  if (counts.total < 20)
    return { ratio: 1, reason: "predictive: too few calls to measure, pacing as progressive" };
  if (abandonRateOf(counts) >= campaign.maxAbandonRate) {
    return { ratio: 1, reason: "predictive: abandon rate at max_abandon_rate" };
  }
  const ratio = Math.min(campaign.dialRatio, Math.max(1, 1 / Math.max(answerRateOf(counts), 0.2)));
  return { ratio, reason: "predictive: inverse of the answer rate, capped by dial_ratio" };
}
