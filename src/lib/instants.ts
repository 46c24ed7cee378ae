import { badRequest, type FieldError, unprocessable } from "../errors.ts";

/** Hours 00–23 and minutes and seconds 00–59: `Date` would read 24:00 as the next midnight. */
const RFC3339 =
  /^\d{4}-\d{2}-\d{2}[T ]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/i;

/** The text's date is one the calendar has: no 30th of February, no month 13. */
function calendarDate(value: string) {
  const [year, month, day] = value.slice(0, 10).split("-").map(Number) as [number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** Years 1 to 9999 in UTC: what the database and RFC 3339 both write. */
const storable = (at: Date) => at.getUTCFullYear() >= 1 && at.getUTCFullYear() <= 9999;

/**
 * The epoch milliseconds of an RFC 3339 instant a client sent, or undefined for anything else:
 * another format, a date the calendar lacks, or a year the database cannot store. Digits past
 * the millisecond round it down, or up with `ceil`: the service keeps whole milliseconds, so a
 * bound of a range rounded up keeps exactly the instants the finer bound would.
 */
export function parseInstant(
  value: string,
  rounding: "floor" | "ceil" = "floor",
): number | undefined {
  const parts = RFC3339.exec(value);
  if (!parts || !calendarDate(value)) return undefined;
  const fraction = parts[2] ?? "";
  const at = new Date(value.replace(fraction, fraction.slice(0, 4)));
  if (Number.isNaN(at.getTime()) || !storable(at)) return undefined;
  const finer = rounding === "ceil" && /[1-9]/.test(fraction.slice(4));
  return at.getTime() + (finer ? 1 : 0);
}

export const INSTANT_EXPECTED = "must be an RFC 3339 timestamp, e.g. 2026-03-02T12:00:00Z";

/** An RFC 3339 instant, or a field error naming the parameter. */
function instantOf(
  field: string,
  value: string | undefined,
  errors: FieldError[],
): Date | undefined {
  if (value === undefined) return undefined;
  // Both bounds round up: `from` keeps the instants at or after it, `to` those before it.
  const at = parseInstant(value, "ceil");
  if (at === undefined) {
    errors.push({ field, message: INSTANT_EXPECTED });
    return undefined;
  }
  return new Date(at);
}

/**
 * A query's `from` and `to`: each an RFC 3339 instant when given (400 naming it otherwise),
 * and `from` not after `to` (422 naming `from`).
 */
export function rangeOf(query: { from?: string | undefined; to?: string | undefined }) {
  const errors: FieldError[] = [];
  const from = instantOf("from", query.from, errors);
  const to = instantOf("to", query.to, errors);
  if (errors.length) throw badRequest("invalid query parameters", errors);
  if (from && to && from.getTime() > to.getTime())
    throw unprocessable("from", "must not be after `to`");
  return { from, to };
}
