import { describe, expect, test } from "bun:test";
import type { OwnerShare } from "../../src/cluster/leases.ts";
import { handOverPlan, MAX_HAND_OVER } from "../../src/cluster/rebalance.ts";

const share = (owner: string, held: number): OwnerShare => ({
  owner,
  held,
  url: `http://${owner}.test`,
});
const plan = (shares: OwnerShare[], me = "me") => {
  const found = handOverPlan(shares, me);
  return found && { from: found.from.owner, count: found.count };
};

describe("handing campaigns to a process short of its share", () => {
  test("a process that runs none asks the busiest for its share", () => {
    expect(plan([share("a", 9), share("b", 0), share("me", 0)])).toEqual({ from: "a", count: 3 });
    // The others cannot see a process that holds no lease; it counts itself.
    expect(plan([share("a", 6), share("b", 3)])).toEqual({ from: "a", count: 3 });
  });

  test("the busiest is never left below its share", () => {
    expect(plan([share("a", 5), share("b", 5), share("me", 0)])).toEqual({ from: "a", count: 2 });
    expect(plan([share("a", 4), share("b", 3), share("me", 2)])).toEqual({ from: "a", count: 1 });
  });

  test("nothing moves when the spread is as even as it gets, or nobody else runs any", () => {
    expect(plan([share("a", 4), share("b", 3), share("me", 3)])).toBeUndefined();
    expect(plan([share("a", 2), share("me", 1)])).toBeUndefined();
    expect(plan([share("me", 7)])).toBeUndefined();
    expect(plan([])).toBeUndefined();
    // Every other process at or below this one's count.
    expect(plan([share("a", 1), share("b", 0), share("me", 5)])).toBeUndefined();
  });

  test("at most a bounded number move at once", () => {
    expect(plan([share("a", 1_000)])).toEqual({ from: "a", count: MAX_HAND_OVER });
  });
});
