import { describe, expect, test } from "bun:test";
import { retryAt } from "../../src/webhooks/retries.ts";

const createdAt = new Date("2026-03-02T12:00:00Z");
const DAY = 86_400_000;
const waitAfter = (attempt: number, random: number, elapsedMs = 0) => {
  const now = new Date(createdAt.getTime() + elapsedMs);
  const at = retryAt({ attempt, createdAt, now, windowMs: DAY }, () => random);
  return at ? at.getTime() - now.getTime() : undefined;
};

describe("when a failed webhook is tried again", () => {
  test("the first retry within 30 s, then twice as long each time up to an hour, each within ±25 %", () => {
    expect([waitAfter(1, 0), waitAfter(1, 1)]).toEqual([7_500, 12_500]);
    expect([2, 3, 4].map((attempt) => waitAfter(attempt, 0.5))).toEqual([20_000, 40_000, 80_000]);
    expect(waitAfter(20, 0.5)).toBe(3_600_000);
  });

  test("never past the window: an event older than a day is given up", () => {
    expect(waitAfter(10, 0.5, DAY - 3_600_000)).toBeDefined();
    expect(waitAfter(10, 0.5, DAY - 1_000)).toBeUndefined();
  });
});
