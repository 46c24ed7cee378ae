import type { CdrRow } from "../../db/queries/calls.ts";
import type { AbandonmentRule } from "../compliance/profile-data.ts";
import { csvLine } from "../lib/csv-export.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** A live answer not bridged to an agent within this long is an abandoned call (US TSR). */
export const BRIDGE_LIMIT_MS = 2_000;
/** The US legal window: the campaign's life while shorter, else the rolling 30 days. */
export const LEGAL_WINDOW_MS = 30 * DAY_MS;
/** How long answers are kept: the longest period a profile counts over (a calendar month). */
export const RETAINED_MS = 31 * DAY_MS;
/** The view beside it (UK Ofcom measures each 24 hours). */
export const DAY_VIEW_MS = DAY_MS;

/** The period an abandon rate is counted over. */
export type AbandonPeriod = AbandonmentRule["period"];
/** The US period, also counted under a profile that sets none. */
export const US_PERIOD: AbandonPeriod = { kind: "rolling", hours: 720, campaignIfShorter: true };

/** `campaign`: the campaign's life, shorter than the period; else the period itself. */
export type WindowBasis = "campaign" | "rolling_30_days" | "rolling_24_hours" | "calendar_month";

/** The period's span in words, as reasons and summaries give it. */
export const periodSpan = (period: AbandonPeriod): string =>
  period.kind === "calendar_month"
    ? "this calendar month"
    : period.hours === 24
      ? "24 h"
      : `${period.hours / 24} days`;

/**
 * The window an abandon rate is counted over at `now`: the period, never from before the
 * campaign first dialled (in UTC for a calendar month).
 */
export function legalWindow(
  period: AbandonPeriod,
  now: number,
  firstStartedAt: number,
): { basis: WindowBasis; from: number; to: number } {
  let start: number;
  let basis: WindowBasis;
  if (period.kind === "calendar_month") {
    const at = new Date(now);
    start = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1);
    basis = "calendar_month";
  } else {
    start = now - period.hours * HOUR_MS + 1;
    basis = period.hours === 24 ? "rolling_24_hours" : "rolling_30_days";
  }
  return firstStartedAt >= start
    ? { basis: "campaign", from: firstStartedAt, to: now }
    : { basis, from: start, to: now };
}

/** Rates are compared in millionths, so that `0.03` means exactly 3 in 100. */
const RATE_SCALE = 1_000_000;

export type LedgerVerdict = "answer" | "abandon";
/**
 * Why a live answer counts as it does: bridged within 2 s, bridged later than that, or
 * never bridged because no agent was free (the dialer hung up).
 */
export type LedgerReason = "bridged" | "bridged_late" | "no_agent";

/** One call a person answered, as the ledger counts it. */
export interface LedgerEntry {
  callId: string;
  /** Epoch milliseconds of the answer. */
  answeredAt: number;
  /** From answer to bridge as the node reports it; null when never bridged or not reported. */
  bridgeMs: number | null;
  verdict: LedgerVerdict;
  reason: LedgerReason;
}

/** A finished call as the dialer knows it; the CDR's outcome names, the node's bridge time. */
export interface FinishedCall {
  callId: string;
  outcome: CdrRow["outcome"];
  answeredAt: Date | number | null;
  /** The node's `node_bridge_ms`, when it reported one. */
  bridgeMs?: number | null | undefined;
}

/**
 * How a finished call counts, or undefined when nobody live answered it (no answer, busy,
 * failed, an answering machine, a withdrawn job). A call bridged without a reported bridge
 * time counts as bridged in time: the dialer bridges at the answer itself.
 */
export function ledgerEntryOf(call: FinishedCall): LedgerEntry | undefined {
  if (call.answeredAt === null) return undefined;
  const answeredAt =
    typeof call.answeredAt === "number" ? call.answeredAt : call.answeredAt.getTime();
  if (call.outcome === "abandoned")
    return {
      callId: call.callId,
      answeredAt,
      bridgeMs: null,
      verdict: "abandon",
      reason: "no_agent",
    };
  if (call.outcome !== "answered") return undefined;
  const bridgeMs = call.bridgeMs ?? null;
  const late = bridgeMs !== null && bridgeMs > BRIDGE_LIMIT_MS;
  return {
    callId: call.callId,
    answeredAt,
    bridgeMs,
    verdict: late ? "abandon" : "answer",
    reason: late ? "bridged_late" : "bridged",
  };
}

