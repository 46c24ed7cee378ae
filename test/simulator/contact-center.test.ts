import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { calls, cdrs } from "../../db/schema/calls.ts";
import { ComplianceLedger, entriesFromCdrs } from "../../src/dialer/ledger.ts";
import { PACER_DEFAULTS } from "../../src/dialer/predictive.ts";
import { Agenda } from "../../src/simulator/agenda.ts";
import { dayChart } from "../../src/simulator/chart.ts";
import {
  type DayOptions,
  type DayResult,
  simulateDay,
} from "../../src/simulator/contact-center.ts";
import {
  abandonIntervals,
  OCCUPANCY_INTERVAL_MS,
  openingAbandonRate,
  spreadOf,
  WARM_UP_MS,
} from "../../src/simulator/intervals.ts";
import { DEFAULT_MODEL, drawCall } from "../../src/simulator/outcome-model.ts";
import { Random } from "../../src/simulator/random.ts";
import { formatSummary } from "../../src/simulator/summary.ts";
import { resetDatabase } from "../helpers/database.ts";

/** 09:00 in New York: inside the default calling window. */
const NINE_AM = Date.parse("2026-03-03T14:00:00Z");

const shortDay = async (
  mode: "ratio" | "predictive",
  minutes: number,
  maxAbandonRate: number,
  profile: DayOptions["profile"],
  onPace?: DayOptions["onPace"],
) =>
  simulateDay({
    agents: 12,
    leads: 400,
    hours: minutes / 60,
    mode,
    ratio: 3,
    maxAbandonRate,
    profile,
    seed: 5,
    model: DEFAULT_MODEL,
    startAt: NINE_AM,
    timezone: "America/New_York",
    tickMs: 1_000,
    sampleMs: 60_000,
    // Small enough for a few minutes of 12 agents to leave the progressive fallback.
    tuning: { ...PACER_DEFAULTS, minTeam: 8 },
    database: await resetDatabase(),
    onPace,
  });

/** The ledger the nodes fed, and one rebuilt from the CDRs the service wrote, call by call. */
async function ledgersOf(result: DayResult) {
  const { deps, campaignId } = result.world;
  const rows = await deps.db.select().from(cdrs).where(eq(cdrs.campaignId, campaignId));
  const now = deps.clock.now();
  const byCall = <T extends { callId: string }>(entries: T[]) =>
    entries.sort((a, b) => a.callId.localeCompare(b.callId));
  const fed = byCall([...result.ledger.evidence(now, result.firstStartedAt)]);
  const rebuilt = byCall(
    entriesFromCdrs(
      rows.map((row) => ({ ...row, bridgeMs: result.bridgeTimes.get(row.callId) ?? null })),
    ),
  );
  return { rows, fed, rebuilt, now };
}

