import { describe, expect, test } from "bun:test";
import { usStateHoliday } from "../../src/compliance/holidays.ts";
import { nextZoneDay, wallInstant, zoneDay } from "../../src/compliance/zone-day.ts";

const iso = (instant: number) => new Date(instant).toISOString();
const NY = "America/New_York";

describe("a zone's local day", () => {
  test("an ordinary day: 24 hours, wall times by arithmetic", () => {
    const day = zoneDay(NY, Date.parse("2026-06-01T16:00:00Z"));
    expect({ date: day.date, weekday: day.weekday, steady: day.steady }).toEqual({
      date: "2026-06-01",
      weekday: 1,
      steady: true,
    });
    expect([iso(day.start), iso(day.end)]).toEqual([
      "2026-06-01T04:00:00.000Z",
      "2026-06-02T04:00:00.000Z",
    ]);
    expect(iso(wallInstant(day, 8 * 60, "opens"))).toBe("2026-06-01T12:00:00.000Z");
  });

  test("the spring-forward day has 23 hours and no 02:00–03:00", () => {
    const day = zoneDay(NY, Date.parse("2026-03-08T12:00:00Z"));
    expect(day.date).toBe("2026-03-08");
    expect(day.steady).toBe(false);
    expect(day.end - day.start).toBe(23 * 3_600_000);
    // Before the gap in EST, after it in EDT; inside it, both sides give the jump (03:00 EDT).
    expect(iso(wallInstant(day, 60, "opens"))).toBe("2026-03-08T06:00:00.000Z");
    expect(iso(wallInstant(day, 150, "opens"))).toBe("2026-03-08T07:00:00.000Z");
    expect(iso(wallInstant(day, 150, "closes"))).toBe("2026-03-08T07:00:00.000Z");
    expect(iso(wallInstant(day, 8 * 60, "opens"))).toBe("2026-03-08T12:00:00.000Z");
  });

  test("the fall-back day has 25 hours and 01:00–02:00 twice", () => {
    const day = zoneDay(NY, Date.parse("2026-11-01T12:00:00Z"));
    expect(day.end - day.start).toBe(25 * 3_600_000);
    // A window opens at the later 01:30 (EST) and closes at the earlier one (EDT).
    expect(iso(wallInstant(day, 90, "opens"))).toBe("2026-11-01T06:30:00.000Z");
    expect(iso(wallInstant(day, 90, "closes"))).toBe("2026-11-01T05:30:00.000Z");
    expect(iso(wallInstant(day, 8 * 60, "closes"))).toBe("2026-11-01T13:00:00.000Z");
  });

  test("days follow one another without gaps, whatever the instant asked about", () => {
    let day = zoneDay("Europe/London", Date.parse("2026-03-27T23:59:59Z"));
    for (let index = 0; index < 5; index++) {
      const next = nextZoneDay(day);
      expect(next.start).toBe(day.end);
      expect(zoneDay(day.zone, day.end - 1)).toBe(day);
      expect(zoneDay(day.zone, day.end)).toBe(next);
      day = next;
    }
    expect(day.date).toBe("2026-04-01");
  });
});

describe("state holidays from date-holidays", () => {
  test.each([
    ["AL", "2026-07-03", "Independence Day (substitute day)"],
    ["AL", "2026-07-04", "Independence Day"],
    ["UT", "2027-07-05", "Independence Day (substitute day)"],
    ["AL", "2027-12-31", "New Year's Day (substitute day)"],
    ["UT", "2026-07-24", "Pioneer Day"],
    ["RI", "2026-08-10", "Victory Day"],
    ["AL", "2026-07-02", undefined],
    ["AL", "2026-02-14", undefined],
  ])("%s %s", (state, date, name) => {
    expect(usStateHoliday(state, date)).toBe(name);
  });
});