/** CDR rows (plus bridge times where known) as ledger entries: a ledger rebuilt at start. */
export function entriesFromCdrs(
  rows: Iterable<Pick<CdrRow, "callId" | "outcome" | "answeredAt"> & { bridgeMs?: number | null }>,
): LedgerEntry[] {
  const entries: LedgerEntry[] = [];
  for (const row of rows) {
    const entry = ledgerEntryOf(row);
    if (entry) entries.push(entry);
  }
  return entries;
}

/**
 * Detection's verdicts among CDR rows: machines hung up on (outcome `machine` with a machine
 * verdict), and sampled verdicts put through that agents judged.
 */
export function verdictsFromCdrs(
  rows: Iterable<
    Pick<CdrRow, "callId" | "outcome" | "answeredAt" | "media"> & { disposition?: string | null }
  >,
): VerdictEntry[] {
  const verdicts: VerdictEntry[] = [];
  for (const row of rows) {
    const amd = row.media?.amd;
    if (amd?.result !== "machine" || row.answeredAt === null) continue;
    const answeredAt = row.answeredAt.getTime();
    if (!amd.sampled && row.outcome === "machine")
      verdicts.push({ kind: "machine", callId: row.callId, answeredAt });
    else if (amd.sampled && row.disposition)
      verdicts.push({
        kind: "sample",
        callId: row.callId,
        answeredAt,
        person: row.disposition !== "answering_machine",
      });
  }
  return verdicts;
}

/** Counts over one span of time; `from` and `to` are both counted (millisecond instants). */
export interface LedgerView {
  from: number;
  to: number;
  /** Calls a person answered, abandoned ones included: the rate's denominator. */
  liveAnswers: number;
  abandons: number;
  /**
   * People answering-machine detection hung up on, estimated: the machine verdicts hung up on
   * × the share of people among the sampled verdicts agents judged (0 before any). Ofcom
   * counts them as abandoned calls, and so do the rate and the budget.
   */
  estimatedFalsePositives: number;
  /** Abandons (estimated false positives included) over live answers; 0 before the first. */
  abandonRate: number;
  /** How many more abandons keep the rate ≤ the limit with no further answer; never negative. */
  budget: number;
}

export interface ComplianceReport {
  at: number;
  basis: WindowBasis;
  window: LedgerView;
  day: LedgerView;
  /** The smaller of the two budgets: what a pacer may still spend. */
  budget: number;
}

/**
 * How many more abandons keep `abandons / liveAnswers` ≤ `maxRate`, each one also being a
 * live answer: the largest k with (a + k) / (n + k) ≤ r, that is k ≤ (r·n − a) / (1 − r).
 * Computed in integers (the rate in millionths) so a rate exactly at the limit is allowed.
 */
export function abandonBudget(liveAnswers: number, abandons: number, maxRate: number): number {
  const limit = Math.round(maxRate * RATE_SCALE);
  if (limit >= RATE_SCALE) return Number.POSITIVE_INFINITY;
  const room = limit * liveAnswers - abandons * RATE_SCALE;
  return room <= 0 ? 0 : Math.floor(room / (RATE_SCALE - limit));
}

