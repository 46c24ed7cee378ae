import {
  type CountryCode,
  type E164Number,
  getCountries,
  PhoneNumber,
  parsePhoneNumberFromString,
} from "libphonenumber-js/max";

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
  if (E164.test(cell)) {
    try {
      return new PhoneNumber(cell as E164Number).isValid() ? cell : undefined;
    } catch {
      return undefined;
    }
  }
  const parsed = parsePhoneNumberFromString(cell, defaultRegion);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** Lower-cased name → canonical name, for every zone and link this runtime can use. */
const KNOWN_ZONES = (() => {
  const known = new Map<string, string>();
  for (const zone of Intl.supportedValuesOf("timeZone")) known.set(zone.toLowerCase(), zone);
  for (const [link, target] of Object.entries(TIME_ZONE_LINKS))
    known.set(link.toLowerCase(), target);
  return known;
})();

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
 * their target (`America/New_York`); offsets (`+05:00`) and abbreviations (`EST`), which Intl
 * also accepts, do not name a place and are refused: only `Area/Location` names and `UTC`.
 */
export function canonicalTimeZone(cell: string): string | undefined {
  if (zones.has(cell)) return zones.get(cell);
  let canonical: string | undefined;
  if (cell === "UTC" || /^[A-Za-z]+\/[A-Za-z0-9_+\-/]+$/.test(cell)) {
    canonical = KNOWN_ZONES.get(cell.toLowerCase());
    if (canonical !== undefined && !usable(canonical)) canonical = undefined;
  }
  // Bounded: a file of junk zones must not grow this cache without limit.
  if (zones.size < 10_000) zones.set(cell, canonical);
  return canonical;
}
