/**
 * The regulatory profiles as data: each profile is a list of versions, each version in force
 * from its date on, and each rule names its source and how sure we are of it (H/M/L, as in
 * the project's regulations notes). A correction or a change in the law is a new version
 * here, so that a call can always be traced to the rules it was placed under.
 */

export type Confidence = "H" | "M" | "L";

export interface Source {
  readonly citation: string;
  readonly confidence: Confidence;
  /** What we read into the source, or left out of it. */
  readonly note?: string;
}

/** Local wall-clock hours, "HH:MM": calls may start from `start` until before `end`. */
export interface Hours {
  readonly start: string;
  readonly end: string;
}

export const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** The hours of each day of the week; null: no calls at all that day. */
export type WeeklyHours = { readonly [day in Weekday]: Hours | null };

export interface CallingHours {
  readonly days: WeeklyHours;
  readonly source: Source;
}

export interface AbandonmentRule {
  readonly maxPercent: number;
  /** The denominator: calls answered by a person (estimated machine false positives count). */
  readonly of: "live_answers";
  readonly period:
    | {
        readonly kind: "rolling";
        /** A day (UK) or 30 days (US): the windows the compliance view names. */
        readonly hours: 24 | 720;
        readonly campaignIfShorter?: boolean;
      }
    | { readonly kind: "calendar_month" };
  readonly source: Source;
}

export interface SecondsRule {
  readonly seconds: number;
  readonly source: Source;
}

export interface MessageRule {
  /** Played when a call is answered and no agent is free within the connect time. */
  readonly content: string;
  readonly source: Source;
}

export interface RedialRule {
  /** What the last call of the number ended as. */
  readonly after: "abandoned" | "machine";
  readonly hours: number;
  readonly unlessAgentReserved: boolean;
  readonly source: Source;
}

export interface InternalDncRule {
  /** The product puts a number on the internal list the moment it is asked to. */
  readonly applies: "at_once";
  /** The longest the law allows. */
  readonly legalDeadline: string;
  readonly source: Source;
}

export interface StateOverlay {
  readonly name: string;
  /** A day whose hours are null is a day without calls (a Sunday ban when it is Sunday). */
  readonly hours: CallingHours;
  /** Closed on the state's public holidays and their observed days. */
  readonly holidays: { readonly closed: boolean; readonly source: Source };
  readonly attemptCap?: {
    readonly max: number;
    readonly hours: number;
    readonly scope: string;
    readonly source: Source;
  };
  readonly dncCooldown?: { readonly days: number; readonly source: Source };
}

export interface ProfileVersionData {
  /** The day it takes effect (from 00:00 UTC), also its name. */
  readonly version: string;
  /** Null: no hours beyond the campaign's own window. */
  readonly callingHours: CallingHours | null;
  readonly abandonment?: AbandonmentRule;
  readonly minRing?: SecondsRule;
  /** An answered call not put through to an agent within this time counts as abandoned. */
  readonly connectWithin?: SecondsRule;
  readonly abandonMessage?: MessageRule;
  readonly redial?: readonly RedialRule[];
  readonly internalDnc?: InternalDncRule;
  /** US states (two-letter codes) whose own rules add to the profile's. */
  readonly states?: { readonly [state: string]: StateOverlay };
}

const hours = (start: string, end: string): Hours => ({ start, end });

const everyDay = (day: Hours): WeeklyHours => ({
  sun: day,
  mon: day,
  tue: day,
  wed: day,
  thu: day,
  fri: day,
  sat: day,
});

const weekdaysAndWeekend = (weekday: Hours, saturday: Hours | null, sunday: Hours | null) => ({
  ...everyDay(weekday),
  sat: saturday,
  sun: sunday,
});

const TSR_SAFE_HARBOR = "TSR safe harbor, 16 CFR 310.4(b)(4); 47 CFR 64.1200(a)(7)";
const OFCOM = "Ofcom statement of policy on persistent misuse (2016, in force from 2017-03)";
const CRTC = "CRTC Unsolicited Telecommunications Rules, Part III (Telemarketing Rules)";

