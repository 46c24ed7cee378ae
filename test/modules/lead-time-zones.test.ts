import { describe, expect, test } from "bun:test";
import { NANP_AREA_CODES, WORLD_PREFIXES } from "../../src/compliance/zone-data.ts";
import { canonicalTimeZone } from "../../src/modules/leads/normalise.ts";
import { TIME_ZONE_LINKS } from "../../src/modules/leads/time-zone-links.ts";

/** Every zone a lead may be stored with: what a cell canonicalises to, and what a number gives. */
function storableZones(): Set<string> {
  const stored = new Set<string>([
    "Etc/UTC",
    "Etc/GMT",
    ...Object.values(NANP_AREA_CODES).flatMap((found) => found.zones),
    ...Object.values(WORLD_PREFIXES).flat(),
  ]);
  const names = [
    ...Intl.supportedValuesOf("timeZone"),
    ...Object.keys(TIME_ZONE_LINKS),
    ...Object.values(TIME_ZONE_LINKS),
  ];
  for (const name of names) {
    const canonical = canonicalTimeZone(name);
    if (canonical !== undefined) stored.add(canonical);
  }
  return stored;
}

describe("time-zone cells", () => {
  test("every zone the service may store is accepted back as itself", () => {
    const stored = storableZones();
    expect(stored.size).toBeGreaterThan(400);
    const refused = [...stored].filter((zone) => canonicalTimeZone(zone) !== zone);
    expect(refused).toEqual([]);
  });

  test("the names of UTC are accepted, in any case", () => {
    const names = ["Etc/UTC", "UTC", "utc", "Etc/GMT", "GMT", "Zulu", "Etc/Universal"];
    expect(names.map(canonicalTimeZone)).toEqual([
      "Etc/UTC",
      "Etc/UTC",
      "Etc/UTC",
      "Etc/GMT",
      "Etc/GMT",
      "Etc/UTC",
      "Etc/UTC",
    ]);
  });

  test("links are stored canonical", () => {
    expect(canonicalTimeZone("US/Eastern")).toBe("America/New_York");
    expect(canonicalTimeZone("america/new_york")).toBe("America/New_York");
    expect(canonicalTimeZone("Asia/Calcutta")).toBe("Asia/Kolkata");
  });

  test("offsets, abbreviations and other one-word names are refused", () => {
    const cells = ["+05:00", "UTC+1", "EST", "CET", "EST5EDT", "Japan", "Mars/Olympus", ""];
    expect(cells.map(canonicalTimeZone)).toEqual(cells.map(() => undefined));
  });
});
