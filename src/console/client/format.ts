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

export const dateTime = (iso: string | null | undefined, timeZone?: string) =>
  iso
    ? new Date(iso).toLocaleString(undefined, {
        dateStyle: "medium",
        timeStyle: "short",
        ...(timeZone ? { timeZone } : {}),
      })
    : "–";

/** The wall-clock time in a zone, with the zone's short name. */
export const timeIn = (at: number, timeZone: string) =>
  new Date(at).toLocaleTimeString(undefined, {
    timeZone,
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  });

/** The offset of a zone from UTC at an instant, in milliseconds. */
function offsetAt(at: number, timeZone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(new Date(at))
      .map((part) => [part.type, Number(part.value)]),
  ) as Record<string, number>;
  const asUtc = Date.UTC(
    parts.year ?? 0,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return asUtc - (at - (at % 1000));
}

/** A `datetime-local` value ("2026-11-25T14:30") read as wall-clock time in a zone. */
export function zonedToInstant(local: string, timeZone: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(local);
  if (!match) return undefined;
  const [, y, mo, d, h, mi] = match.map(Number) as number[];
  const wall = Date.UTC(y ?? 0, (mo ?? 1) - 1, d ?? 1, h ?? 0, mi ?? 0);
  let at = wall - offsetAt(wall, timeZone);
  // Once more at the found instant, for a wall time on the other side of a DST change.
  at = wall - offsetAt(at, timeZone);
  return at;
}

/** An instant as a `datetime-local` value in a zone. */
export function instantToZoned(at: number, timeZone: string): string {
  const shifted = new Date(at + offsetAt(at, timeZone));
  return shifted.toISOString().slice(0, 16);
}
