import { describe, expect, test } from "bun:test";
import { type ProfileName, profileAt } from "../../src/compliance/profiles.ts";
import {
  type CampaignWindow,
  effectiveWindow,
  type ReasonCode,
  type WindowAnswer,
  windowAllowed,
  windowAt,
} from "../../src/compliance/window.ts";
import { zonesOf } from "../../src/compliance/zones.ts";

const AT = "2026-11-26T12:00:00Z";
const profile = (name: ProfileName) => {
  const found = profileAt(name, Date.parse(AT));
  if (!found) throw new Error(`no ${name} profile`);
  return found;
};
const ALL_DAY: CampaignWindow = { start: "00:00", end: "24:00" };
const iso = (instant: number | null) => (instant === null ? null : new Date(instant).toISOString());

/** The answer in plain terms: codes, each one's end, and the next opening, as ISO strings. */
function summary(answer: WindowAnswer) {
  return {
    open: answer.open,
    codes: answer.reasons.map((reason) => reason.code),
    until: Object.fromEntries(answer.reasons.map((reason) => [reason.code, iso(reason.until)])),
    nextOpenAt: iso(answer.nextOpenAt),
  };
}

interface Row {
  /** What the row shows; the instant is in UTC, its local reading in the name. */
  name: string;
  zones: readonly string[];
  states?: readonly string[];
  window?: CampaignWindow;
  at: string;
  open: boolean;
  codes?: ReasonCode[];
  until?: Record<string, string | null>;
  nextOpenAt?: string | null;
}

function check(profileName: ProfileName, rows: Row[]) {
  test.each(rows.map((row) => [row.name, row] as const))("%s", (_, row) => {
    const answer = summary(
      windowAt({
        profile: profile(profileName),
        zones: row.zones,
        states: row.states,
        window: row.window ?? ALL_DAY,
        at: Date.parse(row.at),
      }),
    );
    expect(answer.open).toBe(row.open);
    expect(answer.codes).toEqual(row.codes ?? []);
    if (row.until) expect(answer.until).toMatchObject(row.until);
    // An open lead opens at the instant asked about.
    const opensAt = row.nextOpenAt === undefined ? iso(Date.parse(row.at)) : row.nextOpenAt;
    expect(answer.nextOpenAt).toBe(opensAt);
  });
}

/** Where the data places a number: a lead's zones and states, as an import would set them. */
function placed(number: string) {
  const found = zonesOf(number);
  if (!found) throw new Error(`${number} is placed nowhere`);
  return found;
}

const NY = ["America/New_York"];
const CHI = ["America/Chicago"];
const DEN = ["America/Denver"];
const LA = ["America/Los_Angeles"];

describe("us: federal hours and the campaign's window", () => {
  check("us", [
    { name: "Mon 08:00 EDT opens", zones: NY, at: "2026-06-01T12:00:00Z", open: true },
    {
      name: "Mon 07:59 EDT: legal hours, until 08:00",
      zones: NY,
      at: "2026-06-01T11:59:00Z",
      open: false,
      codes: ["legal_hours"],
      until: { legal_hours: "2026-06-01T12:00:00.000Z" },
      nextOpenAt: "2026-06-01T12:00:00.000Z",
    },
    { name: "Mon 20:59 EDT still open", zones: NY, at: "2026-06-02T00:59:00Z", open: true },
    {
      name: "Mon 21:00 EDT: closed until Tue 08:00",
      zones: NY,
      at: "2026-06-02T01:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-06-02T12:00:00.000Z",
    },
    {
      name: "Mon 17:30 EDT after a 09:00–17:00 window: the campaign's, until Tue 09:00",
      zones: NY,
      window: { start: "09:00", end: "17:00" },
      at: "2026-06-01T21:30:00Z",
      open: false,
      codes: ["outside_window"],
      until: { outside_window: "2026-06-02T13:00:00.000Z" },
      nextOpenAt: "2026-06-02T13:00:00.000Z",
    },
    {
      name: "a 21:00–22:00 window never meets the legal hours: no next opening",
      zones: NY,
      window: { start: "21:00", end: "22:00" },
      at: "2026-06-02T01:30:00Z",
      open: false,
      codes: ["legal_hours"],
      until: { legal_hours: "2026-06-02T12:00:00.000Z" },
      nextOpenAt: null,
    },
    {
      name: "an empty window never opens",
      zones: NY,
      window: { start: "10:00", end: "10:00" },
      at: "2026-06-01T14:30:00Z",
      open: false,
      codes: ["outside_window"],
      until: { outside_window: null },
      nextOpenAt: null,
    },
    {
      name: "a state without rules of its own adds none",
      zones: NY,
      states: ["NY", "NJ"],
      at: "2026-06-07T12:00:00Z",
      open: true,
    },
  ]);
});

