import { expect, test } from "bun:test";
import { instantToZoned, zonedToInstant } from "../../src/console/client/format.ts";
import { instantOf, offsetAt } from "../../src/lib/zone-time.ts";

test("wall-clock times in a zone, on both sides of a DST change", () => {
  // New York: EST (UTC-5) in March before the 8th, EDT (UTC-4) after.
  expect(offsetAt("America/New_York", Date.parse("2026-03-02T17:00:00Z"))).toBe(-5 * 3600_000);
  expect(offsetAt("America/New_York", Date.parse("2026-03-09T17:00:00Z"))).toBe(-4 * 3600_000);
  expect(new Date(instantOf("America/New_York", 2026, 3, 7, 9 * 60)).toISOString()).toBe(
    "2026-03-07T14:00:00.000Z",
  );
  expect(new Date(instantOf("America/New_York", 2026, 3, 9, 9 * 60)).toISOString()).toBe(
    "2026-03-09T13:00:00.000Z",
  );
});

test("the console's callback time reads and shows a lead's wall clock", () => {
  const at = zonedToInstant("2026-11-25T10:30", "America/Los_Angeles");
  expect(new Date(at as number).toISOString()).toBe("2026-11-25T18:30:00.000Z");
  expect(instantToZoned(at as number, "America/Los_Angeles")).toBe("2026-11-25T10:30");
  expect(zonedToInstant("not a time", "UTC")).toBeUndefined();
});
