import { describe, expect, test } from "bun:test";
import { RateLimiter } from "../../src/identity/rate-limiter.ts";

const MINUTE = 60_000;
const start = Date.parse("2026-03-02T12:00:00Z");

/** Heap bytes held by what `build` returns, measured after a full collection. */
function heapCostOf(build: () => unknown): number {
  Bun.gc(true);
  const before = process.memoryUsage().heapUsed;
  const kept = build();
  Bun.gc(true);
  const after = process.memoryUsage().heapUsed;
  expect(kept).toBeDefined();
  return after - before;
}

describe("rate limiter", () => {
  test("a huge limit costs no more memory than a small one", () => {
    const keys = 200;
    const tracking = (limit: number) => () => {
      const limiter = new RateLimiter();
      for (let i = 0; i < keys; i++) limiter.take(`key-${i}`, limit, start);
      return limiter;
    };
    const small = heapCostOf(tracking(10));
    const huge = heapCostOf(tracking(100_000));
    // Both are a few hundred bytes a key; one Float64Array(100,000) alone is 800 KB.
    // A collection may free more than the small limiter holds: its figure can come out negative.
    expect(huge).toBeLessThan(Math.max(small, 0) + 256 * 1024);
    expect(huge / keys).toBeLessThan(2_048);
  });

  test("a limit holds over any rolling minute, to within one 5-second bucket", () => {
    const limiter = new RateLimiter();
    let allowed = 0;
    const times: number[] = [];
    for (let t = 0; t < 5 * MINUTE; t += 250) {
      if (limiter.take("k", 10, start + t).allowed) {
        allowed++;
        times.push(t);
      }
    }
    // Every 60-second span holds at most the limit plus what one bucket's edge lets through.
    for (const from of times) {
      const inMinute = times.filter((t) => t >= from && t < from + 55_000).length;
      expect(inMinute).toBeLessThanOrEqual(10);
    }
    expect(allowed).toBeGreaterThanOrEqual(50);
    expect(allowed).toBeLessThanOrEqual(60);
  });

  test("a refusal says when the oldest bucket leaves; a new limit keeps the count", () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 3; i++) expect(limiter.take("k", 3, start + i * 10_000).allowed).toBe(true);
    const refused = limiter.take("k", 3, start + 30_000);
    expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 30 });
    expect(limiter.take("k", 4, start + 30_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.take("k", 4, start + MINUTE).allowed).toBe(true);
  });

  test("keys tracked are bounded", () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 6_000; i++) limiter.take(`key-${i}`, 5, start);
    expect(limiter.tracked).toBe(5_000);
  });
});