describe("us: the states' own hours", () => {
  check("us", [
    {
      name: "FL Mon 19:59 EDT open",
      zones: NY,
      states: ["FL"],
      at: "2026-06-01T23:59:00Z",
      open: true,
    },
    {
      name: "FL Mon 20:00 EDT: state rule until Tue 08:00",
      zones: NY,
      states: ["FL"],
      at: "2026-06-02T00:00:00Z",
      open: false,
      codes: ["state_rule"],
      until: { state_rule: "2026-06-02T12:00:00.000Z" },
      nextOpenAt: "2026-06-02T12:00:00.000Z",
    },
    {
      name: "OK Sun 08:00 CDT open",
      zones: CHI,
      states: ["OK"],
      at: "2026-06-07T13:00:00Z",
      open: true,
    },
    {
      name: "OK Sun 20:00 CDT closed until Mon 08:00",
      zones: CHI,
      states: ["OK"],
      at: "2026-06-08T01:00:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-08T13:00:00.000Z",
    },
    {
      name: "MD Sat 20:00 EDT closed until Sun 08:00",
      zones: NY,
      states: ["MD"],
      at: "2026-06-07T00:00:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-07T12:00:00.000Z",
    },
    {
      name: "WA Mon 20:30 PDT closed until Tue 08:00",
      zones: LA,
      states: ["WA"],
      at: "2026-06-02T03:30:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-02T15:00:00.000Z",
    },
    {
      name: "TX Sun 11:59 CDT closed until 12:00",
      zones: CHI,
      states: ["TX"],
      at: "2026-06-07T16:59:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-07T17:00:00.000Z",
    },
    {
      name: "TX Sun 12:00 CDT open",
      zones: CHI,
      states: ["TX"],
      at: "2026-06-07T17:00:00Z",
      open: true,
    },
    {
      name: "TX Sat 08:59 CDT: the state's 09:00, not the federal 08:00",
      zones: CHI,
      states: ["TX"],
      at: "2026-06-06T13:59:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-06T14:00:00.000Z",
    },
    {
      name: "TX Sat 21:00 CDT: federal hours end at Sun 08:00, the state's at Sun 12:00",
      zones: CHI,
      states: ["TX"],
      at: "2026-06-07T02:00:00Z",
      open: false,
      codes: ["legal_hours", "state_rule"],
      until: {
        legal_hours: "2026-06-07T13:00:00.000Z",
        state_rule: "2026-06-07T17:00:00.000Z",
      },
      nextOpenAt: "2026-06-07T17:00:00.000Z",
    },
    {
      name: "AL Sat 19:59 CDT open",
      zones: CHI,
      states: ["AL"],
      at: "2026-06-07T00:59:00Z",
      open: true,
    },
    {
      name: "AL Sat 20:00 CDT: closed over Sunday until Mon 08:00",
      zones: CHI,
      states: ["AL"],
      at: "2026-06-07T01:00:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-08T13:00:00.000Z",
    },
    {
      name: "AL Sun 10:00 CDT: Sunday until midnight, the state's hours until Mon 08:00",
      zones: CHI,
      states: ["AL"],
      at: "2026-06-07T15:00:00Z",
      open: false,
      codes: ["state_rule", "sunday"],
      until: { state_rule: "2026-06-08T13:00:00.000Z", sunday: "2026-06-08T05:00:00.000Z" },
      nextOpenAt: "2026-06-08T13:00:00.000Z",
    },
    {
      name: "LA Sun 10:00 CDT closed",
      zones: CHI,
      states: ["LA"],
      at: "2026-06-07T15:00:00Z",
      open: false,
      codes: ["state_rule", "sunday"],
      nextOpenAt: "2026-06-08T13:00:00.000Z",
    },
    {
      name: "LA Mardi Gras (Tue 2026-02-17) 10:00 CST closed until Wed 08:00",
      zones: CHI,
      states: ["LA"],
      at: "2026-02-17T16:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      until: { holiday: "2026-02-18T06:00:00.000Z" },
      nextOpenAt: "2026-02-18T14:00:00.000Z",
    },
    {
      name: "MS Sun 10:00 CDT closed",
      zones: CHI,
      states: ["MS"],
      at: "2026-06-07T15:00:00Z",
      open: false,
      codes: ["state_rule", "sunday"],
      nextOpenAt: "2026-06-08T13:00:00.000Z",
    },
    {
      name: "MS on an observed holiday (Fri 2026-07-03) open: holidays allowed",
      zones: CHI,
      states: ["MS"],
      at: "2026-07-03T15:00:00Z",
      open: true,
    },
    {
      name: "UT Sat 20:30 MDT open (21:00)",
      zones: DEN,
      states: ["UT"],
      at: "2026-06-07T02:30:00Z",
      open: true,
    },
    {
      name: "UT Sun 10:00 MDT closed",
      zones: DEN,
      states: ["UT"],
      at: "2026-06-07T16:00:00Z",
      open: false,
      codes: ["state_rule", "sunday"],
      nextOpenAt: "2026-06-08T14:00:00.000Z",
    },
    {
      name: "UT Pioneer Day (Fri 2026-07-24) closed",
      zones: DEN,
      states: ["UT"],
      at: "2026-07-24T18:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      nextOpenAt: "2026-07-25T14:00:00.000Z",
    },
    {
      name: "RI Mon 08:59 EDT closed until 09:00",
      zones: NY,
      states: ["RI"],
      at: "2026-06-01T12:59:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-01T13:00:00.000Z",
    },
    {
      name: "RI Mon 17:59 EDT open",
      zones: NY,
      states: ["RI"],
      at: "2026-06-01T21:59:00Z",
      open: true,
    },
    {
      name: "RI Mon 18:00 EDT closed until Tue 09:00",
      zones: NY,
      states: ["RI"],
      at: "2026-06-01T22:00:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-02T13:00:00.000Z",
    },
    {
      name: "RI Sat 09:30 EDT closed until 10:00",
      zones: NY,
      states: ["RI"],
      at: "2026-06-06T13:30:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-06T14:00:00.000Z",
    },
    {
      name: "RI Sat 17:00 EDT closed until Mon 09:00",
      zones: NY,
      states: ["RI"],
      at: "2026-06-06T21:00:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-08T13:00:00.000Z",
    },
    {
      name: "RI Victory Day (Mon 2026-08-10) closed until Tue 09:00",
      zones: NY,
      states: ["RI"],
      at: "2026-08-10T14:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      until: { holiday: "2026-08-11T04:00:00.000Z" },
      nextOpenAt: "2026-08-11T13:00:00.000Z",
    },
    {
      name: "PA Mon 20:59 EDT open",
      zones: NY,
      states: ["PA"],
      at: "2026-06-02T00:59:00Z",
      open: true,
    },
    {
      name: "PA Sat 12:00 EDT closed (weekends, read conservatively), not a Sunday ban",
      zones: NY,
      states: ["PA"],
      at: "2026-06-06T16:00:00Z",
      open: false,
      codes: ["state_rule"],
      nextOpenAt: "2026-06-08T12:00:00.000Z",
    },
    {
      name: "PA Sun 12:00 EDT closed",
      zones: NY,
      states: ["PA"],
      at: "2026-06-07T16:00:00Z",
      open: false,
      codes: ["state_rule", "sunday"],
      nextOpenAt: "2026-06-08T12:00:00.000Z",
    },
    {
      name: "PA Christmas (Fri 2026-12-25) closed through the weekend",
      zones: NY,
      states: ["PA"],
      at: "2026-12-25T17:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      until: { holiday: "2026-12-26T05:00:00.000Z" },
      nextOpenAt: "2026-12-28T13:00:00.000Z",
    },
  ]);
});