describe("a short simulated shift through the real services", () => {
  let fixed: DayResult;
  let predictive: DayResult;
  beforeAll(async () => {
    // Under none: under a profile's limit the governor would hold it to reserved calls.
    fixed = await shortDay("ratio", 4, 0.03, "none");
    await fixed.close();
    const { rows, fed, rebuilt } = await ledgersOf(fixed);
    fixedLedgers = { rows: rows.length, fed, rebuilt };
    // At 10% the budget opens after a few answers; at 3% it takes 33 without an abandon,
    // more than a few minutes of 12 agents give.
    predictive = await shortDay("predictive", 5, 0.1, "us", (_at, _input, decision) =>
      decisions.push(decision.mode),
    );
    const { deps, campaignId } = predictive.world;
    const now = deps.clock.now();
    const limit = { firstStartedAt: predictive.firstStartedAt, maxAbandonRate: 0.1 };
    serviceReport = deps.campaigns.peek(campaignId)?.dialing?.ledger.report(now, limit);
    simulatorReport = predictive.ledger.report(now, limit);
    await predictive.close();
  });
  let fixedLedgers: { rows: number; fed: unknown[]; rebuilt: unknown[] };
  const decisions: string[] = [];
  let serviceReport: unknown;
  let simulatorReport: unknown;

  test("at a fixed ratio of 3 the ledger and the CDRs agree call by call, abandons included", () => {
    const { fed, rebuilt, rows } = fixedLedgers;
    expect(fed).toEqual(rebuilt);
    const verdicts = fed.map((entry) => (entry as { verdict: string }).verdict);
    expect(verdicts.filter((verdict) => verdict === "answer").length).toBeGreaterThan(10);
    // Dialling for busy agents as well, blind to the ledger, it abandons past the limit.
    expect(fixed.summary.abandonRate).toBeGreaterThan(0.03);
    // Every placed call ended, and has its CDR.
    expect(rows).toBe(fixed.summary.callsPlaced);
    expect(fixed.summary.callsEnded).toBe(fixed.summary.callsPlaced);
    expect(fixed.summary.liveAnswers).toBe(fed.length);
  });

  test("predictive: the ledger and the CDRs agree, and the report is the same either way", async () => {
    const { fed, rebuilt, rows, now } = await ledgersOf(predictive);
    expect(fed).toEqual(rebuilt);
    expect(fed.length).toBeGreaterThan(10);
    const limit = { firstStartedAt: predictive.firstStartedAt, maxAbandonRate: 0.1 };
    expect(ComplianceLedger.from(rebuilt).report(now, limit)).toEqual(
      predictive.ledger.report(now, limit),
    );
    expect(rows.length).toBe(predictive.summary.callsPlaced);
    // Once it has data the pacer dials ahead of the ready agents.
    expect(Math.max(...predictive.samples.map((sample) => sample.ratio))).toBeGreaterThan(1);
  });

  test("predictive: the service paced every claim, and its own ledger is the nodes' ledger", () => {
    expect(decisions).toContain("progressive");
    expect(decisions).toContain("predictive");
    expect(serviceReport).toEqual(simulatorReport);
  });

  test("the node's heartbeats keep long calls alive: every call ends as the node reported it", async () => {
    const { rows } = await ledgersOf(predictive);
    const causes = new Set(rows.map((row) => row.hangupCause));
    expect(causes).not.toContain("LEASE_EXPIRED");
    // Calls longer than a lease were among them.
    expect(rows.some((row) => row.talkSeconds > 60)).toBe(true);
  });

  test("nothing is left in flight, and the summary adds up", async () => {
    const { deps, campaignId } = predictive.world;
    const open = await deps.db.select().from(calls).where(eq(calls.campaignId, campaignId));
    expect(open.every((call) => call.status === "ended")).toBe(true);
    const { summary } = predictive;
    expect(summary.occupancy).toBeGreaterThan(0);
    expect(summary.occupancy).toBeLessThanOrEqual(1);
    expect(summary.leadsTotal).toBe(400);
    expect(summary.leadsFresh).toBeLessThan(400);
    expect(predictive.samples.map((sample) => sample.at)).toEqual([
      60_000, 120_000, 180_000, 240_000, 300_000,
    ]);
    expect(formatSummary(summary)).toContain("agent occupancy");
  });

  afterAll(async () => {
    await resetDatabase();
  });
});

describe("a short day of 100 agents at cap 5 meets the day-level goals", () => {
  let day: DayResult;
  beforeAll(async () => {
    day = await simulateDay({
      agents: 100,
      leads: 6_000,
      hours: 0.5,
      mode: "predictive",
      ratio: 5,
      maxAbandonRate: 0.03,
      // The predictive pacer's own goals: under a profile's limit the governor holds a team
      // this size far below them (docs/PACING.md, "The governor").
      profile: "none",
      seed: 2,
      model: DEFAULT_MODEL,
      startAt: NINE_AM,
      timezone: "America/New_York",
      tickMs: 1_000,
      sampleMs: 60_000,
      database: await resetDatabase(),
    });
    await day.close();
    // Half an hour of 100 agents: longer than a test's usual time on a shared machine.
  }, 180_000);

  test("no opening spike: the first 30 minutes and every 15 within the limit", () => {
    const { summary } = day;
    expect(summary.openingAbandonRate).toBeLessThanOrEqual(0.03);
    expect(summary.abandonRate).toBeLessThanOrEqual(0.03);
    for (const interval of day.intervals.abandons) expect(interval.rate).toBeLessThanOrEqual(0.06);
    expect(summary.worstAbandonInterval.rate).toBe(
      Math.max(...day.intervals.abandons.map((interval) => interval.rate)),
    );
  });

  test("no limit cycle: every 5 minutes after the first 15 at 85% occupancy or more", () => {
    const after = day.intervals.occupancy.filter((interval) => interval.from >= WARM_UP_MS);
    expect(after.length).toBe(3);
    for (const interval of after) {
      expect(interval.to - interval.from).toBe(OCCUPANCY_INTERVAL_MS);
      expect(interval.occupancy).toBeGreaterThanOrEqual(0.85);
    }
    expect(day.summary.lowestOccupancyInterval?.occupancy).toBe(
      Math.min(...after.map((interval) => interval.occupancy)),
    );
    // The dial ratio moves smoothly minute to minute: no swing between 1 and the cap.
    expect(day.summary.ratioAfterWarmUp.sd).toBeLessThan(0.6);
    expect(day.summary.ratioAfterWarmUp.p5).toBeGreaterThan(1.5);
  });

  test("the summary tells the whole story", () => {
    const text = formatSummary(day.summary);
    for (const line of ["first 30 min", "worst 15 min", "lowest 5 min", "dial ratio"])
      expect(text).toContain(line);
  });

  afterAll(async () => {
    await resetDatabase();
  });
});

