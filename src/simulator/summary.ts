import type { PacingMode } from "./contact-center.ts";

/** What a simulated shift amounted to. */
export interface DaySummary {
  mode: PacingMode;
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
  windowBasis: "campaign" | "rolling_30_days";
  /** Talk and wrap-up time over logged-in time, agents together, over the shift. */
  occupancy: number;
  talkMinutesPerAgentHour: number;
  leadsTotal: number;
  /** Leads whose attempts ran out. */
  leadsExhausted: number;
  /** Leads never dialled. */
  leadsFresh: number;
  realSeconds: number;
}

const pct = (value: number) => `${(value * 100).toFixed(2)}%`;

/** The summary as aligned lines for a terminal. */
export function formatSummary(summary: DaySummary): string {
  const rows: [string, string][] = [
    ["mode", `${summary.mode}, ${summary.agents} agents, ${summary.hours} h, seed ${summary.seed}`],
    ["calls placed", String(summary.callsPlaced)],
    ["calls ended", String(summary.callsEnded)],
    ["live answers", `${summary.liveAnswers} (answer rate ${pct(summary.answerRate)})`],
    ["answering machines", String(summary.machines)],
    [
      "abandoned",
      `${summary.abandons}: ${pct(summary.abandonRate)} of live answers (${summary.windowBasis.replaceAll("_", " ")} window)`,
    ],
    ["agent occupancy", pct(summary.occupancy)],
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
