import { instantOf, localParts } from "../lib/zone-time.ts";

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Whether `at` is inside the daily window [start, end) in the zone's local time, and if not,
 * when the window next opens.
 */
export function callingWindow(zone: string, start: string, end: string, at: number) {
  const local = localParts(zone, at);
  const now = local.hour * 60 + local.minute;
  const open = minutesOf(start);
  if (now >= open && now < minutesOf(end)) return { open: true as const };
  const tomorrow = new Date(Date.UTC(local.year, local.month - 1, local.day + 1));
  const nextOpen =
    now < open
      ? instantOf(zone, local.year, local.month, local.day, open)
      : instantOf(
          zone,
          tomorrow.getUTCFullYear(),
          tomorrow.getUTCMonth() + 1,
          tomorrow.getUTCDate(),
          open,
        );
  return { open: false as const, opensAt: nextOpen };
}
