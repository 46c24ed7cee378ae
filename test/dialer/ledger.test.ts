import { describe, expect, test } from "bun:test";
import {
  abandonBudget,
  ComplianceLedger,
  DAY_VIEW_MS,
  entriesFromCdrs,
  evidenceCsv,
  LEGAL_WINDOW_MS,
  type LedgerEntry,
  ledgerEntryOf,
  legalWindow,
  RETAINED_MS,
  verdictsFromCdrs,
} from "../../src/dialer/ledger.ts";
import { ManualClock } from "../helpers/clock.ts";

const FIRST_START = Date.parse("2026-03-02T12:00:00Z");
const LIMIT = { firstStartedAt: FIRST_START, maxAbandonRate: 0.03 };

const answer = (callId: string, answeredAt: number): LedgerEntry => ({
  callId,
  answeredAt,
  bridgeMs: 150,
  verdict: "answer",
  reason: "bridged",
});
const abandon = (callId: string, answeredAt: number): LedgerEntry => ({
  callId,
  answeredAt,
  bridgeMs: null,
  verdict: "abandon",
  reason: "no_agent",
});

describe("abandon budget", () => {
  test.each([
    // live answers, abandons, limit, budget
    [0, 0, 0.03, 0],
    [100, 0, 0.03, 3],
    [100, 3, 0.03, 0],
    [97, 3, 0.03, 0],
    // 3 more abandons over 97 answers is 3 in 100: exactly at the limit, so allowed.
    [97, 0, 0.03, 3],
    [194, 0, 0.03, 6],
    [1000, 10, 0.03, 20],
    [1000, 0, 0, 0],
    [50, 0, 0.1, 5],
  ])("%i answers, %i abandons, limit %d: %i more", (answers, abandons, limit, budget) => {
    expect(abandonBudget(answers, abandons, limit)).toBe(budget);
    if (budget > 0 && limit > 0) {
      // The budget is the largest number that keeps the rate within the limit.
      expect((abandons + budget) / (answers + budget)).toBeLessThanOrEqual(limit + 1e-12);
      expect((abandons + budget + 1) / (answers + budget + 1)).toBeGreaterThan(limit);
    }
  });
});

describe("how a call counts", () => {
  test.each([
    ["answered", 150, "answer", "bridged"],
    ["answered", 2_000, "answer", "bridged"],
    ["answered", 2_001, "abandon", "bridged_late"],
    ["answered", null, "answer", "bridged"],
    ["abandoned", null, "abandon", "no_agent"],
  ] as const)("%s with a bridge of %p ms: %s (%s)", (outcome, bridgeMs, verdict, reason) => {
    expect(ledgerEntryOf({ callId: "c", outcome, answeredAt: FIRST_START, bridgeMs })).toEqual({
      callId: "c",
      answeredAt: FIRST_START,
      bridgeMs: outcome === "abandoned" ? null : bridgeMs,
      verdict,
      reason,
    });
  });

  test.each(["machine", "no_answer", "busy", "failed", "cancelled"] as const)(
    "%s is not a live answer",
    (outcome) => {
      expect(ledgerEntryOf({ callId: "c", outcome, answeredAt: FIRST_START })).toBeUndefined();
    },
  );

  test("CDR rows become entries; rows nobody answered are left out", () => {
    const rows = [
      {
        callId: "a",
        outcome: "answered" as const,
        answeredAt: new Date(FIRST_START),
        bridgeMs: 90,
      },
      { callId: "b", outcome: "no_answer" as const, answeredAt: null },
      { callId: "c", outcome: "abandoned" as const, answeredAt: new Date(FIRST_START + 5) },
      { callId: "d", outcome: "answered" as const, answeredAt: null },
    ];
    expect(entriesFromCdrs(rows).map((entry) => [entry.callId, entry.verdict])).toEqual([
      ["a", "answer"],
      ["c", "abandon"],
    ]);
  });
});

