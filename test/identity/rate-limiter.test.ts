import { describe, expect, test } from "bun:test";
import type { RateGrantAsk } from "../../db/queries/rate-limit-hits.ts";
import {
  type GrantSource,
  type RateDecision,
  RateLimiter,
  RECHECK_MS,
} from "../../src/identity/rate-limiter.ts";
import { type BucketHits, bucketOf } from "../../src/identity/rate-window.ts";

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

/** A decision of a limiter that counts alone: never a promise. */
function judged(decision: RateDecision | Promise<RateDecision>): RateDecision {
  if (decision instanceof Promise) throw new Error("a limiter alone answered with a promise");
  return decision;
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
      if (judged(limiter.take("k", 10, start + t)).allowed) {
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
    for (let i = 0; i < 3; i++) {
      expect(judged(limiter.take("k", 3, start + i * 10_000)).allowed).toBe(true);
    }
    const refused = limiter.take("k", 3, start + 30_000);
    expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 30 });
    expect(limiter.take("k", 4, start + 30_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(judged(limiter.take("k", 4, start + MINUTE)).allowed).toBe(true);
  });

  test("an attempt held and settled without keeping its unit no longer counts", () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 3; i++) limiter.hold("k", 3, start);
    limiter.settle("k", { takenAt: start, now: start + 1_000, keep: false });
    limiter.settle("k", { takenAt: start, now: start + 1_000, keep: true });
    expect(limiter.take("k", 3, start + 1_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(judged(limiter.take("k", 3, start + 1_000)).allowed).toBe(false);
  });

  test("past the budget, an attempt waits on those held in flight: refused once none is", async () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 2; i++) expect(judged(limiter.hold("k", 2, start)).allowed).toBe(true);
    expect(judged(limiter.hold("k", 2, start)).allowed).toBe(false);
    const first = limiter.settling("k");
    expect(first).toBeInstanceOf(Promise);
    // One gives its unit back: the waiting attempt takes it.
    limiter.settle("k", { takenAt: start, now: start, keep: false });
    await first;
    expect(judged(limiter.hold("k", 2, start)).allowed).toBe(true);
    // Both held fail: nothing is left to wait for.
    for (let i = 0; i < 2; i++) limiter.settle("k", { takenAt: start, now: start, keep: true });
    expect(judged(limiter.hold("k", 2, start)).allowed).toBe(false);
    expect(limiter.settling("k")).toBeUndefined();
  });

  test("an attempt waiting on a key that is forgotten is woken", async () => {
    const limiter = new RateLimiter();
    limiter.hold("k", 1, start);
    const settling = limiter.settling("k");
    for (let i = 0; i < 5_000; i++) limiter.take(`other-${i}`, 1, start);
    await settling;
    expect(limiter.settling("k")).toBeUndefined();
  });

  test("keys tracked are bounded", () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 6_000; i++) limiter.take(`key-${i}`, 5, start);
    expect(limiter.tracked).toBe(5_000);
  });
});

/**
 * The database's side of shared limits, in memory: the grant rule of `rate_limit_grant`
 * (what waits in full, more up to half of what is left after it), answered a tick later.
 */
class FakeBudget {
  readonly rows = new Map<string, number>();
  readonly asks: RateGrantAsk[] = [];
  failing = false;

  readonly source: GrantSource = {
    available: true,
    grant: async (ask) => {
      this.asks.push(ask);
      await Bun.sleep(0);
      if (this.failing) throw new Error("database down");
      let counted = 0;
      for (const [row, hits] of this.rows) {
        const [key, bucket] = row.split("|");
        if (key === ask.key && Number(bucket) >= ask.first) counted += hits;
      }
      const spare = Math.max(ask.limit - counted, 0);
      const granted = Math.min(
        spare,
        ask.need + Math.min(ask.extra, Math.floor(Math.max(spare - ask.need, 0) / 2)),
      );
      this.add({ key: ask.key, bucket: ask.last, hits: granted });
      const hits = Array.from({ length: ask.last - ask.first + 1 }, (_, index) =>
        this.hitsOf(ask.key, ask.first + index),
      );
      return { granted, hits };
    },
  };

  add(delta: BucketHits): void {
    const row = `${delta.key}|${delta.bucket}`;
    this.rows.set(row, Math.max(0, (this.rows.get(row) ?? 0) + delta.hits));
  }

