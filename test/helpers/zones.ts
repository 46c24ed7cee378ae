import { instantOf, localParts } from "../../src/lib/zone-time.ts";

/**
 * Tests on the real clock dial at whatever hour they run, and a window of 00:00–23:59 is
 * closed in its last minute, as are a profile's hours at night: their leads live in a zone
 * where the hour suits the test now.
 */
const ZONES = [
  "Pacific/Honolulu",
  "America/Los_Angeles",
  "America/Chicago",
  "America/New_York",
  "America/Sao_Paulo",
  "Atlantic/Azores",
  "Europe/London",
  "Europe/Athens",
  "Asia/Dubai",
  "Asia/Dhaka",
  "Asia/Shanghai",
  "Asia/Tokyo",
  "Australia/Brisbane",
  "Pacific/Noumea",
  "Pacific/Auckland",
];

const hourIn = (zone: string) => localParts(zone, Date.now()).hour;

/** A zone where the hour is now within [from, to), the first of `preferred` that is. */
function zoneAtHours(from: number, to: number, preferred: readonly string[]): string {
  const zone = [...preferred, ...ZONES].find(
    (candidate) => hourIn(candidate) >= from && hourIn(candidate) < to,
  );
  if (!zone) throw new Error(`no zone where it is between ${from}:00 and ${to}:00`);
  return zone;
}

/** A zone where every profile's calling hours are open now (10:00–18:00). */
export const daytimeZone = (preferred: readonly string[] = []) => zoneAtHours(10, 18, preferred);

/** A zone whose 00:00–23:59 window stays open for the next hour at least. */
export const awakeZone = (preferred: readonly string[] = []) => zoneAtHours(0, 23, preferred);

/** The instant at which a zone's clocks read `local` ("YYYY-MM-DDTHH:MM"), as ISO 8601. */
export function instantOfWallTime(local: string, zone: string): string {
  const [date = "", time = ""] = local.split("T");
  const [year, month, day] = date.split("-").map(Number) as [number, number, number];
  const [hour, minute] = time.split(":").map(Number) as [number, number];
  return new Date(instantOf(zone, year, month, day, hour * 60 + minute)).toISOString();
}
