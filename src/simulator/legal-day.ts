import { type PlacedLead, placeOf, profileInForce } from "../compliance/lead-rules.ts";
import type { ProfileName } from "../compliance/profiles.ts";
import { type CampaignWindow, windowAt } from "../compliance/window.ts";
import { wallInstant, zoneDay } from "../compliance/zone-day.ts";
import { CAMPAIGN_DEFAULTS } from "../modules/campaigns/defaults.ts";

/** Where a profile's simulated leads live: their zone, and the numbers they are called on. */
export interface SimulatedLeads {
  timezone: string;
  /** The E.164 number of lead `index`: valid and distinct for up to a million leads. */
  phone: (index: number) => string;
}

/** +1 212 200-0000 onwards: New York, a state without rules of its own. */
const newYork = (index: number) => `+1212${2_000_000 + index}`;

/**
 * Each profile's leads, in a zone and on numbers its rules are written for. The Canadian
 * leads keep New York numbers (the same hours, no state rules) and take Toronto as their
 * zone: the import's E.164 check refuses Canadian numbers today.
 */
export const PROFILE_LEADS: Record<ProfileName, SimulatedLeads> = {
  us: { timezone: "America/New_York", phone: newYork },
  none: { timezone: "America/New_York", phone: newYork },
  ca: { timezone: "America/Toronto", phone: newYork },
  // +44 20 3100 0000 onwards: London.
  uk: { timezone: "Europe/London", phone: (index) => `+44203${1_000_000 + index}` },
};

/** The day a shift runs on unless told otherwise: a Tuesday, no holiday, no clock change. */
export const DEFAULT_DATE = "2026-03-03";
/** A shift starts at 09:00 local unless it must start earlier to end within the hours. */
const DEFAULT_START_MINUTES = 9 * 60;
const MINUTE = 60_000;
const DAY = 86_400_000;

export interface LegalDayQuestion {
  profile: ProfileName;
  /** The leads' zone (their import's zone column) and one of their numbers (for the state). */
  lead: Pick<PlacedLead, "timezone" | "phone">;
  /** The campaign's calling window; the simulated campaign keeps the default. */
  window?: CampaignWindow;
}

/**
 * The first instant in [from, to) at which the leads may not be dialled (the campaign's
 * window ∩ the profile's hours ∩ their state's rules, in their zone), with why; undefined
 * when they may be all along. Looked at minute by minute: windows open and close on minutes.
 */
export function firstClosed(question: LegalDayQuestion, from: number, to: number) {
  const profile = profileInForce(question.profile, from);
  const place = placeOf({ ...question.lead, zoneSource: "column" });
  const window = question.window ?? CAMPAIGN_DEFAULTS.calling_window;
  const ask = (at: number) => windowAt({ profile, ...place, window, at });
  const closedAt = (at: number) => {
    const answer = ask(at);
    return answer.open
      ? undefined
      : { at, reasons: answer.reasons.map((reason) => reason.message).join("; ") };
  };
  for (let at = from; at < to; at += MINUTE) {
    const closed = closedAt(at);
    if (closed) return closed;
  }
  return to > from ? closedAt(to - 1) : undefined;
}

/**
 * Throws unless the whole shift [startAt, startAt + hours) is inside the hours in which the
 * leads may be called: a simulated day out of hours would measure a campaign that dials nothing.
 */
export function assertLegalDay(question: LegalDayQuestion, startAt: number, hours: number) {
  const closed = firstClosed(question, startAt, startAt + hours * 3_600_000);
  if (!closed) return;
  throw new RangeError(
    `a ${hours} h shift from ${new Date(startAt).toISOString()} is outside the hours in which ` +
      `the ${question.profile} profile's leads in ${question.lead.timezone} may be called, from ` +
      `${new Date(closed.at).toISOString()}: ${closed.reasons}`,
  );
}

/**
 * When a shift of `hours` starts by default on `date` (YYYY-MM-DD, the leads' local date):
 * 09:00 local, or earlier if it must be to end by the close, never before the opening.
 * Throws when the shift is longer than the day's hours.
 */
export function legalStart(question: LegalDayQuestion, hours: number, date = DEFAULT_DATE) {
  const { timezone } = question.lead;
  const noon = Date.parse(`${date}T12:00:00Z`);
  const day = zoneDay(timezone, noon);
  const profile = profileInForce(question.profile, noon);
  const place = placeOf({ ...question.lead, zoneSource: "column" });
  const window = question.window ?? CAMPAIGN_DEFAULTS.calling_window;
  const opens = windowAt({ profile, ...place, window, at: day.start }).nextOpenAt;
  const closes =
    opens === null || opens >= day.end
      ? undefined
      : (firstClosed(question, opens, opens + DAY)?.at ?? opens + DAY);
  const span = hours * 3_600_000;
  if (opens === null || closes === undefined || closes - opens < span)
    throw new RangeError(
      `a ${hours} h shift does not fit in the hours in which the ${question.profile} profile's ` +
        `leads in ${timezone} may be called on ${date}`,
    );
  const nine = wallInstant(day, DEFAULT_START_MINUTES, "opens");
  return Math.max(opens, Math.min(nine, closes - span));
}
