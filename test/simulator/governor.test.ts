import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { cdrs } from "../../db/schema/calls.ts";
import { DEMO_MODEL } from "../../src/demo/edge-node.ts";
import { abandonLimitOf, checkLimit } from "../../src/simulator/abandon-limit.ts";
import {
  type DayOptions,
  type DayResult,
  type PacingMode,
  simulateDay,
} from "../../src/simulator/contact-center.ts";
import { assertLegalDay, legalStart, PROFILE_LEADS } from "../../src/simulator/legal-day.ts";
import { DEFAULT_MODEL, type OutcomeModel } from "../../src/simulator/outcome-model.ts";
import { formatSummary } from "../../src/simulator/summary.ts";
import { resetDatabase } from "../helpers/database.ts";

/**
 * Days short enough for the suite (two shared cores): the governor is at its tightest in the
 * first minutes, when few answers have earned any budget.
 */
async function day(options: {
  mode: PacingMode;
  ratio: number;
  agents: number;
  leads: number;
  minutes: number;
  model: OutcomeModel;
  profile?: DayOptions["profile"];
}): Promise<DayResult> {
  const result = await simulateDay({
    agents: options.agents,
    leads: options.leads,
    hours: options.minutes / 60,
    mode: options.mode,
    ratio: options.ratio,
    maxAbandonRate: 0.03,
    profile: options.profile ?? "us",
    seed: 1,
    model: options.model,
    tickMs: 1_000,
    sampleMs: 60_000,
    database: await resetDatabase(),
  });
  await result.close();
  return result;
}

const governorHeldCalls = async (result: DayResult) => {
  const { deps, campaignId } = result.world;
  const rows = await deps.db.select().from(cdrs).where(eq(cdrs.campaignId, campaignId));
  return rows.filter((row) => row.governorHeld).length;
};

/** The limit kept over the day, over its first 30 minutes and at every moment. */
function expectKept(result: DayResult) {
  const { limit } = result.summary;
  expect(limit.limit.rate).toBe(0.03);
  expect(limit.day.kept).toBe(true);
  expect(limit.opening.kept).toBe(true);
  expect(limit.everyMoment.kept).toBe(true);
  expect(limit.everyMoment.worst.margin).toBeGreaterThanOrEqual(0);
  expect(result.summary.abandonRate).toBeLessThanOrEqual(0.03);
  expect(result.summary.openingAbandonRate).toBeLessThanOrEqual(0.03);
}

/** `npm run demo`'s campaign: progressive at 2, four agents, 30 s calls; answer rate 0.6. */
const demo = (profile: DayOptions["profile"]) =>
  day({
    mode: "progressive",
    ratio: 2,
    agents: 4,
    leads: 700,
    minutes: 30,
    model: { ...DEMO_MODEL, answerRate: 0.6 },
    profile,
  });

describe("the demo's settings over half an hour", () => {
  let us: DayResult;
  let none: DayResult;
  let held: number;
  beforeAll(async () => {
    us = await demo("us");
    held = await governorHeldCalls(us);
    none = await demo("none");
    // Two half-hour days: seconds each, more on a busy machine.
  }, 60_000);

  test("under us the governor holds the limit at every moment, over the day and its first 30 minutes", () => {
    expectKept(us);
    expect(us.summary.liveAnswers).toBeGreaterThan(100);
    expect(held).toBeGreaterThan(0);
    const text = formatSummary(us.summary);
    expect(text).toContain("the us profile's, over 30 days, or the campaign's life if shorter");
    expect(text).toMatch(/at every moment +kept the 3 % limit/);
    expect(text).not.toContain("broke");
    expect(text.split("\n")[0]).toMatch(/^verdict +the 3\.00% abandon limit was kept$/);
  });

  test("under none the same campaign abandons a fifth of its answers, and the summary says so", () => {
    expect(none.summary.abandonRate).toBeGreaterThan(0.15);
    expect(none.summary.limit.day.kept).toBe(false);
    expect(none.summary.limit.opening.kept).toBe(false);
    expect(none.summary.limit.everyMoment.kept).toBe(false);
    const text = formatSummary(none.summary);
    expect(text).toContain("the none profile sets no limit");
    expect(text).toMatch(
      /over the day +broke the 3 % limit: \d+\.\d\d% \(\d+ of \d+ live answers\)/,
    );
    expect(text).toMatch(/at every moment +broke the 3 % limit: worst at minute \d+/);
    // Said first, in plain words.
    expect(text.split("\n")[0]).toMatch(
      /^verdict +THE 3\.00% ABANDON LIMIT WAS BROKEN \(over the day, in the first 30 min, at some moment\)/,
    );
  });

  test("holding the limit costs occupancy", () => {
    expect(us.summary.occupancy).toBeLessThan(none.summary.occupancy);
    expect(us.summary.callsPlaced).toBeLessThan(none.summary.callsPlaced);
  });

  afterAll(async () => {
    await resetDatabase();
  });
});

