import { describe, expect, test } from "bun:test";
import { PROFILE_DATA, type Source, WEEKDAYS } from "../../src/compliance/profile-data.ts";
import {
  isProfileName,
  PROFILE_NAMES,
  profileAt,
  profileVersion,
} from "../../src/compliance/profiles.ts";

const at = (iso: string) => Date.parse(iso);
const NOW = at("2026-11-26T12:00:00Z");

/** Every object with a `source` under a version, with the path that leads to it. */
function sources(value: unknown, path: string): [string, Source][] {
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, child]): [string, Source][] =>
    key === "source" ? [[path, child as Source]] : sources(child, `${path}.${key}`),
  );
}

describe("profiles", () => {
  test("the version in force at an instant, with its name and version", () => {
    const us = profileAt("us", NOW);
    expect(us?.name).toBe("us");
    expect(us?.version).toBe("2025-04-11");
    expect(profileAt("us", at("2025-04-11T00:00:00Z"))?.version).toBe("2025-04-11");
    expect(profileAt("us", at("2025-04-10T23:59:59Z"))).toBeUndefined();
    expect(profileAt("uk", NOW)?.version).toBe("2017-03-01");
    expect(profileAt("ca", NOW)?.version).toBe("2008-09-30");
    expect(profileAt("none", 0)?.callingHours).toBeNull();
    // One object per version: callers key their caches on it.
    expect(profileAt("us", NOW)).toBe(profileAt("us", at("2026-01-01T00:00:00Z")));
    expect(profileVersion("us", "2025-04-11")).toBe(profileAt("us", NOW));
    expect(profileVersion("us", "2020-01-01")).toBeUndefined();
  });

  test("names are the data's keys", () => {
    expect([...PROFILE_NAMES].sort()).toEqual(["ca", "none", "uk", "us"]);
    expect(isProfileName("uk")).toBe(true);
    expect(isProfileName("toString")).toBe(false);
    expect(isProfileName("eu")).toBe(false);
  });

  test("versions are dated, in order, and every rule cites a source", () => {
    for (const name of PROFILE_NAMES) {
      const versions = PROFILE_DATA[name].map((version) => version.version);
      expect(versions.every((version) => /^\d{4}-\d{2}-\d{2}$/.test(version))).toBe(true);
      expect(versions).toEqual([...versions].sort());
      for (const version of PROFILE_DATA[name]) {
        for (const [path, source] of sources(version, `${name}@${version.version}`)) {
          expect({ path, citation: source.citation.length > 5 }).toEqual({ path, citation: true });
          expect(["H", "M", "L"]).toContain(source.confidence);
        }
      }
    }
  });

  test("every hours entry is a well-formed, non-empty span", () => {
    const spans: [string, { start: string; end: string }][] = [];
    for (const name of PROFILE_NAMES) {
      for (const version of PROFILE_DATA[name]) {
        const weeks = [
          ["profile", version.callingHours?.days],
          ...Object.entries("states" in version ? version.states : {}).map(
            ([state, overlay]) => [state, overlay.hours.days] as const,
          ),
        ] as const;
        for (const [owner, days] of weeks) {
          for (const day of WEEKDAYS) {
            const hours = days?.[day];
            if (hours) spans.push([`${name} ${owner} ${day}`, hours]);
          }
        }
      }
    }
    expect(spans.length).toBeGreaterThan(50);
    for (const [where, { start, end }] of spans) {
      expect({ where, start: /^\d\d:\d\d$/.test(start), end: /^\d\d:\d\d$/.test(end) }).toEqual({
        where,
        start: true,
        end: true,
      });
      expect({ where, ordered: start < end }).toEqual({ where, ordered: true });
    }
  });

  test("us: federal hours and pacing rules, and the listed states", () => {
    const us = profileAt("us", NOW);
    expect(us?.callingHours?.days.sun).toEqual({ start: "08:00", end: "21:00" });
    expect(us?.abandonment).toMatchObject({
      maxPercent: 3,
      of: "live_answers",
      period: { kind: "rolling", hours: 720, campaignIfShorter: true },
    });
    expect(us?.minRing?.seconds).toBe(15);
    expect(us?.connectWithin?.seconds).toBe(2);
    expect(us?.abandonMessage?.content).toContain("opt-out");
    expect(us?.internalDnc?.applies).toBe("at_once");
    const states = us?.states ?? {};
    expect(Object.keys(states).sort()).toEqual(
      ["AL", "FL", "LA", "MD", "MS", "OK", "PA", "RI", "TX", "UT", "WA"].sort(),
    );
    for (const code of ["FL", "OK", "MD"]) {
      expect(states[code]?.attemptCap).toMatchObject({ max: 3, hours: 24 });
      expect(states[code]?.hours.days.sun).toEqual({ start: "08:00", end: "20:00" });
    }
    expect(states.WA?.dncCooldown?.days).toBe(365);
    expect(states.TX?.hours.days.sun).toEqual({ start: "12:00", end: "21:00" });
    expect(states.TX?.hours.days.sat).toEqual({ start: "09:00", end: "21:00" });
    for (const code of ["AL", "LA", "MS", "UT", "RI", "PA"]) {
      expect({ code, sunday: states[code]?.hours.days.sun }).toEqual({ code, sunday: null });
    }
    for (const code of ["AL", "LA", "UT", "RI", "PA"]) {
      expect({ code, closed: states[code]?.holidays.closed }).toEqual({ code, closed: true });
    }
    expect(states.MS?.holidays.closed).toBe(false);
    expect(states.RI?.hours.days.sat).toEqual({ start: "10:00", end: "17:00" });
    // Pennsylvania's weekends are not in our sources: closed, and the data says so.
    expect(states.PA?.hours.days.sat).toBeNull();
    expect(states.PA?.hours.source.note).toContain("conservative");
  });

  test("uk and ca: their own hours, abandonment and redial rules", () => {
    const uk = profileAt("uk", NOW);
    expect(uk?.callingHours?.days.mon).toEqual({ start: "08:00", end: "21:00" });
    expect(uk?.callingHours?.source.confidence).toBe("L");
    expect(uk?.abandonment?.period).toEqual({ kind: "rolling", hours: 24 });
    expect(
      uk?.redial?.map(({ after, hours, unlessAgentReserved }) => [
        after,
        hours,
        unlessAgentReserved,
      ]),
    ).toEqual([
      ["abandoned", 72, true],
      ["machine", 24, true],
    ]);
    expect(uk?.minRing?.seconds).toBe(15);
    const ca = profileAt("ca", NOW);
    expect(ca?.callingHours?.days.wed).toEqual({ start: "09:00", end: "21:30" });
    expect(ca?.callingHours?.days.sat).toEqual({ start: "10:00", end: "18:00" });
    expect(ca?.callingHours?.days.sun).toEqual({ start: "10:00", end: "18:00" });
    expect(ca?.abandonment).toMatchObject({ maxPercent: 5, period: { kind: "calendar_month" } });
  });
});