/** Florida, Oklahoma, Maryland: 08:00–20:00 every day, and three attempts a day. */
const threeAttemptsADay = (name: string, source: Source, what = "calls"): StateOverlay => ({
  name,
  hours: { days: everyDay(hours("08:00", "20:00")), source },
  holidays: { closed: false, source },
  attemptCap: {
    max: 3,
    hours: 24,
    scope: `${what} per person and subject, across campaigns and caller ids`,
    source,
  },
});

/** No calls on Sundays nor on the state's holidays; a null Saturday: none that day either. */
const noSundaysNorHolidays = (
  name: string,
  weekdays: Hours,
  saturday: Hours | null,
  source: Source,
  holidayNote?: string,
): StateOverlay => ({
  name,
  hours: { days: weekdaysAndWeekend(weekdays, saturday, null), source },
  holidays: {
    closed: true,
    source: holidayNote
      ? { citation: source.citation, confidence: source.confidence, note: holidayNote }
      : source,
  },
});

export const PROFILE_DATA = {
  us: [
    {
      // The latest dated federal change carried: the FCC's internal-DNC deadline.
      version: "2025-04-11",
      callingHours: {
        days: everyDay(hours("08:00", "21:00")),
        source: { citation: "TSR 16 CFR 310.4(c); 47 CFR 64.1200(c)(1)", confidence: "H" },
      },
      abandonment: {
        maxPercent: 3,
        of: "live_answers",
        period: { kind: "rolling", hours: 720, campaignIfShorter: true },
        source: { citation: TSR_SAFE_HARBOR, confidence: "H" },
      },
      minRing: {
        seconds: 15,
        source: { citation: `${TSR_SAFE_HARBOR} (15 s or 4 rings)`, confidence: "H" },
      },
      connectWithin: {
        seconds: 2,
        source: { citation: "TSR 16 CFR 310.4(b)(1)(iv)", confidence: "H" },
      },
      abandonMessage: {
        content: "the seller's name and telephone number, and a key-press opt-out",
        source: { citation: TSR_SAFE_HARBOR, confidence: "H" },
      },
      internalDnc: {
        applies: "at_once",
        legalDeadline: "10 business days",
        source: { citation: "47 CFR 64.1200(d)(3), from 2025-04-11", confidence: "M" },
      },
      states: {
        FL: threeAttemptsADay("Florida", { citation: "Fla. Stat. 501.616(6)", confidence: "H" }),
        OK: threeAttemptsADay("Oklahoma", { citation: "15 O.S. 775C", confidence: "H" }),
        MD: threeAttemptsADay(
          "Maryland",
          { citation: "Maryland Stop the Spam Calls Act", confidence: "H" },
          "calls and texts",
        ),
        WA: {
          name: "Washington",
          hours: {
            days: everyDay(hours("08:00", "20:00")),
            source: { citation: "RCW 19.158.040", confidence: "H" },
          },
          holidays: { closed: false, source: { citation: "RCW 19.158.040", confidence: "H" } },
          dncCooldown: { days: 365, source: { citation: "RCW 19.158.040", confidence: "H" } },
        },
        TX: {
          name: "Texas",
          hours: {
            days: weekdaysAndWeekend(
              hours("09:00", "21:00"),
              hours("09:00", "21:00"),
              hours("12:00", "21:00"),
            ),
            source: { citation: "Tex. Bus. & Com. Code 301.051", confidence: "M" },
          },
          holidays: {
            closed: false,
            source: { citation: "Tex. Bus. & Com. Code 301.051", confidence: "M" },
          },
        },
        AL: noSundaysNorHolidays("Alabama", hours("08:00", "20:00"), hours("08:00", "20:00"), {
          citation: "Alabama telemarketing rules (automated calls)",
          confidence: "H",
          note: "stated for automated calls; applied to every call",
        }),
        LA: noSundaysNorHolidays(
          "Louisiana",
          hours("08:00", "20:00"),
          hours("08:00", "20:00"),
          { citation: "Louisiana telemarketing rules", confidence: "H" },
          "calls are also barred during declared emergencies: not carried",
        ),
        MS: {
          name: "Mississippi",
          hours: {
            days: weekdaysAndWeekend(hours("08:00", "20:00"), hours("08:00", "20:00"), null),
            source: { citation: "Mississippi telemarketing rules", confidence: "M" },
          },
          holidays: {
            closed: false,
            source: {
              citation: "Mississippi telemarketing rules",
              confidence: "M",
              note: "holidays allowed since 2024",
            },
          },
        },
        UT: noSundaysNorHolidays(
          "Utah",
          hours("08:00", "21:00"),
          hours("08:00", "21:00"),
          { citation: "Utah telemarketing rules", confidence: "H" },
          "the ban yields to consent, which the product does not track",
        ),
        RI: noSundaysNorHolidays("Rhode Island", hours("09:00", "18:00"), hours("10:00", "17:00"), {
          citation: "Rhode Island telemarketing rules",
          confidence: "M",
        }),
        PA: noSundaysNorHolidays(
          "Pennsylvania",
          hours("08:00", "21:00"),
          null,
          {
            citation: "Pennsylvania Telemarketer Registration Act",
            confidence: "M",
            note: "weekend hours are not in our sources: Saturday and Sunday are closed as the conservative reading",
          },
          "14 holidays listed",
        ),
      },
    },
  ],
  uk: [
    {
      version: "2017-03-01",
      callingHours: {
        days: everyDay(hours("08:00", "21:00")),
        source: {
          citation: "Working practice of UK contact centres",
          confidence: "L",
          note: "Ofcom sets no calling hours in our sources",
        },
      },
      abandonment: {
        maxPercent: 3,
        of: "live_answers",
        period: { kind: "rolling", hours: 24 },
        source: {
          citation: OFCOM,
          confidence: "H",
          note: "any abandoned call is misuse; 3% per campaign per 24 h is the working line",
        },
      },
      minRing: { seconds: 15, source: { citation: OFCOM, confidence: "H" } },
      connectWithin: { seconds: 2, source: { citation: OFCOM, confidence: "H" } },
      abandonMessage: {
        content: "the company's name and a number to call back; no marketing",
        source: { citation: OFCOM, confidence: "H" },
      },
      redial: [
        {
          after: "abandoned",
          hours: 72,
          unlessAgentReserved: true,
          source: { citation: OFCOM, confidence: "H" },
        },
        {
          after: "machine",
          hours: 24,
          unlessAgentReserved: true,
          source: {
            citation: OFCOM,
            confidence: "M",
            note: "answering-machine false positives are estimated and counted as abandoned",
          },
        },
      ],
    },
  ],
  ca: [
    {
      // The rules took effect as a set with the National Do Not Call List.
      version: "2008-09-30",
      callingHours: {
        days: weekdaysAndWeekend(
          hours("09:00", "21:30"),
          hours("10:00", "18:00"),
          hours("10:00", "18:00"),
        ),
        source: {
          citation: CRTC,
          confidence: "H",
          note: "provinces may be stricter: not carried",
        },
      },
      abandonment: {
        maxPercent: 5,
        of: "live_answers",
        period: { kind: "calendar_month" },
        source: { citation: CRTC, confidence: "M" },
      },
      connectWithin: { seconds: 2, source: { citation: CRTC, confidence: "M" } },
      internalDnc: {
        applies: "at_once",
        legalDeadline: "14 days",
        source: { citation: CRTC, confidence: "H" },
      },
    },
  ],
  none: [{ version: "1970-01-01", callingHours: null }],
} as const satisfies Record<string, readonly ProfileVersionData[]>;
