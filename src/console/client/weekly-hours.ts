/** A day's calling hours ("HH:MM"), or null for a day without calls. */
export type DayHours = { start: string; end: string } | null;
export type Weekday = "sun" | "mon" | "tue" | "wed" | "thu" | "fri" | "sat";
export type WeeklyHours = Record<Weekday, DayHours>;

/** The week as a reader expects it, Monday first (the API's own order starts on Sunday). */
const WEEK: readonly Weekday[] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const DAY_NAMES: Record<Weekday, string> = {
  mon: "Mon",
  tue: "Tue",
  wed: "Wed",
  thu: "Thu",
  fri: "Fri",
  sat: "Sat",
  sun: "Sun",
};

const hoursText = (hours: DayHours) => (hours ? `${hours.start}–${hours.end}` : "no calls");
const sameHours = (a: DayHours, b: DayHours) =>
  a === b || (a !== null && b !== null && a.start === b.start && a.end === b.end);

/** "Mon", "Sat–Sun", "Mon–Fri": a run of consecutive days. */
function daysText(days: readonly Weekday[]): string {
  const first = days[0] as Weekday;
  const last = days.at(-1) as Weekday;
  return first === last ? DAY_NAMES[first] : `${DAY_NAMES[first]}–${DAY_NAMES[last]}`;
}

/**
 * A week's hours in a few words, consecutive days with the same hours taken together:
 * "08:00–21:00 every day", "Mon–Fri 09:00–21:00, Sat–Sun 10:00–18:00".
 */
export function weekText(week: WeeklyHours): string {
  const runs: { days: Weekday[]; hours: DayHours }[] = [];
  for (const day of WEEK) {
    const last = runs.at(-1);
    if (last && sameHours(last.hours, week[day])) last.days.push(day);
    else runs.push({ days: [day], hours: week[day] });
  }
  if (runs.length === 1) return `${hoursText(runs[0]?.hours ?? null)} every day`;
  return runs.map((run) => `${daysText(run.days)} ${hoursText(run.hours)}`).join(", ");
}

/** The days whose effective hours are not the campaign's whole window, Monday first. */
export function narrowerDays(window: { start: string; end: string }, week: WeeklyHours) {
  return WEEK.filter((day) => !sameHours(week[day], window));
}

/** "every day", "Sat, Sun": the days a note is about. */
export const dayList = (days: readonly Weekday[]) =>
  days.length === WEEK.length ? "every day" : days.map((day) => DAY_NAMES[day]).join(", ");