describe("windows on a simulated clock", () => {
  const DAY = DAY_VIEW_MS;
  const THIRTY_DAYS = LEGAL_WINDOW_MS;

  test("the campaign's life until it is 30 days old, then the rolling 30 days", () => {
    const clock = new ManualClock(FIRST_START);
    const ledger = ComplianceLedger.from([
      abandon("at-start", FIRST_START),
      answer("a1", FIRST_START + DAY),
    ]);
    clock.advance(THIRTY_DAYS - 1);
    const young = ledger.report(clock.now(), LIMIT);
    expect(young.basis).toBe("campaign");
    expect(young.window).toMatchObject({ from: FIRST_START, liveAnswers: 2, abandons: 1 });
    clock.advance(1);
    // Exactly 30 days after the first start: the answer at the start is 30 days old, and out.
    const rolling = ledger.report(clock.now(), LIMIT);
    expect(rolling.basis).toBe("rolling_30_days");
    expect(rolling.window).toMatchObject({ from: FIRST_START + 1, liveAnswers: 1, abandons: 0 });
  });

  test.each([
    // offset of the answer from now, in the legal window, in the 24-hour view
    ["now", 0, true, true],
    ["1 ms ahead of now", 1, false, false],
    ["24 h less 1 ms ago", -(DAY - 1), true, true],
    ["exactly 24 h ago", -DAY, true, false],
    ["30 days less 1 ms ago", -(THIRTY_DAYS - 1), true, false],
    ["exactly 30 days ago", -THIRTY_DAYS, false, false],
  ])("an abandon answered %s", (_label, offset, inWindow, inDay) => {
    const clock = new ManualClock(FIRST_START + 45 * DAY);
    const ledger = ComplianceLedger.from([
      abandon("x", clock.now() + offset),
      answer("steady", clock.now() - 1000),
    ]);
    const report = ledger.report(clock.now(), LIMIT);
    expect(report.window.abandons).toBe(inWindow ? 1 : 0);
    expect(report.window.liveAnswers).toBe(inWindow ? 2 : 1);
    expect(report.day.abandons).toBe(inDay ? 1 : 0);
    expect(report.day.liveAnswers).toBe(inDay ? 2 : 1);
  });

  test("rates, the smaller budget of the two views, and a report that only reads", () => {
    const clock = new ManualClock(FIRST_START + 40 * DAY);
    const entries: LedgerEntry[] = [];
    // 200 answers spread over the last 20 days, and 4 abandons, 2 of them today.
    for (let index = 0; index < 200; index++)
      entries.push(answer(`a${index}`, clock.now() - index * 2.4 * 3_600_000 - 1));
    for (const [index, hoursAgo] of [5, 30, 100, 2].entries())
      entries.push(abandon(`x${index}`, clock.now() - hoursAgo * 3_600_000));
    const ledger = ComplianceLedger.from(entries);
    const report = ledger.report(clock.now(), LIMIT);
    expect(report.window).toMatchObject({ liveAnswers: 204, abandons: 4 });
    expect(report.window.abandonRate).toBeCloseTo(4 / 204, 12);
    expect(report.window.budget).toBe(abandonBudget(204, 4, 0.03));
    expect(report.day).toMatchObject({ liveAnswers: 12, abandons: 2 });
    expect(report.budget).toBe(Math.min(report.window.budget, report.day.budget));
    expect(report.budget).toBe(0);
    expect(ledger.report(clock.now(), LIMIT)).toEqual(report);
  });
});

describe("recording", () => {
  test("a call counts once, out-of-order ends are kept in answer order", () => {
    const ledger = new ComplianceLedger();
    expect(ledger.record(answer("late-end", FIRST_START + 500))).toBe(true);
    expect(ledger.record(abandon("early-answer", FIRST_START + 100))).toBe(true);
    expect(ledger.record(answer("late-end", FIRST_START + 500))).toBe(false);
    const evidence = [...ledger.evidence(FIRST_START + 1000, FIRST_START)];
    expect(evidence.map((entry) => entry.callId)).toEqual(["early-answer", "late-end"]);
    expect(ledger.report(FIRST_START + 1000, LIMIT).window).toMatchObject({
      liveAnswers: 2,
      abandons: 1,
    });
  });

  test("entries older than 31 days (the longest calendar month) are pruned and no longer accepted", () => {
    const ledger = new ComplianceLedger();
    const hour = 3_600_000;
    for (let index = 0; index < 40 * 24; index++)
      ledger.record(
        index % 10 === 0
          ? abandon(`c${index}`, FIRST_START + index * hour)
          : answer(`c${index}`, FIRST_START + index * hour),
      );
    const newest = FIRST_START + (40 * 24 - 1) * hour;
    // Answers at newest − 31 days and before are gone: the last 31 × 24 hours remain.
    expect(ledger.size).toBe(31 * 24);
    expect(ledger.record(answer("stale", newest - RETAINED_MS))).toBe(false);
    expect(ledger.record(answer("kept", newest - RETAINED_MS + 1))).toBe(true);
    const report = ledger.report(newest, LIMIT);
    expect(report.basis).toBe("rolling_30_days");
    expect(report.window.liveAnswers).toBe(30 * 24);
    expect(report.window.abandons).toBe(72);
  });
});