describe("us: observed holidays in states that ban them", () => {
  check("us", [
    {
      name: "AL Thu 2026-07-02 is no holiday",
      zones: CHI,
      states: ["AL"],
      at: "2026-07-02T17:00:00Z",
      open: true,
    },
    {
      name: "AL Fri 2026-07-03: Saturday's Independence Day observed on the Friday",
      zones: CHI,
      states: ["AL"],
      at: "2026-07-03T17:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      // The holiday and its observed day run on into Sunday's ban.
      until: { holiday: "2026-07-05T05:00:00.000Z", state_rule: "2026-07-06T13:00:00.000Z" },
      nextOpenAt: "2026-07-06T13:00:00.000Z",
    },
    {
      name: "AL Sat 2026-07-04: the holiday itself",
      zones: CHI,
      states: ["AL"],
      at: "2026-07-04T17:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      nextOpenAt: "2026-07-06T13:00:00.000Z",
    },
    {
      name: "UT Sun 2027-07-04: Sunday and the holiday",
      zones: DEN,
      states: ["UT"],
      at: "2027-07-04T18:00:00Z",
      open: false,
      codes: ["state_rule", "sunday", "holiday"],
      until: { sunday: "2027-07-05T06:00:00.000Z", holiday: "2027-07-06T06:00:00.000Z" },
      nextOpenAt: "2027-07-06T14:00:00.000Z",
    },
    {
      name: "UT Mon 2027-07-05: Sunday's Independence Day observed on the Monday",
      zones: DEN,
      states: ["UT"],
      at: "2027-07-05T18:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      until: { holiday: "2027-07-06T06:00:00.000Z" },
      nextOpenAt: "2027-07-06T14:00:00.000Z",
    },
    {
      name: "AL Fri 2027-12-31: next year's New Year's Day observed this year",
      zones: CHI,
      states: ["AL"],
      at: "2027-12-31T18:00:00Z",
      open: false,
      codes: ["state_rule", "holiday"],
      nextOpenAt: "2028-01-03T14:00:00.000Z",
    },
    {
      name: "AL Sat 2026-02-14: an observance (Valentine's Day) is no holiday",
      zones: CHI,
      states: ["AL"],
      at: "2026-02-14T18:00:00Z",
      open: true,
    },
  ]);
});

