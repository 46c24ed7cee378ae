import { profileInForce } from "../compliance/lead-rules.ts";
import type { AbandonmentRule } from "../compliance/profile-data.ts";
import type { ProfileName } from "../compliance/profiles.ts";
import { type LedgerEntry, periodSpan } from "../dialer/ledger.ts";
import { OPENING_MS } from "./intervals.ts";

/** The abandon limit a simulated campaign is held to, and where it comes from. */
export interface AbandonLimit {
  /** Abandons over live answers, at most. */
  rate: number;
  /** Whose limit it is and over what period, in words. */
  source: string;
}

/** Live answers and abandons over a span of answer time, against the limit. */
export interface LimitSpan {
  kept: boolean;
  liveAnswers: number;
  abandons: number;
  rate: number;
}

/**
 * Whether a run kept its abandon limit: over the day, over its first 30 minutes, and at every
 * instant, where abandons ≤ limit × live answers + 1 (one abandon of slack: a bridge later than
 * 2 s abandons even a call an agent was reserved for). `margin` is limit × live answers + 1 −
 * abandons: below zero, broken.
 */
export interface LimitCheck {
  limit: AbandonLimit;
  day: LimitSpan;
  opening: LimitSpan;
  everyMoment: {
    kept: boolean;
    /**
     * The instant of the smallest margin from the first answer on, in ms since the start,
     * with the counts then.
     */
    worst: { at: number; margin: number; liveAnswers: number; abandons: number };
  };
}

const percent = (rate: number) => `${Number((rate * 100).toFixed(2))} %`;

const periodOf = (rule: AbandonmentRule) => {
  const { period } = rule;
  if (period.kind === "calendar_month") return "per calendar month";
  const span = `over ${periodSpan(period)}`;
  return period.campaignIfShorter ? `${span}, or the campaign's life if shorter` : span;
};

/**
 * The limit the governor applies under `profile`: the lower of the profile's and the
 * campaign's `max_abandon_rate`. Under a profile without one (`none`), the campaign's own
 * rate, which nothing but the predictive pacer enforces.
 */
export function abandonLimitOf(
  profile: ProfileName,
  maxAbandonRate: number,
  at: number,
): AbandonLimit {
  const rule = profileInForce(profile, at).abandonment;
  if (!rule)
    return {
      rate: maxAbandonRate,
      source: `the campaign's max_abandon_rate; the ${profile} profile sets no limit`,
    };
  const profileRate = rule.maxPercent / 100;
  if (maxAbandonRate < profileRate)
    return {
      rate: maxAbandonRate,
      source: `the campaign's max_abandon_rate, below the ${profile} profile's ${percent(profileRate)} ${periodOf(rule)}`,
    };
  return { rate: profileRate, source: `the ${profile} profile's, ${periodOf(rule)}` };
}

/** Allowance for the rounding of limit × answers (0.03 × 100 is 3.0000000000000004). */
const EPSILON = 1e-9;

const spanOf = (liveAnswers: number, abandons: number, limit: number): LimitSpan => ({
  kept: abandons <= limit * liveAnswers + EPSILON,
  liveAnswers,
  abandons,
  rate: liveAnswers === 0 ? 0 : abandons / liveAnswers,
});

/**
 * Checks a run's ledger entries (in answer order) against its limit. A simulated run is
 * shorter than every profile's period (the shortest is 24 hours), so each period is the run.
 */
export function checkLimit(
  entries: Iterable<LedgerEntry>,
  startAt: number,
  limit: AbandonLimit,
): LimitCheck {
  const rate = limit.rate;
  let liveAnswers = 0;
  let abandons = 0;
  let openingAnswers = 0;
  let openingAbandons = 0;
  let worst: LimitCheck["everyMoment"]["worst"] | undefined;
  let pending: number | undefined;
  const settle = () => {
    if (pending === undefined) return;
    const margin = rate * liveAnswers + 1 - abandons;
    if (!worst || margin < worst.margin)
      worst = { at: pending - startAt, margin, liveAnswers, abandons };
  };
  for (const entry of entries) {
    // Calls answered at the same instant count together: the margin is read between instants.
    if (entry.answeredAt !== pending) settle();
    pending = entry.answeredAt;
    liveAnswers++;
    const abandoned = entry.verdict === "abandon";
    if (abandoned) abandons++;
    if (entry.answeredAt - startAt < OPENING_MS) {
      openingAnswers++;
      if (abandoned) openingAbandons++;
    }
  }
  settle();
  // Before the first answer nothing is counted: the margin is the one abandon allowed.
  worst ??= { at: 0, margin: 1, liveAnswers: 0, abandons: 0 };
  return {
    limit,
    day: spanOf(liveAnswers, abandons, rate),
    opening: spanOf(openingAnswers, openingAbandons, rate),
    everyMoment: { kept: worst.margin >= -EPSILON, worst },
  };
}

const minute = (ms: number) => String(Math.round(ms / 60_000));
const counts = (span: { abandons: number; liveAnswers: number }) =>
  `${span.abandons} of ${span.liveAnswers} live answers`;

/** Kept or broke, in words, over a span of the day. */
export function spanVerdict(span: LimitSpan, limit: AbandonLimit): string {
  const rate = `${(span.rate * 100).toFixed(2)}% (${counts(span)})`;
  return span.kept
    ? `kept the ${percent(limit.rate)} limit: ${rate}`
    : `broke the ${percent(limit.rate)} limit: ${rate}`;
}

/** Kept or broke, in words, at every instant. */
export function momentVerdict(check: LimitCheck): string {
  const { worst } = check.everyMoment;
  const bound = `${percent(check.limit.rate)} × live answers + 1`;
  if (check.everyMoment.kept)
    return (
      `kept the ${percent(check.limit.rate)} limit: abandons ≤ ${bound} throughout; closest at ` +
      `minute ${minute(worst.at)}, ${counts(worst)} (margin ${worst.margin.toFixed(2)})`
    );
  return (
    `broke the ${percent(check.limit.rate)} limit: worst at minute ${minute(worst.at)}, ` +
    `${counts(worst)}, ${(-worst.margin).toFixed(2)} abandons over ${bound}`
  );
}