  hitsOf(key: string, bucket?: number): number {
    let sum = 0;
    for (const [row, hits] of this.rows) {
      const [rowKey, rowBucket] = row.split("|");
      if (rowKey === key && (bucket === undefined || Number(rowBucket) === bucket)) sum += hits;
    }
    return sum;
  }

  /** One flush of `limiter`: its idle units given back, its changes handed over. */
  flush(limiter: RateLimiter, now: number, everything = false): void {
    const handover = limiter.handover(now, everything);
    for (const delta of handover.deltas) this.add(delta);
    limiter.adopt(handover);
  }
}

function sharing(budget: FakeBudget, count: number): RateLimiter[] {
  return Array.from({ length: count }, () => {
    const limiter = new RateLimiter();
    limiter.share(budget.source);
    return limiter;
  });
}

const allowedOf = async (decisions: (RateDecision | Promise<RateDecision>)[]) =>
  (await Promise.all(decisions)).filter((decision) => decision.allowed).length;

describe("rate limiter sharing a budget", () => {
  test("the requests of a key waiting for units wait on one ask at a time", async () => {
    const budget = new FakeBudget();
    const [limiter] = sharing(budget, 1) as [RateLimiter];
    const decisions = Array.from({ length: 10 }, () => limiter.take("k", 30, start));
    expect(decisions.every((decision) => decision instanceof Promise)).toBe(true);
    expect(await allowedOf(decisions)).toBe(10);
    // The first request's ask, then one for the nine that came while it was under way; a burst
    // asks nothing ahead.
    expect(budget.asks.map(({ need, extra }) => ({ need, extra }))).toEqual([
      { need: 1, extra: 0 },
      { need: 9, extra: 0 },
    ]);
    expect(budget.hitsOf("k")).toBe(10);
  });

  test("three processes sent a burst at once let exactly the limit through", async () => {
    const budget = new FakeBudget();
    const three = sharing(budget, 3);
    const decisions = Array.from({ length: 45 }, (_, i) =>
      (three[i % 3] as RateLimiter).take("k", 30, start),
    );
    expect(await allowedOf(decisions)).toBe(30);
    expect(budget.hitsOf("k")).toBe(30);
  });

  test("a unit in hand is spent at once; the headers count every process's requests", async () => {
    const budget = new FakeBudget();
    const [a, b] = sharing(budget, 2) as [RateLimiter, RateLimiter];
    for (let i = 0; i < 10; i++) await a.take("k", 30, start);
    budget.flush(a, start);
    // b asks, and learns the ten of a with its units.
    expect(await b.take("k", 30, start)).toMatchObject({ allowed: true, remaining: 19 });
    // a asks ahead for what it spent in the last interval: its next requests need no ask.
    expect(await a.take("k", 30, start)).toMatchObject({ allowed: true });
    const asked = budget.asks.length;
    const next = a.take("k", 30, start);
    expect(next).not.toBeInstanceOf(Promise);
    expect(budget.asks).toHaveLength(asked);
  });

  test("units asked ahead: a second's worth, at most a tenth of the limit and half of what is left", async () => {
    const budget = new FakeBudget();
    const [limiter] = sharing(budget, 1) as [RateLimiter];
    const bucket = bucketOf(start);
    budget.add({ key: "nearly spent", bucket, hits: 95 });
    for (const key of ["k", "small", "nearly spent"]) {
      for (let i = 0; i < 2; i++) await limiter.take(key, key === "small" ? 30 : 100, start);
    }
    budget.flush(limiter, start);
    // Two spent in the last interval: eight ahead, four intervals' worth.
    await limiter.take("k", 100, start);
    expect(budget.asks.at(-1)).toMatchObject({ need: 1, extra: 8 });
    expect(budget.hitsOf("k")).toBe(2 + 9);
    // A limit of 30: three ahead at most.
    await limiter.take("small", 30, start);
    expect(budget.asks.at(-1)).toMatchObject({ need: 1, extra: 3 });
    expect(budget.hitsOf("small")).toBe(2 + 4);
    // Three left: the one needed, and one of the two after it.
    await limiter.take("nearly spent", 100, start);
    expect(budget.hitsOf("nearly spent")).toBe(95 + 2 + 2);
  });

  test("a key asking a third time within one interval asks ahead at the rate since", async () => {
    const budget = new FakeBudget();
    const [limiter] = sharing(budget, 1) as [RateLimiter];
    for (let i = 0; i < 3; i++) await limiter.take("busy", 100, start);
    expect(budget.asks.map((ask) => ask.extra)).toEqual([0, 0, 8]);
    expect(limiter.take("busy", 100, start)).not.toBeInstanceOf(Promise);
  });

  test("a quiet key gives its units back, and another process spends them", async () => {
    const budget = new FakeBudget();
    const [a, b] = sharing(budget, 2) as [RateLimiter, RateLimiter];
    budget.add({ key: "k", bucket: bucketOf(start), hits: 20 });
    for (let i = 0; i < 2; i++) await a.take("k", 30, start);
    budget.flush(a, start);
    await a.take("k", 30, start);
    // a holds three units; b spends what is left, and is refused.
    expect(budget.hitsOf("k")).toBe(26);
    for (let i = 0; i < 4; i++) expect((await b.take("k", 30, start)).allowed).toBe(true);
    expect((await b.take("k", 30, start)).allowed).toBe(false);
    // Quiet since the flush before, a gives them back.
    budget.flush(a, start + 250);
    expect(budget.hitsOf("k")).toBe(30);
    budget.flush(a, start + 500);
    expect(budget.hitsOf("k")).toBe(27);
    // b asks again after its re-check interval, and spends them.
    const later = start + RECHECK_MS;
    for (let i = 0; i < 3; i++) expect((await b.take("k", 30, later)).allowed).toBe(true);
    expect((await b.take("k", 30, later)).allowed).toBe(false);
  });

  test("a spent key is refused without asking until the re-check, or until a bucket leaves", async () => {
    const budget = new FakeBudget();
    const [limiter] = sharing(budget, 1) as [RateLimiter];
    for (let i = 0; i < 3; i++) await limiter.take("k", 3, start);
    const refused = await limiter.take("k", 3, start + 100);
    expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 60 });
    const asked = budget.asks.length;
    for (let i = 0; i < 100; i++) {
      expect(limiter.take("k", 3, start + 200 + i)).toMatchObject({ allowed: false });
    }
    expect(budget.asks).toHaveLength(asked);
    // A second later it asks once, and is refused again for another second.
    expect((await limiter.take("k", 3, start + 100 + RECHECK_MS)).allowed).toBe(false);
    expect(limiter.take("k", 3, start + 200 + RECHECK_MS)).toMatchObject({ allowed: false });
    expect(budget.asks).toHaveLength(asked + 1);
    // The minute after, the bucket has left: the next request asks, and is let through.
    expect((await limiter.take("k", 3, start + MINUTE)).allowed).toBe(true);
  });

  test("units of a past bucket are given back, and the new bucket's are asked for", async () => {
    const budget = new FakeBudget();
    const [limiter] = sharing(budget, 1) as [RateLimiter];
    for (let i = 0; i < 2; i++) await limiter.take("k", 100, start);
    budget.flush(limiter, start);
    await limiter.take("k", 100, start);
    expect(budget.hitsOf("k", bucketOf(start))).toBe(11);
    const next = start + 5_000;
    expect((await limiter.take("k", 100, next)).allowed).toBe(true);
    expect(budget.asks.at(-1)).toMatchObject({ last: bucketOf(next) });
    budget.flush(limiter, next);
    expect(budget.hitsOf("k", bucketOf(start))).toBe(3);
  });

  test("a unit an attempt did not keep goes back to the units held", async () => {
    const budget = new FakeBudget();
    const [limiter] = sharing(budget, 1) as [RateLimiter];
    for (let i = 0; i < 3; i++) await limiter.hold("k", 3, start);
    limiter.settle("k", { takenAt: start, now: start + 10, keep: false });
    expect(limiter.take("k", 3, start + 10)).toMatchObject({ allowed: true, remaining: 0 });
    expect(budget.hitsOf("k")).toBe(3);
    // Given back and left unspent, it returns to the budget at the next flush.
    limiter.settle("k", { takenAt: start, now: start + 20, keep: false });
    budget.flush(limiter, start + 250);
    budget.flush(limiter, start + 500);
    expect(budget.hitsOf("k")).toBe(2);
  });

  test("while the source fails, requests are judged here and handed over later", async () => {
    const budget = new FakeBudget();
    const [limiter] = sharing(budget, 1) as [RateLimiter];
    for (let i = 0; i < 2; i++) await limiter.take("k", 5, start);
    budget.failing = true;
    const decisions = [];
    for (let i = 0; i < 6; i++) decisions.push(await limiter.take("k", 5, start));
    // Two known to the budget, three counted here; the sixth is refused on those counts.
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(3);
    budget.failing = false;
    budget.flush(limiter, start + 250);
    expect(budget.hitsOf("k")).toBe(5);
  });
});
