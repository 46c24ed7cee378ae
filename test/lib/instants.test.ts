import { describe, expect, test } from "bun:test";
import { parseInstant, rangeOf } from "../../src/lib/instants.ts";

describe("instants a client sends", () => {
  test("RFC 3339 with Z or an offset, a fraction or a space for the T", () => {
    expect(parseInstant("2026-03-02T12:00:00Z")).toBe(Date.parse("2026-03-02T12:00:00Z"));
    expect(parseInstant("2026-03-02T07:00:00.250-05:00")).toBe(
      Date.parse("2026-03-02T12:00:00.250Z"),
    );
    expect(parseInstant("2026-03-02 12:00:00z")).toBe(Date.parse("2026-03-02T12:00:00Z"));
    expect(parseInstant("2028-02-29T00:00:00Z")).toBe(Date.parse("2028-02-29T00:00:00Z"));
  });

  test("not a date the calendar has, a year the database cannot store, or another format", () => {
    for (const value of [
      "2026-02-30T00:00:00Z",
      "2027-02-29T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2024-01-01T24:00:00Z",
      "2024-01-01T23:60:00Z",
      "2024-01-01T23:59:60Z",
      "2024-01-01T12:00:00+24:00",
      "2024-01-01T12:00:00+05:60",
      "0000-01-01T00:00:00Z",
      "9999-12-31T23:59:59-05:00",
      "+275760-09-13T00:00:00.000Z",
      "Nov 27 2026",
      "2026-03-02",
      "1772452800000",
    ])
      expect({ value, at: parseInstant(value) }).toEqual({ value, at: undefined });
  });

  test("digits past the millisecond round down, or up for a range's bounds", () => {
    const at = Date.parse("2026-11-29T04:57:40.778Z");
    expect(parseInstant("2026-11-29T04:57:40.778999999Z")).toBe(at);
    expect(parseInstant("2026-11-29T04:57:40.7785Z", "ceil")).toBe(at + 1);
    expect(parseInstant("2026-11-29T04:57:40.7780000Z", "ceil")).toBe(at);
    // A CDR started at .778 is before a `from` of .7785, and before a `to` of .77899.
    const { from, to } = rangeOf({
      from: "2026-11-29T04:57:40.7785Z",
      to: "2026-11-29T04:57:40.77899+00:00",
    });
    expect([from?.getTime(), to?.getTime()]).toEqual([at + 1, at + 1]);
  });

  test("a query's range names the parameter that is not an instant", () => {
    expect(() => rangeOf({ from: "0000-01-01T00:00:00Z" })).toThrow("invalid query parameters");
    expect(rangeOf({ from: "0001-01-01T00:00:00Z" }).from?.toISOString()).toBe(
      "0001-01-01T00:00:00.000Z",
    );
  });
});
