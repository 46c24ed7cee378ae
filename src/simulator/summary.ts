import type { ProfileName } from "../compliance/profiles.ts";
import type { WindowBasis } from "../dialer/ledger.ts";
import { type LimitCheck, momentVerdict, spanVerdict } from "./abandon-limit.ts";
import type { PacingMode } from "./contact-center.ts";

/** What a simulated shift amounted to. */
export interface DaySummary {
  mode: PacingMode;
  /** The campaign's regulatory profile. */
  profile: ProfileName;
  agents: number;
  hours: number;
  seed: number;
  callsPlaced: number;
  callsEnded: number;
  /** Calls a person answered (bridged or abandoned). */
  liveAnswers: number;
  machines: number;
  /** Live answers over calls ended. */
  answerRate: number;
  abandons: number;
  /** Abandons over live answers in the legal window, from the compliance ledger. */
  abandonRate: number;
  windowBasis: WindowBasis;
  /** Talk and wrap-up time over logged-in time, agents together, over the shift. */
  occupancy: number;
  /** Abandons over live answers answered in the first 30 minutes (the opening). */
  openingAbandonRate: number;
  /** Whether the run kept its abandon limit over the day, its opening and at every instant. */
  limit: LimitCheck;
  /** The 15-minute interval of answer time with the highest abandon rate (ms since start). */
  worstAbandonInterval: { from: number; rate: number };
  /** The 5-minute interval after the 15-minute warm-up with the lowest occupancy, if any. */
  lowestOccupancyInterval: { from: number; occupancy: number } | null;
  /** The per-minute dial ratio after the warm-up: mean, standard deviation, 5th–95th percentile. */
  ratioAfterWarmUp: { mean: number; sd: number; p5: number; p95: number };
  talkMinutesPerAgentHour: number;
  leadsTotal: number;
  /** Leads whose attempts ran out. */
  leadsExhausted: number;
  /** Leads never dialled. */
  leadsFresh: number;
  realSeconds: number;
}

const pct = (value: number) => `${(value * 100).toFixed(2)}%`;
const minute = (ms: number) => String(Math.round(ms / 60_000));

/** The summary as aligned lines for a terminal. */
export function formatSummary(summary: DaySummary): string {
  const ratio = summary.ratioAfterWarmUp;
  const { limit } = summary;
  const broken = [
    limit.day.kept ? "" : "over the day",
    limit.opening.kept ? "" : "in the first 30 min",
    limit.everyMoment.kept ? "" : "at some moment",
  ].filter(Boolean);
  const rows: [string, string][] = [
    [
      "verdict",
      broken.length === 0
        ? `the ${pct(limit.limit.rate)} abandon limit was kept`
        : `THE ${pct(limit.limit.rate)} ABANDON LIMIT WAS BROKEN (${broken.join(", ")}): ${pct(summary.abandonRate)} abandoned`,
    ],
    [
      "mode",
      `${summary.mode}, ${summary.profile} profile, ${summary.agents} agents, ${summary.hours} h, seed ${summary.seed}`,
    ],
    ["calls placed", String(summary.callsPlaced)],
    ["calls ended", String(summary.callsEnded)],
    ["live answers", `${summary.liveAnswers} (answer rate ${pct(summary.answerRate)})`],
    ["answering machines", String(summary.machines)],
    [
      "abandoned",
      `${summary.abandons}: ${pct(summary.abandonRate)} of live answers (${summary.windowBasis.replaceAll("_", " ")} window)`,
    ],
    [
      "abandon limit",
      `${pct(summary.limit.limit.rate)} of live answers: ${summary.limit.limit.source}`,
    ],
    ["over the day", spanVerdict(summary.limit.day, summary.limit.limit)],
    ["first 30 min", spanVerdict(summary.limit.opening, summary.limit.limit)],
    ["at every moment", momentVerdict(summary.limit)],
    [
      "worst 15 min",
      `${pct(summary.worstAbandonInterval.rate)} abandoned, from minute ${minute(summary.worstAbandonInterval.from)}`,
    ],
    ["agent occupancy", pct(summary.occupancy)],
    [
      "lowest 5 min",
      summary.lowestOccupancyInterval
        ? `${pct(summary.lowestOccupancyInterval.occupancy)} occupancy, from minute ${minute(summary.lowestOccupancyInterval.from)} (after the first 15)`
        : "none after the first 15 minutes",
    ],
    [
      "dial ratio",
      `mean ${ratio.mean.toFixed(2)}, sd ${ratio.sd.toFixed(2)}, 5th–95th percentile ${ratio.p5.toFixed(2)}–${ratio.p95.toFixed(2)} (per minute, after the first 15)`,
    ],
    ["talk min / agent hour", summary.talkMinutesPerAgentHour.toFixed(1)],
    [
      "leads",
      `${summary.leadsTotal} total, ${summary.leadsExhausted} exhausted, ${summary.leadsFresh} never dialled`,
    ],
    ["took", `${summary.realSeconds.toFixed(1)} s`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return `${rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join("\n")}\n`;
}
