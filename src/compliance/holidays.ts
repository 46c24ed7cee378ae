import Holidays, { type HolidaysTypes } from "date-holidays";

/**
 * The holiday types that close a state that bans calls on holidays: only `public` ones (days
 * off by law), not observances (Valentine's Day), optional days or bank holidays. A holiday
 * on a weekend counts on its own date and on its observed weekday (`substitute`), both as
 * date-holidays lists them.
 */
const COUNTED_TYPES: HolidaysTypes.HolidayType[] = ["public"];

/** Calendars per state, then per year: local date ("YYYY-MM-DD") → holiday name. */
const calendars = new Map<string, Map<number, ReadonlyMap<string, string>>>();

function calendar(state: string, year: number): ReadonlyMap<string, string> {
  let years = calendars.get(state);
  if (!years) {
    years = new Map();
    calendars.set(state, years);
  }
  let days = years.get(year);
  if (!days) {
    const found = new Map<string, string>();
    const source = new Holidays("US", state, { types: COUNTED_TYPES, languages: "en" });
    for (const holiday of source.getHolidays(year) || []) {
      const date = holiday.date.slice(0, 10);
      // A Saturday holiday of next year observed this year is listed in this year.
      if (date.startsWith(String(year))) found.set(date, holiday.name);
    }
    days = found;
    years.set(year, days);
  }
  return days;
}

/** The name of the US state's public holiday on a local date ("YYYY-MM-DD"), if it is one. */
export function usStateHoliday(state: string, date: string): string | undefined {
  return calendar(state, Number(date.slice(0, 4))).get(date);
}