describe("the pacing grid under us: every mode at caps 2 to 5 holds the limit", () => {
  // The bench's modes and caps (bench/simulations.ts) on ten minutes of ten agents,
  // with short calls so that answers earn budget within the day.
  const model: OutcomeModel = {
    ...DEFAULT_MODEL,
    answerRate: 0.5,
    talk: { mean: 30_000, cv: 0.8 },
    wrap: { mean: 6_000, cv: 0.4 },
  };
  const runs = (["predictive", "progressive", "ratio"] as const).flatMap((mode) =>
    [2, 3, 4, 5].map((ratio) => ({ mode, ratio })),
  );
  const results = new Map<string, DayResult>();
  beforeAll(async () => {
    for (const run of runs)
      results.set(
        `${run.mode} ${run.ratio}`,
        await day({ ...run, agents: 10, leads: 1_000, minutes: 10, model }),
      );
  }, 120_000);

  for (const run of runs)
    test(`${run.mode} at ${run.ratio}`, () => {
      const result = results.get(`${run.mode} ${run.ratio}`) as DayResult;
      expectKept(result);
      expect(result.summary.liveAnswers).toBeGreaterThan(50);
    });

  afterAll(async () => {
    await resetDatabase();
  });
});

describe("a node that answers every call at once", () => {
  const instant: OutcomeModel = {
    ...DEFAULT_MODEL,
    answerRate: 1,
    machineRate: 0,
    busyRate: 0,
    failedRate: 0,
    ring: { mean: 0, cv: 0.5 },
    talk: { mean: 30_000, cv: 0.8 },
    wrap: { mean: 6_000, cv: 0.4 },
  };
  const results: DayResult[] = [];
  beforeAll(async () => {
    for (const [mode, ratio] of [
      ["progressive", 2],
      ["ratio", 5],
    ] as const)
      results.push(
        await day({ mode, ratio, agents: 10, leads: 1_000, minutes: 10, model: instant }),
      );
  }, 60_000);

  test("still keeps abandons ≤ limit × live answers + 1 at every moment", () => {
    for (const { summary } of results) {
      expect(summary.liveAnswers).toBe(summary.callsPlaced);
      expect(summary.liveAnswers).toBeGreaterThan(100);
      expect(summary.limit.everyMoment.kept).toBe(true);
      expect(summary.limit.day.kept).toBe(true);
    }
  });

  afterAll(async () => {
    await resetDatabase();
  });
});

