import { describe, expect, test } from "bun:test";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { NANP_AREA_CODES, WORLD_PREFIXES } from "../../src/compliance/zone-data.ts";
import { zonesOf } from "../../src/compliance/zones.ts";
import { TIME_ZONE_LINKS } from "../../src/modules/leads/time-zone-links.ts";

describe("the zones a number may be in", () => {
  test.each([
    ["+12125550123", ["America/New_York"], ["NY"]],
    ["+13125550123", ["America/Chicago"], ["IL"]],
    ["+14155550123", ["America/Los_Angeles"], ["CA"]],
    ["+16025550123", ["America/Phoenix"], ["AZ"]],
    ["+19155550123", ["America/Denver"], ["TX"]],
    ["+18065550123", ["America/Chicago"], ["TX"]],
    ["+18015550123", ["America/Denver"], ["UT"]],
    // Split area codes: every zone any of their exchanges is in.
    ["+18505550123", ["America/Chicago", "America/New_York"], ["FL"]],
    ["+12705550123", ["America/Chicago", "America/New_York"], ["KY"]],
    ["+18125550123", ["America/Chicago", "America/New_York"], ["IN"]],
    ["+14235550123", ["America/Chicago", "America/New_York"], ["TN"]],
    ["+15415550123", ["America/Denver", "America/Los_Angeles"], ["OR"]],
    // Canada, and a territory.
    ["+14165550123", ["America/Toronto"], ["ON"]],
    ["+16045550123", ["America/Vancouver"], ["BC"]],
    ["+19025550123", ["America/Halifax"], ["NS", "PE"]],
    ["+17875550123", ["America/Puerto_Rico"], ["PR"]],
  ])("%s", (number, zones, states) => {
    expect(zonesOf(number)).toEqual({ zones, states });
  });

  test("other countries: zones without states, canonical names only", () => {
    expect(zonesOf("+442079460123")).toEqual({ zones: ["Europe/London"], states: [] });
    // Guernsey: its own zone in libphonenumber, a link to Europe/London in the tz database.
    expect(zonesOf("+441481123456")).toEqual({ zones: ["Europe/London"], states: [] });
    expect(zonesOf("+33142685300")).toEqual({ zones: ["Europe/Paris"], states: [] });
    // The Bahamas share NANP and, in the tz database, Toronto's zone (America/Nassau is a link).
    expect(zonesOf("+12423235555")).toEqual({ zones: ["America/Toronto"], states: [] });
  });

  test("numbers the data places nowhere", () => {
    expect(zonesOf("+18005550123")).toBeUndefined(); // toll-free: not all of North America
    expect(zonesOf("+15005550123")).toBeUndefined(); // non-geographic
    expect(zonesOf("+1212555012")).toBeUndefined(); // too short for NANP
    expect(zonesOf("+88812345678")).toBeUndefined(); // no zone for the country code
    expect(zonesOf("2125550123")).toBeUndefined(); // not E.164
    expect(zonesOf("")).toBeUndefined();
  });

  test("the same object each time: an import does not allocate per row", () => {
    expect(zonesOf("+12125550123")).toBe(zonesOf("+12125559999"));
  });

  test("every zone in the data is canonical and usable here", () => {
    const zones = new Set([
      ...Object.values(NANP_AREA_CODES).flatMap((found) => found.zones),
      ...Object.values(WORLD_PREFIXES).flat(),
    ]);
    expect(zones.size).toBeGreaterThan(100);
    const supported = new Set(Intl.supportedValuesOf("timeZone"));
    for (const zone of zones) {
      expect({ zone, link: TIME_ZONE_LINKS[zone] }).toEqual({ zone, link: undefined });
      expect({ zone, supported: supported.has(zone) }).toEqual({ zone, supported: true });
    }
    expect(zones.has("Europe/Guernsey")).toBe(false);
    expect(zones.has("America/Nassau")).toBe(false);
  });

  test("every US and Canadian area code names a state or province, and only those do", () => {
    const regions = new Map<string, string[]>();
    for (const [npa, found] of Object.entries(NANP_AREA_CODES)) {
      const region = parsePhoneNumberFromString(`+1${npa}2345678`)?.country ?? "none";
      regions.set(region, [...(regions.get(region) ?? []), npa]);
      const expected = region === "US" || region === "CA" ? "some" : "none";
      const territory = ["PR", "VI", "GU", "AS", "MP"].includes(region);
      expect({ npa, region, states: found.states.length > 0 ? "some" : "none" }).toEqual({
        npa,
        region,
        states: territory ? "some" : expected,
      });
    }
    expect(regions.get("US")?.length).toBeGreaterThan(300);
    expect(regions.get("CA")?.length).toBeGreaterThan(30);
  });
});
