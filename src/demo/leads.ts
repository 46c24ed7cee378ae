import { localParts } from "../lib/zone-time.ts";
import type { Random } from "../simulator/random.ts";

/** The demo's leads: where it is daytime when the demo starts, in numbers kept for fiction. */

const AREAS = [
  ["212", "America/New_York"],
  ["617", "America/New_York"],
  ["312", "America/Chicago"],
  ["713", "America/Chicago"],
  ["303", "America/Denver"],
  ["415", "America/Los_Angeles"],
  ["206", "America/Los_Angeles"],
  ["808", "Pacific/Honolulu"],
  ["671", "Pacific/Guam"],
] as const;

const localHour = (zone: string, at: number) => localParts(zone, at).hour;

/**
 * Where the demo's leads are: the US areas where it is now between 08:00 and 20:00, since the
 * campaign dials under the `us` profile (08:00–21:00 in each lead's own time), from the East
 * Coast to Guam. For the hours of the day when it is night in all of them (10:00–13:00 UTC),
 * London numbers from Ofcom's range for drama under the `uk` profile, so that the demo dials
 * whatever the hour it starts.
 */
export function demoLeads(at = Date.now()) {
  const open = AREAS.filter(([, zone]) => localHour(zone, at) >= 8 && localHour(zone, at) < 20);
  if (open.length > 0) {
    return {
      profile: "us",
      numbers: open.map(([area, zone]) => ({ prefix: `+1${area}5550`, zone })),
    };
  }
  return { profile: "uk", numbers: [{ prefix: "+442079460", zone: "Europe/London" }] };
}

const FIRST = [
  "Ada",
  "Grace",
  "Alan",
  "Edsger",
  "Barbara",
  "Donald",
  "Frances",
  "Ken",
  "Radia",
  "Tim",
];
const LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson"];
const PLANS = ["Basic", "Plus", "Gold"];

/** A hundred numbers per area, in blocks reserved for fiction (555-01xx; 020 7946 0xxx). */
export function leadsCsv(numbers: { prefix: string; zone: string }[], random: Random): string {
  const pick = <T>(values: readonly T[]) => values[Math.floor(random.next() * values.length)] as T;
  const rows = ["phone,timezone,first_name,last_name,plan,renewal_month"];
  for (const { prefix, zone } of numbers) {
    for (let line = 100; line < 200; line++) {
      rows.push(
        `${prefix}${line},${zone},${pick(FIRST)},${pick(LAST)},${pick(PLANS)},${pick(["Dec", "Jan", "Feb"])}`,
      );
    }
  }
  return `${rows.join("\n")}\n`;
}
