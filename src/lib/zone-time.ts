/**
 * Wall-clock time in IANA zones with nothing but Intl: the dialer's calling windows and the
 * console's times in a lead's zone both use it (plain code, safe in the browser bundle).
 */
const formats = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: building one costs far more than using it, and claims ask often. */
function formatIn(zone: string) {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formats.set(zone, format);
  }
  return format;
}

/** Local wall-clock parts of an instant in a time zone. */
export function localParts(zone: string, at: number) {
  const parts = formatIn(zone).formatToParts(new Date(at));
  const get = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  return {
    year: get("year"),
    month: get("month"),
    day: get("day"),
    hour: get("hour"),
    minute: get("minute"),
    second: get("second"),
  };
}

/** The zone's offset from UTC at an instant, in milliseconds. */
export function offsetAt(zone: string, at: number) {
  const local = localParts(zone, at);
  return (
    Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second) -
    Math.floor(at / 1000) * 1000
  );
}

/** The instant at which a local wall-clock time occurs in a zone (DST-aware, two passes). */
export function instantOf(zone: string, year: number, month: number, day: number, minutes: number) {
  const wall = Date.UTC(year, month - 1, day, Math.floor(minutes / 60), minutes % 60);
  let guess = wall - offsetAt(zone, wall);
  guess = wall - offsetAt(zone, guess);
  return guess;
}
