import { instantOf, offsetAt } from "../../lib/zone-time.ts";

/** 75 → "1:15", 3725 → "1:02:05". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${rest}` : `${m}:${rest}`;
}

export const percent = (share: number | undefined) =>
  share === undefined ? "–" : `${(share * 100).toFixed(1)} %`;

export const label = (name: string) => name.replaceAll("_", " ");

/** A field's or column's name as a heading reads it: `first_name` is "First name". */
export const fieldLabel = (name: string) => {
  const words = name.replace(/[._-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
};

export const dateTime = (iso: string | null | undefined, timeZone?: string) =>
  iso
    ? new Date(iso).toLocaleString(undefined, {
        dateStyle: "medium",
        timeStyle: "short",
        ...(timeZone ? { timeZone } : {}),
      })
    : "–";

/** An instant as the wall clock reads in a zone: "Nov 27, 8:00 AM EST". */
export const zonedDateTime = (iso: string, timeZone: string) => {
  try {
    return new Date(iso).toLocaleString(undefined, {
      month: "short",
      day: "numeric",
      hour: "numeric",
      minute: "2-digit",
      timeZone,
      timeZoneName: "short",
    });
  } catch {
    // A zone this browser does not know: the instant alone is still right.
    return undefined;
  }
};

/** The wall-clock time in a zone, with the zone's short name. */
export const timeIn = (at: number, timeZone: string) =>
  new Date(at).toLocaleTimeString(undefined, {
    timeZone,
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  });

/** A `datetime-local` value ("2026-11-25T14:30") read as wall-clock time in a zone. */
export function zonedToInstant(local: string, timeZone: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(local);
  if (!match) return undefined;
  const [, y, mo, d, h, mi] = match.map(Number) as number[];
  return instantOf(timeZone, y ?? 0, mo ?? 1, d ?? 1, (h ?? 0) * 60 + (mi ?? 0));
}

/** An instant as a `datetime-local` value in a zone. */
export function instantToZoned(at: number, timeZone: string): string {
  const shifted = new Date(at + offsetAt(timeZone, at));
  return shifted.toISOString().slice(0, 16);
}
