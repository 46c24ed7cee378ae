import { usStateHoliday } from "./holidays.ts";
import { WEEKDAYS, type WeeklyHours } from "./profile-data.ts";
import type { Profile } from "./profiles.ts";
import { type CampaignWindow, type Span, spanOf, WHOLE_DAY, windowSpan } from "./spans.ts";
import { wallInstant, type ZoneDay } from "./zone-day.ts";

export const REASON_CODES = [
  "outside_window",
  "legal_hours",
  "state_rule",
  "sunday",
  "holiday",
] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** One daily rule a lead answers to, in its local time. */
export interface Rule {
  readonly code: ReasonCode;
  /** Who sets it: "the campaign", a profile's name, a state's code. */
  readonly by: string;
  /** The minutes allowed on each weekday, Sunday first; null: none that day. */
  readonly week: readonly (Span | null)[];
  /** A US state on whose public holidays this rule allows nothing. */
  readonly closedOnHolidaysOf?: string;
}

export interface Rules {
  readonly all: readonly Rule[];
  /** The rules of each code that has any, in REASON_CODES order. */
  readonly byCode: readonly (readonly [ReasonCode, readonly Rule[]])[];
}

const weekOf = (days: WeeklyHours) => WEEKDAYS.map((day) => spanOf(days[day]));

const sundayBan = (by: string): Rule => ({
  code: "sunday",
  by,
  week: WEEKDAYS.map((day) => (day === "sun" ? null : WHOLE_DAY)),
});

/**
 * The campaign's window, the profile's hours and each listed state's hours, Sunday ban and
 * holiday ban. A state's hours allow nothing on its banned days, so that `state_rule` holds
 * until the state next allows a call; `sunday` and `holiday` say why, until the day ends.
 */
function compile(profile: Profile, window: CampaignWindow, states: readonly string[]): Rules {
  const campaign = windowSpan(window);
  const rules: Rule[] = [
    { code: "outside_window", by: "the campaign", week: WEEKDAYS.map(() => campaign) },
  ];
  if (profile.callingHours) {
    const week = weekOf(profile.callingHours.days);
    rules.push({ code: "legal_hours", by: profile.name, week });
    if (week[0] === null) rules.push(sundayBan(profile.name));
  }
  for (const state of new Set(states)) {
    const overlay = profile.states?.[state];
    if (!overlay) continue;
    const week = weekOf(overlay.hours.days);
    const closedOnHolidaysOf = overlay.holidays.closed ? state : undefined;
    rules.push({ code: "state_rule", by: state, week, closedOnHolidaysOf });
    if (week[0] === null) rules.push(sundayBan(state));
    if (closedOnHolidaysOf) {
      const week = WEEKDAYS.map(() => WHOLE_DAY);
      rules.push({ code: "holiday", by: state, week, closedOnHolidaysOf });
    }
  }
  const byCode = REASON_CODES.map(
    (code) => [code, rules.filter((rule) => rule.code === code)] as const,
  );
  return { all: rules, byCode: byCode.filter(([, found]) => found.length > 0) };
}

const compiled = new WeakMap<Profile, Map<string, Rules>>();
// Bounded: windows and state lists come from campaigns and leads, not from a closed set.
const MAX_PER_PROFILE = 1000;

/** The rules for a lead, built once per (profile version, window, states). */
export function rulesFor(profile: Profile, window: CampaignWindow, states: readonly string[]) {
  let byKey = compiled.get(profile);
  if (!byKey) {
    byKey = new Map();
    compiled.set(profile, byKey);
  }
  const key = `${window.start}-${window.end}/${states.length === 1 ? states[0] : states.join(",")}`;
  let rules = byKey.get(key);
  if (!rules) {
    rules = compile(profile, window, states);
    if (byKey.size >= MAX_PER_PROFILE) byKey.clear();
    byKey.set(key, rules);
  }
  return rules;
}

/** The minutes a rule allows on a day; null: none. */
export function spanOn(rule: Rule, day: ZoneDay): Span | null {
  if (rule.closedOnHolidaysOf && usStateHoliday(rule.closedOnHolidaysOf, day.date) !== undefined) {
    return null;
  }
  return rule.week[day.weekday] ?? null;
}

export function ruleHolds(rule: Rule, day: ZoneDay, at: number): boolean {
  const span = spanOn(rule, day);
  return (
    span !== null &&
    at >= wallInstant(day, span[0], "opens") &&
    at < wallInstant(day, span[1], "closes")
  );
}
