import { describe, expect, test } from "bun:test";
import { demoLeads, leadsCsv } from "../../src/demo/leads.ts";
import { localParts } from "../../src/lib/zone-time.ts";
import { normalisePhone } from "../../src/modules/leads/normalise.ts";
import { Random } from "../../src/simulator/random.ts";

const HOUR = 3_600_000;
const localHour = (zone: string, at: number) => localParts(zone, at).hour;

describe("the demo's leads, whatever the hour it starts", () => {
  for (let hour = 0; hour < 24; hour++) {
    const at = Date.parse("2026-11-27T00:30:00Z") + hour * HOUR;
    test(`${String(hour).padStart(2, "0")}:30 UTC: valid numbers, each in its profile's hours`, () => {
      const leads = demoLeads(at);
      const rows = leadsCsv(leads.numbers, new Random(1)).trim().split("\n").slice(1);
      expect(rows.length).toBe(100 * leads.numbers.length);
      for (const row of rows) {
        const [phone, zone] = row.split(",") as [string, string];
        expect(normalisePhone(phone, undefined)).toBe(phone);
        expect(localHour(zone, at)).toBeGreaterThanOrEqual(8);
        expect(localHour(zone, at)).toBeLessThan(leads.profile === "uk" ? 21 : 20);
      }
    });
  }
});