describe("us: both DST changes, in wall-clock time", () => {
  check("us", [
    {
      name: "Sat 2026-03-07 07:30 EST closed until 08:00 EST",
      zones: NY,
      at: "2026-03-07T12:30:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-07T13:00:00.000Z",
    },
    {
      name: "Sat 21:30 EST: opens Sun 08:00 EDT, a 23-hour day later",
      zones: NY,
      at: "2026-03-08T02:30:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-08T12:00:00.000Z",
    },
    {
      name: "spring-forward day 08:00 EDT open",
      zones: NY,
      at: "2026-03-08T12:00:00Z",
      open: true,
    },
    {
      name: "spring-forward day 20:59 EDT open, 21:00 EDT closed",
      zones: NY,
      at: "2026-03-09T01:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-09T12:00:00.000Z",
    },
    {
      name: "Sat 2026-10-31 21:00 EDT: opens Sun 08:00 EST, a 25-hour day later",
      zones: NY,
      at: "2026-11-01T01:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-11-01T13:00:00.000Z",
    },
    {
      name: "fall-back day 07:59 EST closed",
      zones: NY,
      at: "2026-11-01T12:59:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-11-01T13:00:00.000Z",
    },
    { name: "fall-back day 20:59 EST open", zones: NY, at: "2026-11-02T01:59:00Z", open: true },
    {
      name: "fall-back day 21:00 EST closed",
      zones: NY,
      at: "2026-11-02T02:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-11-02T13:00:00.000Z",
    },
  ]);
});

describe("a window inside the night's DST gap and repeated hour (profile none)", () => {
  check("none", [
    {
      name: "02:30–05:00 on the spring-forward day: 01:59:59 EST closed until the jump",
      zones: NY,
      window: { start: "02:30", end: "05:00" },
      at: "2026-03-08T06:59:59Z",
      open: false,
      codes: ["outside_window"],
      nextOpenAt: "2026-03-08T07:00:00.000Z",
    },
    {
      name: "02:30–05:00: 03:00 EDT, right after the jump, is open",
      zones: NY,
      window: { start: "02:30", end: "05:00" },
      at: "2026-03-08T07:00:00Z",
      open: true,
    },
    {
      name: "02:00–02:30 does not exist that night: next open Mon 02:00 EDT",
      zones: NY,
      window: { start: "02:00", end: "02:30" },
      at: "2026-03-08T06:30:00Z",
      open: false,
      codes: ["outside_window"],
      nextOpenAt: "2026-03-09T06:00:00.000Z",
    },
    {
      name: "01:30–03:00 on the fall-back day: the first 01:30 (EDT) stays closed",
      zones: NY,
      window: { start: "01:30", end: "03:00" },
      at: "2026-11-01T05:45:00Z",
      open: false,
      codes: ["outside_window"],
      nextOpenAt: "2026-11-01T06:30:00.000Z",
    },
    {
      name: "00:00–01:30 on the fall-back day: closed at the first 01:30",
      zones: NY,
      window: { start: "00:00", end: "01:30" },
      at: "2026-11-01T05:30:00Z",
      open: false,
      codes: ["outside_window"],
      nextOpenAt: "2026-11-02T05:00:00.000Z",
    },
    {
      name: "00:00–01:30: and it stays closed through the repeated 01:15 (EST)",
      zones: NY,
      window: { start: "00:00", end: "01:30" },
      at: "2026-11-01T06:15:00Z",
      open: false,
      codes: ["outside_window"],
      nextOpenAt: "2026-11-02T05:00:00.000Z",
    },
    {
      name: "no profile hours: 03:00 local is open in an all-day window",
      zones: NY,
      at: "2026-06-01T07:00:00Z",
      open: true,
    },
  ]);
});

