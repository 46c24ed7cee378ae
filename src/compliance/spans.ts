import type { Hours } from "./profile-data.ts";

/** A campaign's own daily window, local to each lead: "HH:MM", end exclusive ("24:00" ok). */
export interface CampaignWindow {
  readonly start: string;
  readonly end: string;
}

/** Local minutes of a day [opens, closes); 1440 is the day's end. */
export type Span = readonly [opens: number, closes: number];
export const WHOLE_DAY: Span = [0, 1440];

const HH_MM = /^(\d\d):(\d\d)$/;

function minutesOf(hhmm: string): number {
  const match = HH_MM.exec(hhmm);
  const minutes = match ? Number(match[1]) * 60 + Number(match[2]) : Number.NaN;
  if (!match || Number(match[2]) > 59 || minutes > 1440) {
    throw new RangeError(`not a time of day (HH:MM): ${hhmm}`);
  }
  return minutes;
}

const pad = (value: number) => (value < 10 ? `0${value}` : String(value));

/** Minutes past midnight as "HH:MM". */
export const clock = (minutes: number) => `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;

export const spanOf = (hours: Hours | null): Span | null =>
  hours && [minutesOf(hours.start), minutesOf(hours.end)];

/** A window whose end is not after its start never opens (overnight windows are not kept). */
export function windowSpan(window: CampaignWindow): Span | null {
  const span: Span = [minutesOf(window.start), minutesOf(window.end)];
  return span[0] < span[1] ? span : null;
}

export function overlap(a: Span | null, b: Span | null): Span | null {
  if (!a || !b) return null;
  const opens = Math.max(a[0], b[0]);
  const closes = Math.min(a[1], b[1]);
  return opens < closes ? [opens, closes] : null;
}
