import { describe, expect, test } from "bun:test";
import type { LiveCall } from "../../actors/dialing.ts";
import { LiveCalls } from "../../actors/live-calls.ts";
import { liveCall } from "../helpers/campaigns.ts";

/** A reproducible stream of numbers in [0, 1). */
function seeded(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function counts(calls: Iterable<LiveCall>) {
  const all = [...calls];
  return {
    size: all.length,
    unbridged: all.filter((call) => !call.bridged).length,
    unreserved: all.filter((call) => !call.bridged && call.agentId === null).length,
  };
}

describe("LiveCalls", () => {
  test("every table made stays as it was made, across folds, and keeps its counts", () => {
    const random = seeded(7);
    let table = LiveCalls.empty;
    const reference = new Map<string, LiveCall>();
    const made: { table: LiveCalls; expected: LiveCall[] }[] = [];
    for (let step = 0; step < 3_000; step++) {
      const id = `call-${Math.floor(random() * 120)}`;
      if (random() < 0.35) {
        table = table.without(id);
        reference.delete(id);
      } else {
        const call = liveCall({
          id,
          bridged: random() < 0.4,
          agentId: random() < 0.5 ? "agent-1" : null,
          attempt: step,
        });
        table = table.with([call]);
        reference.set(id, call);
      }
      made.push({ table, expected: [...reference.values()] });
    }
    for (const { table, expected } of made) {
      // In the order a Map keeps: a replaced call where it was, a new one last.
      expect([...table]).toEqual(expected);
      expect({
        size: table.size,
        unbridged: table.unbridged,
        unreserved: table.unreserved,
      }).toEqual(counts(expected));
      for (const call of expected) expect(table.get(call.id)).toBe(call);
    }
  });

  test("several calls placed at once, and a call removed that was never there", () => {
    const placed = LiveCalls.of([liveCall({ id: "a" }), liveCall({ id: "b", bridged: true })]);
    expect(placed.size).toBe(2);
    expect(placed.unbridged).toBe(1);
    expect(placed.without("nowhere")).toBe(placed);
    expect(placed.with([liveCall({ id: "a", bridged: true })]).unbridged).toBe(0);
    expect(placed.unbridged).toBe(1);
  });

  test("an id that names something of every object is no call", () => {
    const table = LiveCalls.of([liveCall({ id: "a" })]);
    for (const id of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      expect(table.get(id)).toBeUndefined();
      expect(table.has(id)).toBe(false);
    }
  });
});