const LONDON = placed("+442079460123").zones;
describe("uk: 08:00–21:00 across BST's start and end", () => {
  check("uk", [
    {
      name: "Sat 2026-03-28 07:59 GMT closed",
      zones: LONDON,
      at: "2026-03-28T07:59:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-28T08:00:00.000Z",
    },
    {
      name: "Sat 21:00 GMT: opens Sun 08:00 BST",
      zones: LONDON,
      at: "2026-03-28T21:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-29T07:00:00.000Z",
    },
    {
      name: "Sun 2026-03-29 08:00 BST open",
      zones: LONDON,
      at: "2026-03-29T07:00:00Z",
      open: true,
    },
    {
      name: "Sat 2026-10-24 21:30 BST closed until Sun 08:00 GMT",
      zones: LONDON,
      at: "2026-10-24T20:30:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-10-25T08:00:00.000Z",
    },
    {
      name: "Sun 2026-10-25 20:30 GMT open",
      zones: LONDON,
      at: "2026-10-25T20:30:00Z",
      open: true,
    },
  ]);
});

const TORONTO = placed("+14165550123").zones;
describe("ca: weekday and weekend hours across DST", () => {
  check("ca", [
    {
      name: "Fri 2026-03-06 21:29 EST open",
      zones: TORONTO,
      at: "2026-03-07T02:29:00Z",
      open: true,
    },
    {
      name: "Fri 21:30 EST closed until Sat 10:00 EST",
      zones: TORONTO,
      at: "2026-03-07T02:30:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-07T15:00:00.000Z",
    },
    {
      name: "Sat 18:00 EST closed until Sun 10:00 EDT",
      zones: TORONTO,
      at: "2026-03-07T23:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-08T14:00:00.000Z",
    },
    {
      name: "Mon 2026-03-09 08:59 EDT closed until 09:00",
      zones: TORONTO,
      at: "2026-03-09T12:59:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-03-09T13:00:00.000Z",
    },
    {
      name: "Sat 2026-10-31 18:00 EDT closed until Sun 10:00 EST",
      zones: TORONTO,
      at: "2026-10-31T22:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-11-01T15:00:00.000Z",
    },
  ]);
});

const PANHANDLE = placed("+18505550123");
const KENTUCKY = placed("+12705550123");
const IDAHO = placed("+12085550123");
describe("numbers that span zones are open only when every zone is", () => {
  check("us", [
    {
      name: "850 (FL) Mon 08:30 EDT / 07:30 CDT: closed by Central time",
      ...PANHANDLE,
      at: "2026-06-01T12:30:00Z",
      open: false,
      codes: ["legal_hours", "state_rule"],
      nextOpenAt: "2026-06-01T13:00:00.000Z",
    },
    {
      name: "850 (FL) Mon 19:59 EDT open",
      ...PANHANDLE,
      at: "2026-06-01T23:59:00Z",
      open: true,
    },
    {
      name: "850 (FL) Mon 20:00 EDT / 19:00 CDT: closed by Florida's 20:00 in Eastern time",
      ...PANHANDLE,
      at: "2026-06-02T00:00:00Z",
      open: false,
      codes: ["state_rule"],
      until: { state_rule: "2026-06-02T13:00:00.000Z" },
      nextOpenAt: "2026-06-02T13:00:00.000Z",
    },
    {
      name: "270 (KY) 21:00 EDT / 20:00 CDT: closed by Eastern time",
      ...KENTUCKY,
      at: "2026-06-02T01:00:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-06-02T13:00:00.000Z",
    },
    {
      name: "208 (ID) 08:30 MDT / 07:30 PDT: closed by Pacific time",
      ...IDAHO,
      at: "2026-06-01T14:30:00Z",
      open: false,
      codes: ["legal_hours"],
      nextOpenAt: "2026-06-01T15:00:00.000Z",
    },
    {
      name: "a Sunday ban across two zones lasts until Monday in the later one",
      zones: ["America/New_York", "America/Chicago"],
      states: ["AL"],
      at: "2026-06-07T15:00:00Z",
      open: false,
      codes: ["state_rule", "sunday"],
      until: { sunday: "2026-06-08T05:00:00.000Z", state_rule: "2026-06-08T13:00:00.000Z" },
      nextOpenAt: "2026-06-08T13:00:00.000Z",
    },
  ]);

  test("the reasons name the zone and the rule that close the lead", () => {
    const answer = windowAt({
      profile: profile("us"),
      zones: ["America/Chicago", "America/New_York"],
      states: ["FL"],
      window: ALL_DAY,
      at: Date.parse("2026-06-01T12:30:00Z"),
    });
    expect(answer.reasons.map((reason) => reason.message)).toEqual([
      "Outside the US profile's hours for Monday (08:00–21:00) in America/Chicago",
      "Outside FL's hours for Monday (08:00–20:00) in America/Chicago",
    ]);
  });
});

