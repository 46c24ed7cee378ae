import { localParts, offsetAt } from "../lib/zone-time.ts";

/**
 * One local calendar day in one zone, as the span of instants it covers. Calling windows are
 * wall-clock times on such a day; the day turns them into instants, on both sides of a DST
 * change. Days are cached per zone: everything a window asks of a day depends only on
 * (zone, local date).
 */
export interface ZoneDay {
  readonly zone: string;
  /** "YYYY-MM-DD" */
  readonly date: string;
  /** 0 = Sunday … 6 = Saturday. */
  readonly weekday: number;
  /** The first instant of the day, and of the next. */
  readonly start: number;
  readonly end: number;
  /** The zone's offset is the same all day, so a wall time is `start` plus its minutes. */
  readonly steady: boolean;
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * The instant at which a zone's wall clock reads `wall` (a wall time written as if it were
 * UTC). In a repeated hour there are two: `earliest` picks the first. In a gap there are
 * none: the first instant whose wall clock is past `wall` is the jump itself.
 */
function wallToInstant(zone: string, wall: number, pick: "earliest" | "latest"): number {
  const before = offsetAt(zone, wall - DAY);
  const after = offsetAt(zone, wall + DAY);
  const first = wall - Math.max(before, after);
  const second = wall - Math.min(before, after);
  const firstFits = offsetAt(zone, first) === Math.max(before, after);
  const secondFits = offsetAt(zone, second) === Math.min(before, after);
  if (firstFits && secondFits) return pick === "earliest" ? first : second;
  if (firstFits) return first;
  if (secondFits) return second;
  // A gap: the offset before the jump holds at `low`, the one after it at `high`. Offsets
  // change on whole seconds, so the jump is the whole second at or below `high` once the two
  // are a second apart.
  let low = wall - after;
  let high = wall - before;
  while (high - low > 1000) {
    const middle = Math.floor((low + high) / 2);
    if (offsetAt(zone, middle) === before) low = middle;
    else high = middle;
  }
  return Math.floor(high / 1000) * 1000;
}

interface DayRecord extends ZoneDay {
  next?: DayRecord;
  /** Wall minutes → instant, for a day that is not steady. */
  instants?: Map<number, number>;
}

interface ZoneDays {
  byDate: Map<string, DayRecord>;
  last?: DayRecord;
}

// A cache of days, bounded per zone: a year and a bit of days is far more than any horizon.
const MAX_DAYS_PER_ZONE = 400;
const zones = new Map<string, ZoneDays>();

const pad = (value: number) => (value < 10 ? `0${value}` : String(value));

function daysOf(zone: string): ZoneDays {
  let days = zones.get(zone);
  if (!days) {
    days = { byDate: new Map() };
    zones.set(zone, days);
  }
  return days;
}

function record(zone: string, year: number, month: number, day: number): DayRecord {
  const days = daysOf(zone);
  // Date.UTC carries an overflowing day into the next month and year.
  const wall = Date.UTC(year, month - 1, day);
  const civil = new Date(wall);
  const date = `${civil.getUTCFullYear()}-${pad(civil.getUTCMonth() + 1)}-${pad(civil.getUTCDate())}`;
  const known = days.byDate.get(date);
  if (known) return known;
  const start = wallToInstant(zone, wall, "earliest");
  const end = wallToInstant(zone, wall + DAY, "earliest");
  const found: DayRecord = {
    zone,
    date,
    weekday: civil.getUTCDay(),
    start,
    end,
    steady: end - start === DAY && offsetAt(zone, start) === offsetAt(zone, end - 1),
    year: civil.getUTCFullYear(),
    month: civil.getUTCMonth() + 1,
    day: civil.getUTCDate(),
  };
  if (days.byDate.size >= MAX_DAYS_PER_ZONE) days.byDate.clear();
  days.byDate.set(date, found);
  return found;
}

/** The local day of `zone` that `at` falls in. */
export function zoneDay(zone: string, at: number): ZoneDay {
  const days = daysOf(zone);
  const last = days.last;
  if (last && at >= last.start && at < last.end) return last;
  const local = localParts(zone, at);
  let found = record(zone, local.year, local.month, local.day);
  // Only where midnight itself is skipped or repeated can the wall date and the span disagree.
  while (at < found.start) found = record(zone, found.year, found.month, found.day - 1);
  while (at >= found.end) found = nextZoneDay(found) as DayRecord;
  days.last = found;
  return found;
}

/** The local day after `day` in the same zone. */
export function nextZoneDay(day: ZoneDay): ZoneDay {
  const current = day as DayRecord;
  if (!current.next) current.next = record(day.zone, day.year, day.month, day.day + 1);
  return current.next;
}

/**
 * The instant at which the day's wall clock reads `minutes` past midnight (1440: the end of
 * the day). A window `opens` at the last such instant and `closes` at the first, so around a
 * repeated hour it is shorter rather than longer; in a gap both give the jump.
 */
export function wallInstant(day: ZoneDay, minutes: number, side: "opens" | "closes"): number {
  if (minutes <= 0) return day.start;
  if (minutes >= 1440) return day.end;
  if (day.steady) return day.start + minutes * MINUTE;
  const current = day as DayRecord;
  current.instants ??= new Map();
  const key = side === "opens" ? minutes : -minutes;
  let instant = current.instants.get(key);
  if (instant === undefined) {
    const wall = Date.UTC(day.year, day.month - 1, day.day) + minutes * MINUTE;
    instant = wallToInstant(day.zone, wall, side === "opens" ? "latest" : "earliest");
    current.instants.set(key, instant);
  }
  return instant;
}
