/**
 * What an event costs a campaign's calls in flight: the persistent table against copying an
 * object of every call, as the calls were kept before, side by side in one run.
 *
 *   bun bench/live-calls.ts [--events 150000]
 *
 * For 50, 200 and 1,000 calls in flight, each round places a call, changes it and ends it
 * (three events), as a call does; reported: microseconds an event, the median of five runs.
 */
import type { LiveCall } from "../actors/dialing.ts";
import { LiveCalls } from "../actors/live-calls.ts";
import { liveCall } from "../test/helpers/campaigns.ts";
import { median, option, round, table } from "./campaigns-import-common.ts";

const EVENTS = Number(option(process.argv.slice(2), "events", "150000"));
const ROUNDS = Math.ceil(EVENTS / 3);

type Apply<T> = {
  of: (calls: LiveCall[]) => T;
  with: (table: T, call: LiveCall) => T;
  without: (table: T, id: string) => T;
};

const persistent: Apply<LiveCalls> = {
  of: (calls) => LiveCalls.of(calls),
  with: (table, call) => table.with([call]),
  without: (table, id) => table.without(id),
};

const copied: Apply<Record<string, LiveCall>> = {
  of: (calls) => Object.fromEntries(calls.map((call) => [call.id, call])),
  with: (table, call) => ({ ...table, [call.id]: call }),
  without: (table, id) => {
    const { [id]: _ended, ...rest } = table;
    return rest;
  },
};

function microsPerEvent<T>(apply: Apply<T>, inFlight: number): number {
  const calls = Array.from({ length: inFlight }, () => liveCall({ id: crypto.randomUUID() }));
  const placed = Array.from({ length: ROUNDS }, () => liveCall({ id: crypto.randomUUID() }));
  let current = apply.of(calls);
  const started = performance.now();
  for (const call of placed) {
    current = apply.with(current, call);
    current = apply.with(current, { ...call, status: "ringing" });
    current = apply.without(current, call.id);
  }
  return ((performance.now() - started) * 1000) / (ROUNDS * 3);
}

const rows: [string, string][] = [];
for (const inFlight of [50, 200, 1_000]) {
  const runs = <T>(apply: Apply<T>) =>
    round(median(Array.from({ length: 5 }, () => microsPerEvent(apply, inFlight))), 2);
  rows.push([
    `${inFlight} calls in flight: µs an event, table / object copy`,
    `${runs(persistent)} / ${runs(copied)}`,
  ]);
}
console.log(table(["measure", "value"], rows));
