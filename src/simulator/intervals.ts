import type { LedgerEntry } from "../dialer/ledger.ts";

/** Abandon rates over fixed intervals: the worst of them is what a day's total hides. */
export const ABANDON_INTERVAL_MS = 15 * 60_000;
/** Occupancy over fixed intervals: a dip every few minutes shows here, not in the day's mean. */
export const OCCUPANCY_INTERVAL_MS = 5 * 60_000;
/** The start of a shift, while the pacer has nothing measured: left out of the dips. */
export const WARM_UP_MS = 15 * 60_000;
/** The opening the pacer must ramp through without passing the limit. */
export const OPENING_MS = 30 * 60_000;

/** One interval of the day, in milliseconds since the start. */
export interface AbandonInterval {
  from: number;
  to: number;
  liveAnswers: number;
  abandons: number;
  /** Abandons over live answers; 0 without answers. */
  rate: number;
}

export interface OccupancyInterval {
  from: number;
  to: number;
  occupancy: number;
}

/**
 * Live answers and abandons by interval of answer time since `startAt`, over `spanMs`; calls
 * answered after the shift ends count in its last interval.
 */
export function abandonIntervals(
  entries: Iterable<LedgerEntry>,
  startAt: number,
  spanMs: number,
  intervalMs = ABANDON_INTERVAL_MS,
): AbandonInterval[] {
  const count = Math.max(1, Math.ceil(spanMs / intervalMs - 1e-9));
  const intervals = Array.from({ length: count }, (_, index) => ({
    from: index * intervalMs,
    to: Math.min(spanMs, (index + 1) * intervalMs),
    liveAnswers: 0,
    abandons: 0,
    rate: 0,
  }));
  for (const entry of entries) {
    const index = Math.min(
      count - 1,
      Math.max(0, Math.floor((entry.answeredAt - startAt) / intervalMs)),
    );
    const interval = intervals[index] as AbandonInterval;
    interval.liveAnswers++;
    if (entry.verdict === "abandon") interval.abandons++;
  }
  for (const interval of intervals)
    interval.rate = interval.liveAnswers === 0 ? 0 : interval.abandons / interval.liveAnswers;
  return intervals;
}

/** The abandon rate over the answers of the first `spanMs` of the day. */
export function openingAbandonRate(
  entries: Iterable<LedgerEntry>,
  startAt: number,
  spanMs = OPENING_MS,
) {
  let answers = 0;
  let abandons = 0;
  for (const entry of entries) {
    if (entry.answeredAt - startAt >= spanMs) continue;
    answers++;
    if (entry.verdict === "abandon") abandons++;
  }
  return answers === 0 ? 0 : abandons / answers;
}

/** Mean, standard deviation and 5th and 95th percentiles. */
export function spreadOf(values: readonly number[]) {
  if (values.length === 0) return { mean: 0, sd: 0, p5: 0, p95: 0 };
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  const variance = values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / values.length;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { mean, sd: Math.sqrt(variance), p5: at(0.05), p95: at(0.95) };
}
