import { usStateHoliday } from "./holidays.ts";
import { type Hours, WEEKDAYS, type Weekday, type WeeklyHours } from "./profile-data.ts";
import type { Profile } from "./profiles.ts";
import { type ReasonCode, type Rule, ruleHolds, rulesFor, spanOn } from "./rules.ts";
import { type CampaignWindow, clock, overlap, spanOf, windowSpan } from "./spans.ts";
import { nextZoneDay, wallInstant, type ZoneDay, zoneDay } from "./zone-day.ts";

export { REASON_CODES, type ReasonCode } from "./rules.ts";
export type { CampaignWindow } from "./spans.ts";

export interface Reason {
  readonly code: ReasonCode;
  readonly message: string;
  /** The instant this reason stops holding, or null when it never does within the horizon. */
  readonly until: number | null;
}

export interface WindowAnswer {
  readonly open: boolean;
  /** Empty when open; otherwise one entry per code that holds, in REASON_CODES order. */
  readonly reasons: readonly Reason[];
  /** `at` when open; the first instant it opens within the horizon; null if it does not. */
  readonly nextOpenAt: number | null;
}

export interface WindowQuestion {
  readonly profile: Profile;
  /** Every zone the lead may be in (at least one). */
  readonly zones: readonly string[];
  /** Every state or province the lead may be in; those the profile has no rules for add none. */
  readonly states?: readonly string[];
  readonly window: CampaignWindow;
  readonly at: number;
}

/** How far ahead `nextOpenAt` and `until` look. */
export const HORIZON_DAYS = 14;
const DAY = 86_400_000;

function allHold(rules: readonly Rule[], zones: readonly string[], at: number): boolean {
  for (const zone of zones) {
    const day = zoneDay(zone, at);
    for (const rule of rules) if (!ruleHolds(rule, day, at)) return false;
  }
  return true;
}

/** The first instant from `from` (before `horizon`) at which every rule holds in one zone. */
function nextInZone(zone: string, rules: readonly Rule[], from: number, horizon: number) {
  for (let day = zoneDay(zone, from); day.start < horizon; day = nextZoneDay(day)) {
    let opens = day.start;
    let closes = day.end;
    for (const rule of rules) {
      const span = spanOn(rule, day);
      if (!span) {
        closes = opens;
        break;
      }
      opens = Math.max(opens, wallInstant(day, span[0], "opens"));
      closes = Math.min(closes, wallInstant(day, span[1], "closes"));
    }
    if (opens < closes && closes > from) {
      const found = Math.max(opens, from);
      return found < horizon ? found : null;
    }
  }
  return null;
}

/**
 * The first instant from `from` at which every rule holds in every zone: each zone in turn
 * pushes the candidate to its own next opening until all of them agree on one.
 */
function nextAcross(zones: readonly string[], rules: readonly Rule[], from: number) {
  const horizon = from + HORIZON_DAYS * DAY;
  let candidate = from;
  for (;;) {
    let latest = candidate;
    for (const zone of zones) {
      const opens = nextInZone(zone, rules, candidate, horizon);
      if (opens === null) return null;
      if (opens > latest) latest = opens;
    }
    if (latest === candidate) return candidate;
    candidate = latest;
  }
}

const DAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

function failure(rule: Rule, day: ZoneDay): string {
  const span = spanOn(rule, day);
  const hours = span ? `${clock(span[0])}–${clock(span[1])}` : "none";
  const where = `in ${day.zone}`;
  switch (rule.code) {
    case "outside_window":
      return span
        ? `outside the campaign's window ${hours} ${where}`
        : "the campaign's window is empty";
    case "legal_hours":
      return `outside the ${rule.by.toUpperCase()} profile's hours for ${DAY_NAMES[day.weekday]} (${hours}) ${where}`;
    case "state_rule": {
      const holiday = rule.closedOnHolidaysOf && usStateHoliday(rule.closedOnHolidaysOf, day.date);
      const which = holiday ? `a holiday, ${day.date}` : DAY_NAMES[day.weekday];
      return `outside ${rule.by}'s hours for ${which} (${hours}) ${where}`;
    }
    case "sunday":
      return `${rule.by} allows no calls on Sunday (${day.date} ${where})`;
    case "holiday":
      return `${rule.by} allows no calls on its holiday ${usStateHoliday(rule.by, day.date)} (${day.date} ${where})`;
  }
}

function failures(rules: readonly Rule[], zones: readonly string[], at: number): string[] {
  const found: string[] = [];
  for (const rule of rules) {
    for (const zone of zones) {
      const day = zoneDay(zone, at);
      if (!ruleHolds(rule, day, at)) found.push(failure(rule, day));
    }
  }
  return found;
}

const NO_REASONS: readonly Reason[] = Object.freeze([]);

/**
 * Whether a lead may be dialled at `at`: inside the campaign's window, the profile's hours
 * and every listed state's rules, in the lead's local time, in every zone it may be in (the
 * strictest overlap). When it may not, each reason that holds, until when, and the first
 * instant it may.
 */
export function windowAt(question: WindowQuestion): WindowAnswer {
  const { profile, zones, states = [], window, at } = question;
  if (zones.length === 0) throw new RangeError("a lead's window needs at least one zone");
  const rules = rulesFor(profile, window, states);
  if (allHold(rules.all, zones, at)) return { open: true, reasons: NO_REASONS, nextOpenAt: at };
  const reasons: Reason[] = [];
  for (const [code, ofCode] of rules.byCode) {
    const found = failures(ofCode, zones, at);
    if (found.length === 0) continue;
    const message = found.join("; ");
    reasons.push({
      code,
      message: message.charAt(0).toUpperCase() + message.slice(1),
      until: nextAcross(zones, ofCode, at),
    });
  }
  return { open: false, reasons, nextOpenAt: nextAcross(zones, rules.all, at) };
}

/**
 * Whether a campaign's window overlaps the profile's hours on any day of the week. A window
 * that never can (22:00–23:00 under `us`), or that is empty, is refused when it is set.
 */
export function windowAllowed(profile: Profile, window: CampaignWindow): boolean {
  const span = windowSpan(window);
  const days = profile.callingHours?.days;
  if (!span) return false;
  if (!days) return true;
  return WEEKDAYS.some((day) => overlap(span, spanOf(days[day])) !== null);
}

export interface EffectiveWindow {
  /** The hours each weekday in which the campaign may call, in the lead's local time. */
  readonly days: WeeklyHours;
  /** Closed all day on the state's public holidays and their observed days. */
  readonly closedOnHolidays: boolean;
}

/** The campaign's window cut to the profile's hours and, given a state, to its rules. */
export function effectiveWindow(
  profile: Profile,
  window: CampaignWindow,
  state?: string,
): EffectiveWindow {
  const overlay = state === undefined ? undefined : profile.states?.[state];
  const hours = (day: Weekday): Hours | null => {
    let span = windowSpan(window);
    const legal = profile.callingHours?.days[day];
    if (legal !== undefined) span = overlap(span, spanOf(legal));
    if (overlay) span = overlap(span, spanOf(overlay.hours.days[day]));
    return span && { start: clock(span[0]), end: clock(span[1]) };
  };
  return {
    days: {
      sun: hours("sun"),
      mon: hours("mon"),
      tue: hours("tue"),
      wed: hours("wed"),
      thu: hours("thu"),
      fri: hours("fri"),
      sat: hours("sat"),
    },
    closedOnHolidays: overlay?.holidays.closed ?? false,
  };
}
