import { WEEKDAYS } from "./profile-data.ts";
import { type Profile, type ProfileName, profileAt, profileVersion } from "./profiles.ts";
import { clock, overlap, type Span, spanOf, windowSpan } from "./spans.ts";
import { type CampaignWindow, type WindowAnswer, windowAt } from "./window.ts";
import { zonesOf } from "./zones.ts";

export type ZoneSource = "column" | "number" | "default";

/** A lead as the rules see it: its number, and its zone with where that came from. */
export interface PlacedLead {
  readonly phone: string;
  readonly timezone: string;
  readonly zoneSource: ZoneSource;
}

/** Where a lead may be: every zone and state its rules are checked in. */
export interface LeadPlace {
  readonly zones: readonly string[];
  readonly states: readonly string[];
}

const NONE: readonly string[] = Object.freeze([]);

/**
 * The zones and states a lead's rules apply in. A zone inferred from the number stands for
 * every zone the number may be in (the strictest overlap); a zone from the file or the
 * import's default is the lead's own. States always come from the number.
 */
export function placeOf(lead: PlacedLead): LeadPlace {
  const found = zonesOf(lead.phone);
  const zones = lead.zoneSource === "number" && found ? found.zones : [lead.timezone];
  return { zones, states: found?.states ?? NONE };
}

/**
 * The version of a profile in force at `at`; before a profile's first version, that first
 * version (a clock set in the past still dials under rules, never under none).
 */
export function profileInForce(name: ProfileName, at: number): Profile {
  const found = profileAt(name, at);
  if (found) return found;
  let earliest: Profile | undefined;
  for (let day = 0; !earliest; day += 365) earliest = profileAt(name, at + day * 86_400_000);
  return earliest;
}

/** Whether a lead may be dialled at `at` under its campaign's window, profile and states. */
export function leadWindowAt(
  lead: PlacedLead,
  profile: Profile,
  window: CampaignWindow,
  at: number,
): WindowAnswer {
  const place = placeOf(lead);
  return windowAt({ profile, zones: place.zones, states: place.states, window, at });
}

/**
 * The widest daily span in which a lead could be open under the campaign's window and the
 * profile's hours on some day: a cheap first cut for the database, refined per lead.
 */
export function windowBounds(profile: Profile, window: CampaignWindow): CampaignWindow | null {
  const campaign = windowSpan(window);
  const days = profile.callingHours?.days;
  if (!campaign) return null;
  if (!days) return window;
  let opens = Number.POSITIVE_INFINITY;
  let closes = Number.NEGATIVE_INFINITY;
  for (const day of WEEKDAYS) {
    const span: Span | null = overlap(campaign, spanOf(days[day]));
    if (!span) continue;
    opens = Math.min(opens, span[0]);
    closes = Math.max(closes, span[1]);
  }
  return opens < closes ? { start: clock(opens), end: clock(closes) } : null;
}

/** The per-number limits a claim checks in the database, for one lead under one profile. */
export interface NumberLimits {
  /** At most `max` calls to the number per rolling `hours`, across the workspace. */
  readonly cap: { readonly max: number; readonly hours: number } | null;
  /** No call within `hours` of a call that ended abandoned, or on an answering machine. */
  readonly afterAbandoned: number | null;
  readonly afterMachine: number | null;
  /** No call within `days` of a do-not-call request for the number. */
  readonly afterDncRequest: number | null;
}

/**
 * The limits on a number under a profile and the lead's states. A redial rule that yields to
 * a reserved agent does not apply to a call placed with one.
 */
export function numberLimitsOf(
  profile: Profile,
  states: readonly string[],
  agentReserved: boolean,
): NumberLimits {
  let cap: NumberLimits["cap"] = null;
  let afterDncRequest: number | null = null;
  for (const state of states) {
    const overlay = profile.states?.[state];
    if (!overlay) continue;
    const own = overlay.attemptCap;
    if (own && (!cap || own.max / own.hours < cap.max / cap.hours))
      cap = { max: own.max, hours: own.hours };
    const days = overlay.dncCooldown?.days;
    if (days !== undefined) afterDncRequest = Math.max(afterDncRequest ?? 0, days);
  }
  let afterAbandoned: number | null = null;
  let afterMachine: number | null = null;
  for (const rule of profile.redial ?? []) {
    if (rule.unlessAgentReserved && agentReserved) continue;
    if (rule.after === "abandoned") afterAbandoned = Math.max(afterAbandoned ?? 0, rule.hours);
    else afterMachine = Math.max(afterMachine ?? 0, rule.hours);
  }
  return { cap, afterAbandoned, afterMachine, afterDncRequest };
}

/** The profile a call was recorded under, when its record names one. */
export const recordedProfile = (name: string | null, version: string | null) =>
  name && version ? profileVersion(name as ProfileName, version) : undefined;