describe("the window of each profile's period", () => {
  const HOUR = 3_600_000;
  const now = Date.parse("2026-03-31T18:00:00Z");
  const longAgo = Date.parse("2025-01-01T00:00:00Z");

  test.each([
    // period, first start, basis, from
    ["us", longAgo, "rolling_30_days", now - LEGAL_WINDOW_MS + 1],
    ["us", now - 3 * HOUR, "campaign", now - 3 * HOUR],
    ["uk", longAgo, "rolling_24_hours", now - 24 * HOUR + 1],
    ["uk", now - 3 * HOUR, "campaign", now - 3 * HOUR],
    ["ca", longAgo, "calendar_month", Date.parse("2026-03-01T00:00:00Z")],
    ["ca", Date.parse("2026-03-10T00:00:00Z"), "campaign", Date.parse("2026-03-10T00:00:00Z")],
  ] as const)("%s, first started at %d: %s", (profile, firstStartedAt, basis, from) => {
    const period = {
      us: { kind: "rolling", hours: 720, campaignIfShorter: true },
      uk: { kind: "rolling", hours: 24 },
      ca: { kind: "calendar_month" },
    } as const;
    expect(legalWindow(period[profile], now, firstStartedAt)).toEqual({ basis, from, to: now });
  });

  test("a calendar month counts its first day on its 31st, past 30 days", () => {
    const monthStart = Date.parse("2026-03-01T00:00:00Z");
    const ledger = ComplianceLedger.from([
      abandon("first-hour", monthStart + HOUR),
      answer("last-day", now - HOUR),
      abandon("last-month", monthStart - HOUR),
    ]);
    const report = ledger.report(now, {
      firstStartedAt: longAgo,
      maxAbandonRate: 0.05,
      period: { kind: "calendar_month" },
    });
    expect(report.basis).toBe("calendar_month");
    expect(report.window).toMatchObject({ from: monthStart, liveAnswers: 2, abandons: 1 });
    expect(
      [...ledger.evidence(now, longAgo, { kind: "calendar_month" })].map((e) => e.callId),
    ).toEqual(["first-hour", "last-day"]);
  });
});

test("the evidence CSV has one row per counted call", () => {
  const ledger = ComplianceLedger.from([
    answer("0190c0de-0000-7000-8000-000000000001", FIRST_START + 1000),
    {
      callId: "0190c0de-0000-7000-8000-000000000002",
      answeredAt: FIRST_START + 2000,
      bridgeMs: 2600,
      verdict: "abandon",
      reason: "bridged_late",
    },
    abandon("0190c0de-0000-7000-8000-000000000003", FIRST_START + 3000),
  ]);
  const csv = evidenceCsv(ledger.evidence(FIRST_START + 10_000, FIRST_START));
  expect(csv.split("\r\n")).toEqual([
    "call_id,answered_at,bridge_ms,counted_as,reason",
    "0190c0de-0000-7000-8000-000000000001,2026-03-02T12:00:01.000Z,150,answer,bridged",
    "0190c0de-0000-7000-8000-000000000002,2026-03-02T12:00:02.000Z,2600,abandon,bridged_late",
    "0190c0de-0000-7000-8000-000000000003,2026-03-02T12:00:03.000Z,,abandon,no_agent",
    "",
  ]);
});

describe("detection's false positives, estimated", () => {
  test("machine verdicts hung up on × the people among the judged samples count as answered and abandoned", () => {
    const at = FIRST_START + 1_000;
    const ledger = ComplianceLedger.from(
      [answer("a1", at), answer("a2", at), answer("a3", at)],
      [
        ...Array.from({ length: 10 }, (_, i) => ({
          kind: "machine" as const,
          callId: `m${i}`,
          answeredAt: at,
        })),
        { kind: "sample", callId: "s1", answeredAt: at, person: true },
        { kind: "sample", callId: "s2", answeredAt: at, person: false },
        // A repeat of a call already counted changes nothing.
        { kind: "sample", callId: "s2", answeredAt: at, person: true },
      ],
    );
    const view = ledger.view(FIRST_START, at, 0.5);
    // Half the judged samples were people: 5 of the 10 machines hung up on.
    expect(view).toMatchObject({
      liveAnswers: 3,
      abandons: 0,
      estimatedFalsePositives: 5,
      abandonRate: 5 / 8,
      budget: 0,
    });
    // Without a judged sample there is no estimate.
    const unjudged = ComplianceLedger.from(
      [answer("a1", at)],
      [{ kind: "machine", callId: "m", answeredAt: at }],
    );
    expect(unjudged.view(FIRST_START, at, 0.03).estimatedFalsePositives).toBe(0);
  });

  test("from CDRs: a machine hung up on, a sampled verdict judged; others are not verdicts", () => {
    const answeredAt = new Date(FIRST_START);
    const amd = (sampled: boolean) => ({
      result: "machine" as const,
      confidence: 1,
      ms: 1,
      sampled,
    });
    expect(
      verdictsFromCdrs([
        { callId: "m", outcome: "machine", answeredAt, media: { amd: amd(false) } },
        {
          callId: "s",
          outcome: "answered",
          answeredAt,
          media: { amd: amd(true) },
          disposition: "answering_machine",
        },
        {
          callId: "p",
          outcome: "answered",
          answeredAt,
          media: { amd: amd(true) },
          disposition: "completed",
        },
        {
          callId: "u",
          outcome: "answered",
          answeredAt,
          media: { amd: amd(true) },
          disposition: null,
        },
        { callId: "h", outcome: "answered", answeredAt, media: null },
      ]),
    ).toEqual([
      { kind: "machine", callId: "m", answeredAt: FIRST_START },
      { kind: "sample", callId: "s", answeredAt: FIRST_START, person: false },
      { kind: "sample", callId: "p", answeredAt: FIRST_START, person: true },
    ]);
  });
});
