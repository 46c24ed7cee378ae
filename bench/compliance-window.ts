/**
 * The compliance library's cost per call, in one process without I/O:
 *
 *   bun bench/compliance-window.ts [--calls 200000] [--rounds 5]
 *
 * - `zonesOf`: one per imported lead, over numbers of many area codes and countries.
 * - `windowAt`, claim: a lead in its window (the common case when a claim takes leads), the
 *   instant moving forward a second per call as a running dialer's clock does.
 * - `windowAt`, eligibility: leads spread over the day, most of them closed, so the reasons,
 *   their ends and the next opening are worked out; its p99 is over single calls.
 * - `windowAt`, cold day: a new day for every call (its zone geometry not yet cached), the
 *   most a first request of a day pays.
 * - a state's holidays for a year, read from date-holidays once per (state, year).
 * Medians over rounds; the first round warms the caches and the JIT.
 */
import { usStateHoliday } from "../src/compliance/holidays.ts";
import { profileAt } from "../src/compliance/profiles.ts";
import { windowAt } from "../src/compliance/window.ts";
import { zonesOf } from "../src/compliance/zones.ts";
import { median, round } from "./lib/stats.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`);
  return index === -1 ? fallback : (args[index + 1] ?? fallback);
};
const calls = Number(option("calls", "200000"));
const rounds = Number(option("rounds", "5"));

// A Tuesday that is no holiday in any state of the leads below.
const START = Date.parse("2026-06-02T16:00:00Z");
const us =
  profileAt("us", START) ??
  (() => {
    throw new Error("no us profile");
  })();
const window = { start: "09:00", end: "20:00" };

// Area codes of one zone and of several, with and without state rules; and other countries.
const NUMBERS = [
  "+12125550123",
  "+13125550123",
  "+14155550123",
  "+18505550123",
  "+12705550123",
  "+12085550123",
  "+19155550123",
  "+12055550123",
  "+18015550123",
  "+14015550123",
  "+12155550123",
  "+14165550123",
  "+442079460123",
  "+33142685300",
  "+61291234567",
  "+18005550123",
];
const LEADS = NUMBERS.map(zonesOf).filter(
  (found) => found !== undefined && found.states.length > 0,
);

let sink = 0;

function timeZonesOf() {
  const began = performance.now();
  for (let call = 0; call < calls; call++) {
    sink += zonesOf(NUMBERS[call % NUMBERS.length] as string)?.zones.length ?? 0;
  }
  return ((performance.now() - began) * 1000) / calls;
}

function timeClaims() {
  const began = performance.now();
  for (let call = 0; call < calls; call++) {
    const lead = LEADS[call % LEADS.length];
    if (!lead) continue;
    // 16:00–17:00 UTC: inside every lead's window, from Pacific to Eastern time.
    const at = START + (call % 3600) * 1000;
    const answer = windowAt({ profile: us, ...lead, window, at });
    sink += answer.open ? 1 : 0;
  }
  return ((performance.now() - began) * 1000) / calls;
}

function timeEligibility() {
  const durations: number[] = [];
  const count = Math.min(calls, 50_000);
  const began = performance.now();
  for (let call = 0; call < count; call++) {
    const lead = LEADS[call % LEADS.length];
    if (!lead) continue;
    // Every 37 minutes over two weeks: any hour, any weekday, open or not.
    const at = START + ((call * 37 * 60_000) % (14 * 86_400_000));
    const one = performance.now();
    const answer = windowAt({ profile: us, ...lead, window, at });
    durations.push(performance.now() - one);
    sink += answer.reasons.length;
  }
  const mean = ((performance.now() - began) * 1000) / count;
  durations.sort((a, b) => a - b);
  const p99 = (durations[Math.floor(durations.length * 0.99)] ?? 0) * 1000;
  return { mean, p99, closed: sink };
}

function timeCold(roundIndex: number) {
  const count = 2_000;
  const began = performance.now();
  for (let call = 0; call < count; call++) {
    const lead = LEADS[call % LEADS.length];
    if (!lead) continue;
    // A day not asked about before in this process (holiday years are loaded beforehand).
    const at = START + (roundIndex * count + call + 30) * 86_400_000;
    sink += windowAt({ profile: us, ...lead, window, at }).reasons.length;
  }
  return ((performance.now() - began) * 1000) / count;
}

const HOLIDAY_STATES = ["AL", "LA", "UT", "RI", "PA"];
const YEARS = Array.from({ length: 20 }, (_, index) => 2026 + index);
const loadedAt = performance.now();
for (const year of YEARS)
  for (const state of HOLIDAY_STATES) usStateHoliday(state, `${year}-01-01`);
const holidayYear = (performance.now() - loadedAt) / (YEARS.length * HOLIDAY_STATES.length);

const results = { zonesOf: [] as number[], claim: [] as number[], mean: [] as number[] };
const p99s: number[] = [];
const cold: number[] = [];
for (let index = 0; index <= rounds; index++) {
  const zones = timeZonesOf();
  const claim = timeClaims();
  const eligibility = timeEligibility();
  const coldCall = timeCold(index);
  if (index === 0) continue;
  results.zonesOf.push(zones);
  results.claim.push(claim);
  results.mean.push(eligibility.mean);
  p99s.push(eligibility.p99);
  cold.push(coldCall);
}

console.log(`calls per round: ${calls}, rounds: ${rounds} (after one warm-up round)`);
console.log(`zonesOf:                 ${round(median(results.zonesOf), 3)} µs per call`);
console.log(`windowAt, claim (open):  ${round(median(results.claim), 2)} µs per call`);
console.log(
  `windowAt, eligibility:   ${round(median(results.mean), 2)} µs per call, p99 ${round(median(p99s), 1)} µs`,
);
console.log(`windowAt, cold day:      ${round(median(cold), 1)} µs per call`);
console.log(`a state's holiday year:  ${round(holidayYear, 1)} ms, once`);
if (sink === Number.MIN_SAFE_INTEGER) console.log("unreachable");