describe("the simulated day and its limit", () => {
  const newYork = { timezone: "America/New_York", phone: PROFILE_LEADS.us.phone(0) };

  test("a shift starts at 09:00 local, earlier when it must to end by the close, never out of hours", () => {
    expect(new Date(legalStart({ profile: "us", lead: newYork }, 8)).toISOString()).toBe(
      "2026-03-03T14:00:00.000Z",
    );
    // 13 hours: the whole of 08:00–21:00.
    expect(new Date(legalStart({ profile: "us", lead: newYork }, 13)).toISOString()).toBe(
      "2026-03-03T13:00:00.000Z",
    );
    expect(() => legalStart({ profile: "us", lead: newYork }, 13.5)).toThrow(/does not fit/);
    // Canada's weekday hours start at 09:00 and, within the campaign's window, end at 21:00.
    const toronto = { timezone: PROFILE_LEADS.ca.timezone, phone: PROFILE_LEADS.ca.phone(0) };
    expect(() => legalStart({ profile: "ca", lead: toronto }, 12.5)).toThrow(/does not fit/);
    const london = { timezone: PROFILE_LEADS.uk.timezone, phone: PROFILE_LEADS.uk.phone(0) };
    expect(new Date(legalStart({ profile: "uk", lead: london }, 2)).toISOString()).toBe(
      "2026-03-03T09:00:00.000Z",
    );
    // 09:00 in New York is 06:00 in Los Angeles.
    expect(() =>
      assertLegalDay(
        { profile: "us", lead: { ...newYork, timezone: "America/Los_Angeles" } },
        Date.parse("2026-03-03T14:00:00Z"),
        1,
      ),
    ).toThrow(/outside the hours.*US profile's hours/);
    expect(() =>
      assertLegalDay({ profile: "us", lead: newYork }, Date.parse("2026-03-03T14:00:00Z"), 12.5),
    ).toThrow(/from 2026-03-04T02:00:00.000Z/);
  });

  test("the limit is the lower of the profile's and the campaign's, or the campaign's own under none", () => {
    const at = Date.parse("2026-03-03T14:00:00Z");
    expect(abandonLimitOf("us", 0.03, at).rate).toBe(0.03);
    expect(abandonLimitOf("uk", 0.05, at)).toEqual({
      rate: 0.03,
      source: "the uk profile's, over 24 h",
    });
    expect(abandonLimitOf("ca", 0.05, at)).toEqual({
      rate: 0.05,
      source: "the ca profile's, per calendar month",
    });
    expect(abandonLimitOf("ca", 0.03, at).source).toContain("below the ca profile's 5 %");
    expect(abandonLimitOf("none", 0.02, at).rate).toBe(0.02);
  });

  test("every moment: abandons ≤ limit × live answers + 1, read between instants", () => {
    const start = Date.parse("2026-03-03T14:00:00Z");
    const entry = (second: number, verdict: "answer" | "abandon", id = `${second}-${verdict}`) => ({
      callId: id,
      answeredAt: start + second * 1_000,
      bridgeMs: null,
      verdict,
      reason: verdict === "abandon" ? ("no_agent" as const) : ("bridged" as const),
    });
    const limit = { rate: 0.03, source: "test" };
    // One abandon first: 1 ≤ 0.03 + 1.
    const first = checkLimit([entry(1, "abandon")], start, limit);
    expect(first.everyMoment.kept).toBe(true);
    expect(first.day.kept).toBe(false);
    // A second abandon after ten answers: 2 > 0.03 × 12 + 1.
    const ten = Array.from({ length: 10 }, (_, i) => entry(2 + i, "answer"));
    const broken = checkLimit([entry(1, "abandon"), ...ten, entry(20, "abandon")], start, limit);
    expect(broken.everyMoment.kept).toBe(false);
    expect(broken.everyMoment.worst).toMatchObject({ at: 20_000, liveAnswers: 12, abandons: 2 });
    expect(broken.everyMoment.worst.margin).toBeCloseTo(0.03 * 12 + 1 - 2, 9);
    // After 31 answers, an abandon and an answer at one instant: 2 ≤ 0.03 × 34 + 1, though
    // 2 > 0.03 × 33 + 1 if the answer were counted after the abandon.
    const more = Array.from({ length: 31 }, (_, i) => entry(2 + i, "answer"));
    const together = checkLimit(
      [entry(1, "abandon"), ...more, entry(40, "abandon"), entry(40, "answer")],
      start,
      limit,
    );
    expect(together.everyMoment.kept).toBe(true);
    expect(together.everyMoment.worst).toMatchObject({ at: 40_000, liveAnswers: 34, abandons: 2 });
    expect(checkLimit([], start, limit).everyMoment).toMatchObject({
      kept: true,
      worst: { margin: 1 },
    });
  });
});
