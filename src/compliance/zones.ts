import { NANP_AREA_CODES, WORLD_PREFIXES } from "./zone-data.ts";

/** Where a number may be: canonical IANA zones, and for NANP numbers the states or provinces. */
export interface NumberZones {
  readonly zones: readonly string[];
  /** Two-letter US state (or territory) and Canadian province codes; empty outside NANP. */
  readonly states: readonly string[];
}

const E164 = /^\+[1-9]\d{6,14}$/;

// Built once and frozen: a lookup hands out these objects and allocates nothing.
const areaCodes = new Map<string, NumberZones>(
  Object.entries(NANP_AREA_CODES).map(([npa, found]) => [
    npa,
    Object.freeze({ zones: Object.freeze(found.zones), states: Object.freeze(found.states) }),
  ]),
);
const NO_STATES: readonly string[] = Object.freeze([]);
const prefixes = new Map<string, NumberZones>(
  Object.entries(WORLD_PREFIXES).map(([prefix, zones]) => [
    prefix,
    Object.freeze({ zones: Object.freeze(zones), states: NO_STATES }),
  ]),
);
const LONGEST_PREFIX = Math.max(...[...prefixes.keys()].map((prefix) => prefix.length));

/**
 * The zones (and states) an E.164 number may be in, or undefined when the data places it
 * nowhere: the caller then uses a default zone or refuses the lead. A NANP number is placed
 * by its area code alone (every zone and state any of the area code's exchanges has), so a
 * toll-free or non-geographic code places nothing rather than all of North America.
 */
export function zonesOf(e164: string): NumberZones | undefined {
  if (!E164.test(e164)) return undefined;
  if (e164[1] === "1") return e164.length === 12 ? areaCodes.get(e164.slice(2, 5)) : undefined;
  for (let length = Math.min(LONGEST_PREFIX, e164.length - 1); length > 0; length--) {
    const found = prefixes.get(e164.slice(1, 1 + length));
    if (found) return found;
  }
  return undefined;
}
