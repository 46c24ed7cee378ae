import { describe, expect, test } from "bun:test";
import {
  dayList,
  narrowerDays,
  type WeeklyHours,
  weekText,
} from "../../src/console/client/weekly-hours.ts";

const every = (start: string, end: string): WeeklyHours => ({
  sun: { start, end },
  mon: { start, end },
  tue: { start, end },
  wed: { start, end },
  thu: { start, end },
  fri: { start, end },
  sat: { start, end },
});

describe("a week's calling hours in words", () => {
  test("the same hours every day", () => {
    expect(weekText(every("08:00", "21:00"))).toBe("08:00–21:00 every day");
  });

  test("runs of days, Monday first, with days without calls", () => {
    const canada = {
      ...every("09:00", "21:30"),
      sat: { start: "10:00", end: "18:00" },
      sun: { start: "10:00", end: "18:00" },
    };
    expect(weekText(canada)).toBe("Mon–Fri 09:00–21:30, Sat–Sun 10:00–18:00");
    const noWeekends = { ...every("08:00", "21:00"), sat: null, sun: null };
    expect(weekText(noWeekends)).toBe("Mon–Fri 08:00–21:00, Sat–Sun no calls");
    const oneDay = { ...every("08:00", "21:00"), wed: { start: "10:00", end: "17:00" } };
    expect(weekText(oneDay)).toBe("Mon–Tue 08:00–21:00, Wed 10:00–17:00, Thu–Sun 08:00–21:00");
  });

  test("the days a profile narrows the campaign's window", () => {
    const window = { start: "08:00", end: "21:00" };
    expect(narrowerDays(window, every("08:00", "21:00"))).toEqual([]);
    expect(dayList(narrowerDays({ start: "00:00", end: "23:59" }, every("08:00", "21:00")))).toBe(
      "every day",
    );
    expect(dayList(narrowerDays(window, { ...every("08:00", "21:00"), sun: null }))).toBe("Sun");
  });
});