describe("windowAt's contract", () => {
  test("an open lead has no reasons and opens now", () => {
    const at = Date.parse("2026-06-01T15:00:00Z");
    const answer = windowAt({ profile: profile("us"), zones: NY, window: ALL_DAY, at });
    expect(answer).toEqual({ open: true, reasons: [], nextOpenAt: at });
  });

  test("a holiday's reason names it", () => {
    const answer = windowAt({
      profile: profile("us"),
      zones: CHI,
      states: ["AL"],
      window: ALL_DAY,
      at: Date.parse("2026-07-03T17:00:00Z"),
    });
    expect(answer.reasons.find((reason) => reason.code === "holiday")?.message).toContain(
      "Independence Day",
    );
  });

  test("refuses a lead without zones and a malformed window", () => {
    const at = Date.parse(AT);
    expect(() => windowAt({ profile: profile("us"), zones: [], window: ALL_DAY, at })).toThrow(
      RangeError,
    );
    for (const start of ["9:00", "25:00", "10:60", "ten"]) {
      expect(() =>
        windowAt({ profile: profile("us"), zones: NY, window: { start, end: "17:00" }, at }),
      ).toThrow(RangeError);
    }
  });
});

describe("windowAllowed", () => {
  test.each([
    ["us", "22:00", "23:00", false],
    ["us", "06:00", "08:00", false],
    ["us", "20:30", "23:00", true],
    ["us", "10:00", "10:00", false],
    ["us", "17:00", "09:00", false],
    ["ca", "21:30", "23:00", false],
    ["ca", "18:00", "21:30", true],
    ["ca", "07:00", "09:00", false],
    ["uk", "21:00", "22:00", false],
    ["none", "22:00", "23:00", true],
    ["none", "23:00", "22:00", false],
  ] as const)("%s %s–%s: %p", (name, start, end, allowed) => {
    expect(windowAllowed(profile(name), { start, end })).toBe(allowed);
  });
});

describe("effectiveWindow", () => {
  test("the campaign's window cut to the profile's and the state's hours", () => {
    const window = { start: "07:00", end: "22:00" };
    const texas = effectiveWindow(profile("us"), window, "TX");
    expect(texas.days.sun).toEqual({ start: "12:00", end: "21:00" });
    expect(texas.days.mon).toEqual({ start: "09:00", end: "21:00" });
    expect(texas.closedOnHolidays).toBe(false);
    const pennsylvania = effectiveWindow(profile("us"), window, "PA");
    expect(pennsylvania.days.sat).toBeNull();
    expect(pennsylvania.days.fri).toEqual({ start: "08:00", end: "21:00" });
    expect(pennsylvania.closedOnHolidays).toBe(true);
    const federal = effectiveWindow(profile("us"), window);
    expect(federal.days.sun).toEqual({ start: "08:00", end: "21:00" });
    const canada = effectiveWindow(profile("ca"), window);
    expect(canada.days.wed).toEqual({ start: "09:00", end: "21:30" });
    expect(canada.days.sat).toEqual({ start: "10:00", end: "18:00" });
    expect(effectiveWindow(profile("none"), window).days.sun).toEqual(window);
    expect(effectiveWindow(profile("us"), { start: "22:00", end: "23:00" }).days.mon).toBeNull();
  });
});