describe("simulator pieces", () => {
  test("the agenda runs the earliest first, and same-instant actions in scheduling order", async () => {
    const agenda = new Agenda();
    const ran: string[] = [];
    for (const [at, name] of [
      [30, "c"],
      [10, "a"],
      [20, "b1"],
      [20, "b2"],
      [5, "first"],
    ] as const)
      agenda.at(at, () => {
        ran.push(name);
      });
    while (agenda.size > 0) await agenda.take()?.run();
    expect(ran).toEqual(["first", "a", "b1", "b2", "c"]);
  });

  test("the same seed draws the same calls, in the shares the model gives", () => {
    const draws = (seed: number) => {
      const random = new Random(seed);
      return Array.from({ length: 20_000 }, () => drawCall(DEFAULT_MODEL, random, 10));
    };
    const first = draws(3);
    expect(draws(3)).toEqual(first);
    expect(draws(4)).not.toEqual(first);
    const share = (kind: string) =>
      first.filter((call) => call.kind === kind).length / first.length;
    expect(share("person")).toBeCloseTo(0.3, 1);
    expect(share("machine")).toBeCloseTo(0.1, 1);
    const talks = first.flatMap((call) => (call.kind === "person" ? [call.talkMs] : []));
    expect(talks.reduce((sum, talk) => sum + talk, 0) / talks.length).toBeGreaterThan(110_000);
    expect(talks.reduce((sum, talk) => sum + talk, 0) / talks.length).toBeLessThan(130_000);
  });

  test("an hourly factor of 0 means nobody answers at that hour", () => {
    const random = new Random(1);
    const night = {
      ...DEFAULT_MODEL,
      hourly: DEFAULT_MODEL.hourly.map((factor, hour) => (hour === 3 ? 0 : factor)),
    };
    const calls = Array.from({ length: 2_000 }, () => drawCall(night, random, 3));
    expect(calls.some((call) => call.kind === "person")).toBe(false);
  });

  test("intervals: abandons by answer time, the opening, the spread of a series", () => {
    const entry = (minute: number, verdict: "answer" | "abandon") => ({
      callId: `${minute}-${verdict}-${Math.random()}`,
      answeredAt: NINE_AM + minute * 60_000,
      bridgeMs: null,
      verdict,
      reason: verdict === "abandon" ? ("no_agent" as const) : ("bridged" as const),
    });
    const entries = [
      ...Array.from({ length: 50 }, (_, i) => entry(i % 15, "answer")),
      entry(3, "abandon"),
      ...Array.from({ length: 20 }, (_, i) => entry(15 + (i % 15), "answer")),
      entry(20, "abandon"),
      entry(29, "abandon"),
      // Answered after the 45-minute shift: counted in its last interval.
      entry(50, "answer"),
    ];
    const intervals = abandonIntervals(entries, NINE_AM, 45 * 60_000);
    expect(intervals.map(({ liveAnswers, abandons }) => [liveAnswers, abandons])).toEqual([
      [51, 1],
      [22, 2],
      [1, 0],
    ]);
    expect(intervals[1]?.rate).toBeCloseTo(2 / 22, 9);
    expect(openingAbandonRate(entries, NINE_AM)).toBeCloseTo(3 / 73, 9);
    expect(spreadOf([1, 2, 3, 4])).toMatchObject({ mean: 2.5, p5: 1, p95: 4 });
    expect(spreadOf([2, 2, 2]).sd).toBe(0);
  });

  test("the chart is one SVG document with a line per measure and the limit dashed", () => {
    const svg = dayChart(
      [
        { at: 60_000, ratio: 1, abandonRate: 0, occupancy: 0.4 },
        { at: 120_000, ratio: 2.5, abandonRate: 0.02, occupancy: 0.9 },
      ],
      { title: "a <test> day", maxAbandonRate: 0.03 },
    );
    expect(svg.startsWith("<svg ")).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg.match(/<polyline /g)).toHaveLength(3);
    expect(svg).toContain("stroke-dasharray");
    expect(svg).toContain("a &lt;test&gt; day");
    const marked = dayChart(
      [
        { at: 60_000, ratio: 1, abandonRate: 0, occupancy: 0.4 },
        { at: 120_000, ratio: 2.5, abandonRate: 0.02, occupancy: 0.9 },
      ],
      {
        title: "marked",
        maxAbandonRate: 0.03,
        warmUpMs: 60_000,
        intervals: {
          abandons: [{ from: 0, to: 120_000, liveAnswers: 10, abandons: 1, rate: 0.1 }],
          occupancy: [{ from: 0, to: 120_000, occupancy: 0.7 }],
        },
      },
    );
    for (const label of ["limit", "2 × limit", "85%"]) expect(marked).toContain(`>${label}</text>`);
    // One step per interval and the warm-up, shaded.
    expect(marked.match(/opacity="0.15"/g)).toHaveLength(2);
    expect(marked.match(/opacity="0.05"/g)).toHaveLength(3);
  });
});