/** Index of the first element > `value` in `sorted[start..]`. */
function upperBound(sorted: readonly number[], value: number, start: number): number {
  let low = start;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((sorted[mid] as number) <= value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Inserts keeping the order; calls end roughly in answer order, so this is usually a push. */
function insertSorted(sorted: number[], value: number, start: number): number {
  const last = sorted[sorted.length - 1];
  if (last === undefined || last <= value) {
    sorted.push(value);
    return sorted.length - 1;
  }
  const at = upperBound(sorted, value, start);
  sorted.splice(at, 0, value);
  return at;
}

/** Instants, kept sorted and for 31 days, counted over a span. */
class Instants {
  private readonly times: number[] = [];
  private head = 0;

  add(at: number): void {
    insertSorted(this.times, at, this.head);
  }

  prune(cutoff: number): void {
    while (this.head < this.times.length && (this.times[this.head] as number) <= cutoff)
      this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.head = 0;
    }
  }

  countIn(from: number, to: number): number {
    if (to < from) return 0;
    return upperBound(this.times, to, this.head) - upperBound(this.times, from - 1, this.head);
  }
}

/** What detection's verdicts add to the ledger: machines hung up on, and samples judged. */
export type VerdictEntry =
  | { kind: "machine"; callId: string; answeredAt: number }
  | { kind: "sample"; callId: string; answeredAt: number; person: boolean };

/**
 * A campaign's compliance ledger: every live answer and every abandoned call with its answer
 * instant, kept for 31 days (a calendar month at most), counted over the legal window and the
 * last 24 hours. It does no I/O and is not persisted: it is rebuilt from CDRs
 * (`entriesFromCdrs`) when a campaign starts and fed one call at a time as calls end.
 *
 * Windows are in whole milliseconds and hold the instants t with `now − span < t ≤ now`: an
 * answer exactly 30 days (or 24 hours) old is out, one at `now` is in, later ones are not
 * counted yet. While the campaign is younger than the period, the window is its life, from
 * its first start (counted) to now (`legalWindow`).
 */
export class ComplianceLedger {
  /** Answer instants and entries, in the same order; `head` skips the pruned ones. */
  private readonly answerTimes: number[] = [];
  private readonly answers: LedgerEntry[] = [];
  private readonly abandonTimes: number[] = [];
  private answersHead = 0;
  private abandonsHead = 0;
  private readonly callIds = new Set<string>();
  /** Instants at or before this have been pruned and are no longer accepted. */
  private prunedThrough = Number.NEGATIVE_INFINITY;
  private newest = Number.NEGATIVE_INFINITY;
  /** Machine verdicts hung up on; sampled verdicts agents judged, and the people among them. */
  private readonly machines = new Instants();
  private readonly samples = new Instants();
  private readonly people = new Instants();
  private readonly verdictIds = new Set<string>();

  static from(
    entries: Iterable<LedgerEntry>,
    verdicts: Iterable<VerdictEntry> = [],
  ): ComplianceLedger {
    const ledger = new ComplianceLedger();
    for (const entry of entries) ledger.record(entry);
    for (const verdict of verdicts) ledger.recordVerdict(verdict);
    return ledger;
  }

  /** Counts a machine verdict hung up on, or a sampled one an agent judged; once per call. */
  recordVerdict(verdict: VerdictEntry): boolean {
    if (verdict.answeredAt <= this.prunedThrough || this.verdictIds.has(verdict.callId))
      return false;
    this.verdictIds.add(verdict.callId);
    if (verdict.kind === "machine") this.machines.add(verdict.answeredAt);
    else {
      this.samples.add(verdict.answeredAt);
      if (verdict.person) this.people.add(verdict.answeredAt);
    }
    return true;
  }

  /** Entries held (within 31 days of the newest). */
  get size(): number {
    return this.answers.length - this.answersHead;
  }

  /**
   * Counts one call. A call already counted, or answered more than 31 days before the newest
   * answer seen, is ignored; returns whether it was counted. Cheap: a push in the usual case.
   */
  record(entry: LedgerEntry): boolean {
    if (entry.answeredAt <= this.prunedThrough || this.callIds.has(entry.callId)) return false;
    this.callIds.add(entry.callId);
    const at = insertSorted(this.answerTimes, entry.answeredAt, this.answersHead);
    if (at === this.answers.length) this.answers.push(entry);
    else this.answers.splice(at, 0, entry);
    if (entry.verdict === "abandon")
      insertSorted(this.abandonTimes, entry.answeredAt, this.abandonsHead);
    if (entry.answeredAt > this.newest) {
      this.newest = entry.answeredAt;
      this.prune(this.newest);
    }
    return true;
  }

  /** Forgets what no window ending at `now` or later can count. */
  prune(now: number): void {
    const cutoff = now - RETAINED_MS;
    if (cutoff <= this.prunedThrough) return;
    this.prunedThrough = cutoff;
    while (this.answersHead < this.answers.length) {
      const entry = this.answers[this.answersHead] as LedgerEntry;
      if (entry.answeredAt > cutoff) break;
      this.callIds.delete(entry.callId);
      this.answersHead++;
    }
    while (
      this.abandonsHead < this.abandonTimes.length &&
      (this.abandonTimes[this.abandonsHead] as number) <= cutoff
    )
      this.abandonsHead++;
    // Compact once the dead prefix outweighs the live part, so pruning stays amortised O(1).
    if (this.answersHead > 1024 && this.answersHead * 2 > this.answers.length) {
      this.answers.splice(0, this.answersHead);
      this.answerTimes.splice(0, this.answersHead);
      this.answersHead = 0;
    }
    if (this.abandonsHead > 1024 && this.abandonsHead * 2 > this.abandonTimes.length) {
      this.abandonTimes.splice(0, this.abandonsHead);
      this.abandonsHead = 0;
    }
    for (const instants of [this.machines, this.samples, this.people]) instants.prune(cutoff);
  }

  /** Live answers and abandons over [from, to], with the budget at `maxRate`. */
  view(from: number, to: number, maxRate: number): LedgerView {
    const liveAnswers = this.countIn(this.answerTimes, this.answersHead, from, to);
    const abandons = this.countIn(this.abandonTimes, this.abandonsHead, from, to);
    const judged = this.samples.countIn(from, to);
    const estimated =
      judged === 0 ? 0 : (this.machines.countIn(from, to) * this.people.countIn(from, to)) / judged;
    // A person taken for a machine is a live answer, and an abandoned one.
    const answers = liveAnswers + estimated;
    return {
      from,
      to,
      liveAnswers,
      abandons,
      estimatedFalsePositives: estimated,
      abandonRate: answers === 0 ? 0 : (abandons + estimated) / answers,
      budget: abandonBudget(answers, abandons + estimated, maxRate),
    };
  }

  private countIn(sorted: readonly number[], head: number, from: number, to: number): number {
    if (to < from) return 0;
    return upperBound(sorted, to, head) - upperBound(sorted, from - 1, head);
  }

  /**
   * The rates and budgets at `now`, over the period (the US one unless given) and the last
   * 24 hours. Reads only; costs two binary searches per view.
   */
  report(
    now: number,
    campaign: { firstStartedAt: number; maxAbandonRate: number; period?: AbandonPeriod },
  ): ComplianceReport {
    const legal = legalWindow(campaign.period ?? US_PERIOD, now, campaign.firstStartedAt);
    const window = this.view(legal.from, legal.to, campaign.maxAbandonRate);
    const dayFrom = Math.max(now - DAY_VIEW_MS + 1, campaign.firstStartedAt);
    const day = this.view(dayFrom, now, campaign.maxAbandonRate);
    return {
      at: now,
      basis: legal.basis,
      window,
      day,
      budget: Math.min(window.budget, day.budget),
    };
  }

  /** The entries counted in the legal window at `now`, in answer order: the evidence. */
  *evidence(
    now: number,
    firstStartedAt: number,
    period: AbandonPeriod = US_PERIOD,
  ): Generator<LedgerEntry> {
    const { from, to } = legalWindow(period, now, firstStartedAt);
    const start = upperBound(this.answerTimes, from - 1, this.answersHead);
    for (let index = start; index < this.answers.length; index++) {
      const entry = this.answers[index] as LedgerEntry;
      if (entry.answeredAt > to) return;
      yield entry;
    }
  }
}

export const EVIDENCE_COLUMNS = [
  "call_id",
  "answered_at",
  "bridge_ms",
  "counted_as",
  "reason",
] as const;

/** One evidence row: the call, its answer, its bridge time (blank when none), its verdict. */
export const evidenceRow = (entry: LedgerEntry): string[] => [
  entry.callId,
  new Date(entry.answeredAt).toISOString(),
  entry.bridgeMs === null ? "" : String(entry.bridgeMs),
  entry.verdict,
  entry.reason,
];

/**
 * The evidence as a CSV document (header, CRLF lines), cells neutralised like every export;
 * `more` adds columns of each call's own.
 */
export function evidenceCsv(
  entries: Iterable<LedgerEntry>,
  more: { columns: readonly string[]; cells(callId: string): string[] } = {
    columns: [],
    cells: () => [],
  },
): string {
  let csv = csvLine([...EVIDENCE_COLUMNS, ...more.columns]);
  for (const entry of entries) csv += csvLine([...evidenceRow(entry), ...more.cells(entry.callId)]);
  return csv;
}
