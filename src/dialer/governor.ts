import type { CampaignRecord } from "../../actors/campaign.machine.ts";
import type { DialingState } from "../../actors/dialing.ts";
import { profileInForce } from "../compliance/lead-rules.ts";
import type { ProfileName } from "../compliance/profiles.ts";
import { type AbandonPeriod, legalWindow, periodSpan, US_PERIOD } from "./ledger.ts";

/** What the governor allows a campaign's next round. */
export interface GovernorVerdict {
  /** Dial only with an agent reserved for each call. */
  held: boolean;
  /** The abandon limit applied: the lower of the profile's and the campaign's own. */
  limit: number;
  liveAnswers: number;
  abandons: number;
  /** limit × live answers − abandons, over the profile's period; may be below zero. */
  budget: number;
  /** How the period is counted, for the reason. */
  period: string;
  /** The profile requires an abandon message and the campaign has none: no abandon is allowed. */
  messageMissing: boolean;
}

type GovernedCampaign = Pick<CampaignRecord, "maxAbandonRate" | "abandonMessageVersion"> & {
  regulatoryProfile: ProfileName;
};

/** The abandon limit in force: the lower of the profile's (if it sets one) and the campaign's. */
export function abandonLimitOf(
  campaign: Pick<GovernedCampaign, "maxAbandonRate" | "regulatoryProfile">,
  now: number,
): number {
  const rule = profileInForce(campaign.regulatoryProfile, now).abandonment;
  return rule ? Math.min(rule.maxPercent / 100, campaign.maxAbandonRate) : campaign.maxAbandonRate;
}

/** The period a campaign's abandon rate is counted over: its profile's, else the US one. */
export const abandonPeriodOf = (profile: ProfileName, now: number): AbandonPeriod =>
  profileInForce(profile, now).abandonment?.period ?? US_PERIOD;

/**
 * The abandon-rate governor over every dial mode. A profile with an abandonment rule allows
 * abandons up to its limit × the live answers of its period; `unreserved` calls (placed
 * without an agent waiting) can each be abandoned if they are all answered at once while
 * only `ready` agents are free. When that worst case of the next round would spend more than
 * the budget left, the round is held to calls with an agent reserved for each, which cannot
 * be abandoned. Undefined when the profile sets no limit (`none`).
 */
export function governorOf(
  campaign: GovernedCampaign,
  dialing: DialingState,
  round: { calls: number; unreserved: number; ready: number; dialsAhead: boolean },
  now: number,
): GovernorVerdict | undefined {
  const profile = profileInForce(campaign.regulatoryProfile, now);
  const rule = profile.abandonment;
  if (!rule) return undefined;
  const limit = abandonLimitOf(campaign, now);
  const { from } = legalWindow(rule.period, now, dialing.firstStartedAt ?? now);
  const view = dialing.ledger.view(from, now, limit);
  // An abandoned call without the message the profile requires is unlawful whatever the rate.
  const messageMissing =
    profile.abandonMessage !== undefined && campaign.abandonMessageVersion === null;
  // People detection took for machines and hung up on count as answered and abandoned.
  const estimated = view.estimatedFalsePositives;
  const budget = messageMissing
    ? 0
    : limit * (view.liveAnswers + estimated) - (view.abandons + estimated);
  const worstCase = Math.max(0, round.unreserved + round.calls - round.ready);
  // With nothing to dial this round (no agent ready), the campaign is held while its budget
  // would not cover a single abandon of a mode that dials ahead of its agents.
  const held =
    round.calls === 0 ? round.dialsAhead && budget < 1 : worstCase > 0 && worstCase > budget + 1e-9;
  return {
    held,
    limit,
    liveAnswers: view.liveAnswers,
    abandons: view.abandons,
    budget,
    period: periodSpan(rule.period),
    messageMissing,
  };
}

/** How `dial_ratio_reason` starts while the governor holds a campaign. */
export const GOVERNOR_REASON_PREFIX = "governor:";

/** Why the governor holds a campaign, for `dial_ratio_reason`. */
export const heldReason = (verdict: GovernorVerdict) =>
  verdict.messageMissing
    ? `${GOVERNOR_REASON_PREFIX} the abandon message the profile requires is missing, so no call may be abandoned; a reserved agent for each call until one is recorded`
    : `${GOVERNOR_REASON_PREFIX} abandon budget ${Math.max(0, verdict.budget).toFixed(2)} ` +
      `(${verdict.abandons} abandoned of ${verdict.liveAnswers} live answers over ${verdict.period}, ` +
      `limit ${(verdict.limit * 100).toFixed(1)} %); a reserved agent for each call but those the budget covers`;
