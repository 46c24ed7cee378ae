import {
  type CountryCode,
  type E164Number,
  getCountries,
  PhoneNumber,
  parsePhoneNumberFromString,
} from "libphonenumber-js/max";

import { unprocessable } from "../../errors.ts";
import { TIME_ZONE_LINKS } from "./time-zone-links.ts";

const E164 = /^\+[1-9]\d{6,14}$/;

const REGIONS = new Set<string>(getCountries());

export const isRegion = (value: string): value is CountryCode => REGIONS.has(value);

/**
 * The E.164 form of a phone cell, or undefined when it is not a valid number. A number
 * without a leading `+` is read in `defaultRegion`, and is invalid when there is none.
 */
export function normalisePhone(
  cell: string,
  defaultRegion: CountryCode | undefined,
): string | undefined {
  // Most files already hold E.164: validating it directly skips parsing and formatting (4× faster).
  // That reads a code that several countries share (+1) as its main country's, so a number it
  // finds invalid (a Canadian one) is parsed in full before it is refused.
  if (E164.test(cell)) {
    try {
      if (new PhoneNumber(cell as E164Number).isValid()) return cell;
    } catch {
      return undefined;
    }
  }
  const parsed = parsePhoneNumberFromString(cell, defaultRegion);
  return parsed?.isValid() ? parsed.number : undefined;
}

/**
 * A caller ID shown on calls, when one is given, or 422 naming the field: a valid number, as
 * the law asks of a number the called can call back (E.164 in form is not enough: `+999`).
 */
export function assertCallerId(callerId: string | null | undefined) {
  if (typeof callerId === "string" && normalisePhone(callerId, undefined) !== callerId)
    throw unprocessable("caller_id", "is not a valid phone number the called could call back");
}

/**
 * Lower-cased name → canonical name, for every zone and link this runtime can use. Link
 * targets are added as names of their own: `Intl.supportedValuesOf` leaves some of them out
 * (`Etc/UTC` and `Etc/GMT` on Bun, which lists `UTC`), and a zone the import stored must be
 * accepted when a file brings it back.
 */
const KNOWN_ZONES = (() => {
  const known = new Map<string, string>();
  for (const zone of Intl.supportedValuesOf("timeZone")) known.set(zone.toLowerCase(), zone);
  for (const [link, target] of Object.entries(TIME_ZONE_LINKS)) {
    known.set(link.toLowerCase(), target);
    known.set(target.toLowerCase(), target);
  }
  return known;
})();

/**
 * UTC's own zones. Their one-word names (`UTC`, `GMT`, `Zulu`, …) are accepted where other
 * one-word names are not: they name no local time that a reader could mistake.
 */
const UTC_ZONES = new Set(["Etc/UTC", "Etc/GMT"]);

const AREA_LOCATION = /^[A-Za-z]+\/[A-Za-z0-9_+\-/]+$/;

const usable = (zone: string) => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

const zones = new Map<string, string | undefined>();

/**
 * The canonical IANA name of a time-zone cell, or undefined. Links such as `US/Eastern` give
 * their target (`America/New_York`), `UTC` gives `Etc/UTC`, and every name this returns is
 * accepted again. Offsets (`+05:00`) and abbreviations (`EST`), which Intl also accepts, do
 * not name a place and are refused: only `Area/Location` names and the names of UTC.
 */
export function canonicalTimeZone(cell: string): string | undefined {
  if (zones.has(cell)) return zones.get(cell);
  let canonical = KNOWN_ZONES.get(cell.toLowerCase());
  if (canonical !== undefined && !AREA_LOCATION.test(cell) && !UTC_ZONES.has(canonical))
    canonical = undefined;
  if (canonical !== undefined && !usable(canonical)) canonical = undefined;
  // Bounded: a file of junk zones must not grow this cache without limit.
  if (zones.size < 10_000) zones.set(cell, canonical);
  return canonical;
}
