import { afterEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { systemClock } from "../../actors/ports.ts";
import { grantRateHits } from "../../db/queries/rate-limit-hits.ts";
import { rowsOf } from "../../db/rows.ts";
import { createApp, createServiceDeps } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { bucketOf, RateLimiter } from "../../src/identity/rate-limiter.ts";
import { SharedRateCounts } from "../../src/identity/shared-rate-counts.ts";
import { type Logger, silentLogger } from "../../src/logger.ts";
import { createWorkspace, TEST_SECRET } from "../helpers/app.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testDatabase } from "../helpers/database.ts";

/**
 * Rate limits shared by the processes on one PostgreSQL database: several limiters, each with
 * its own flusher, against the one `rate_limit_hits` table.
 */
const enabled = Boolean(process.env.DATABASE_URL);
const HOUR = 3_600_000;

const running: SharedRateCounts[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const counts of running.splice(0)) await counts.stop();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A process's limiter and its flusher; `flushMs` of an hour leaves the flushes to the test. */
async function processes(
  count: number,
  options: { clock?: ManualClock | typeof systemClock; flushMs?: number } = {},
) {
  const database = await testDatabase();
  return Array.from({ length: count }, () => {
    const limiter = new RateLimiter();
    const counts = new SharedRateCounts({
      limiters: { api_key: limiter },
      raw: database.raw,
      cleanupDb: database.longWork,
      clock: options.clock ?? systemClock,
      logger: silentLogger,
      flushMs: options.flushMs ?? HOUR,
    });
    counts.start();
    running.push(counts);
    return { limiter, counts };
  });
}

const hitsOf = async (key: string) => {
  const database = await testDatabase();
  const result = await database.db.execute(
    sql`select coalesce(sum(hits), 0)::int as hits from rate_limit_hits where key = ${key}`,
  );
  return rowsOf<{ hits: number }>(result)[0]?.hits ?? 0;
};

describe.skipIf(!enabled)("rate limits across processes", () => {
  test("grants of one key from many connections at once never spend the same units", async () => {
    await testDatabase(); // migrated
    const client = postgres(process.env.DATABASE_URL as string, { max: 16, onnotice: () => {} });
    cleanups.push(() => client.end({ timeout: 1 }));
    const raw = { kind: "postgres" as const, client, longWork: client };
    const key = `api_key:${crypto.randomUUID()}`;
    const last = bucketOf(Date.now());
    // Half of them charge the next bucket's row: one row's lock alone would not keep them apart.
    // Without the key's lock, some of 600 asks on sixteen connections overlap and grant too many.
    const grants = await Promise.all(
      Array.from({ length: 600 }, (_, i) =>
        grantRateHits(raw, {
          key,
          first: last - 11 + (i % 2),
          last: last + (i % 2),
          limit: 300,
          need: 1,
          extra: 0,
        }),
      ),
    );
    expect(grants.reduce((sum, grant) => sum + grant.granted, 0)).toBe(300);
    expect(await hitsOf(key)).toBe(300);
  });

  test("three limiters flushing between rounds let the limit through, and at most a round more", async () => {
    const clock = new ManualClock();
    const three = await processes(3, { clock });
    const key = crypto.randomUUID();
    let allowed = 0;
    for (let round = 0; round < 20; round++) {
      for (const { limiter } of three) if (limiter.take(key, 30, clock.now()).allowed) allowed++;
      for (const { counts } of three) await counts.flush();
      clock.advance(1_000);
    }
    // Each judges on the totals of its last flush: the others' requests of the round since are
    // what the limit may be passed by, here at most two.
    expect(allowed).toBeGreaterThanOrEqual(30);
    expect(allowed).toBeLessThanOrEqual(32);
    expect(await hitsOf(`api_key:${key}`)).toBe(allowed);
    // Each now refuses on the shared total, with the time the oldest requests leave.
    const refused = three[0]?.limiter.take(key, 30, clock.now());
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
  });

  test("round-robin at 30 a minute over three processes, with real flushes: about 30 of 45 pass", async () => {
    const three = await processes(3, { flushMs: 250 });
    const key = crypto.randomUUID();
    const local = [new RateLimiter(), new RateLimiter(), new RateLimiter()];
    let allowed = 0;
    let allowedUnshared = 0;
    for (let i = 0; i < 45; i++) {
      const now = Date.now();
      if (three[i % 3]?.limiter.take(key, 30, now).allowed) allowed++;
      if (local[i % 3]?.take(key, 30, now).allowed) allowedUnshared++;
      await Bun.sleep(40);
    }
    // Counted in each process alone, every request passes; shared, the limit holds to within
    // what the other processes let through in one flush interval (here about 6 requests).
    expect(allowedUnshared).toBe(45);
    expect(allowed).toBeGreaterThanOrEqual(30);
    expect(allowed).toBeLessThanOrEqual(35);
    for (const { counts } of three) await counts.flush();
    expect(await hitsOf(`api_key:${key}`)).toBe(allowed);
  });

  test("a process judging a key for the first time learns its total at the next flush", async () => {
    const clock = new ManualClock();
    const [a, b] = await processes(2, { clock });
    const key = crypto.randomUUID();
    for (let i = 0; i < 5; i++) expect(a?.limiter.take(key, 5, clock.now()).allowed).toBe(true);
    await a?.counts.flush();
    // b has not seen the key: its first request goes on what b knows.
    expect(b?.limiter.take(key, 5, clock.now()).allowed).toBe(true);
    await b?.counts.flush();
    expect(b?.limiter.take(key, 5, clock.now())).toMatchObject({ allowed: false });
    // a learns of b's request at its next flush.
    expect(a?.limiter.peek(key, 6, clock.now()).allowed).toBe(true);
    await a?.counts.flush();
    expect(a?.limiter.peek(key, 6, clock.now()).allowed).toBe(false);
    // The minute after, the buckets have left every process's window.
    clock.advance(60_000);
    expect(a?.limiter.take(key, 5, clock.now()).allowed).toBe(true);
  });

  test("a database that fails is logged once, and each process keeps limiting alone", async () => {
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (message) => warnings.push(message) };
    const client = postgres("postgres://postgres@127.0.0.1:1/none", {
      max: 1,
      connect_timeout: 1,
      onnotice: () => {},
    });
    const limiter = new RateLimiter();
    const clock = new ManualClock();
    const counts = new SharedRateCounts({
      limiters: { api_key: limiter },
      raw: { kind: "postgres", client, longWork: client },
      cleanupDb: (await testDatabase()).longWork,
      clock,
      logger,
      flushMs: HOUR,
    });
    counts.start();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2; i++) limiter.take("k", 5, clock.now());
      await counts.flush();
    }
    expect(warnings).toHaveLength(1);
    // Six taken at a limit of five: the sixth was refused by this process's own count.
    expect(limiter.take("k", 5, clock.now()).allowed).toBe(false);
    await counts.stop();
    await client.end({ timeout: 1 });
  });

  test("failed logins from one address count in every process", async () => {
    const clock = new ManualClock();
    const database = await testDatabase();
    const [a, b] = [new RateLimiter(), new RateLimiter()];
    for (const limiter of [a, b]) {
      const counts = new SharedRateCounts({
        limiters: { login_address: limiter },
        raw: database.raw,
        cleanupDb: database.longWork,
        clock,
        logger: silentLogger,
        flushMs: HOUR,
      });
      counts.start();
      running.push(counts);
    }
    const address = `203.0.113.${Math.floor(Math.random() * 250)}:${crypto.randomUUID()}`;
    // b checks the address before any failure: peeked at, it is followed from then on.
    expect(b.peek(address, 5, clock.now()).allowed).toBe(true);
    for (let i = 0; i < 5; i++) a.take(address, 5, clock.now());
    for (let pass = 0; pass < 2; pass++) for (const counts of running) await counts.flush();
    expect(b.peek(address, 5, clock.now())).toMatchObject({ allowed: false, remaining: 0 });
  });

  test("the last requests are handed over when a process stops", async () => {
    const [a] = await processes(1);
    const key = crypto.randomUUID();
    for (let i = 0; i < 3; i++) a?.limiter.take(key, 10, Date.now());
    await a?.counts.stop();
    expect(await hitsOf(`api_key:${key}`)).toBe(3);
  });

  test("rows of buckets past the minute are swept, current ones kept", async () => {
    const clock = new ManualClock();
    const [a] = await processes(1, { clock });
    const key = `sweep:${crypto.randomUUID()}`;
    const current = bucketOf(clock.now());
    const database = await testDatabase();
    await database.db.execute(
      sql`insert into rate_limit_hits (key, bucket, hits) values
        (${key}, ${current - 30}, 1), (${key}, ${current - 13}, 1), (${key}, ${current - 5}, 1), (${key}, ${current}, 1)`,
    );
    await a?.counts.sweep();
    const left = rowsOf<{ bucket: string }>(
      await database.db.execute(
        sql`select bucket from rate_limit_hits where key = ${key} order by bucket`,
      ),
    ).map((row) => Number(row.bucket));
    expect(left).toEqual([current - 5, current]);
  });

  test("an API key's limit holds across two services sharing the database", async () => {
    const w = await createWorkspace();
    const otherDeps = createServiceDeps({
      database: await testDatabase(),
      config: loadConfig({ AUTH_JWT_SECRET: TEST_SECRET }),
      clock: w.clock,
      logger: silentLogger,
      jwtSecret: TEST_SECRET,
    });
    const other = createApp(otherDeps);
    const shared = [w.deps.sharedRateCounts, otherDeps.sharedRateCounts];
    for (const counts of shared) {
      expect(counts).toBeDefined();
      counts?.start();
      if (counts) running.push(counts);
    }
    const admin = await w.login("admin@acme.test");
    const created = await w.request("POST", "/api/v1/api-keys", {
      token: admin,
      body: { name: "integration", scopes: { campaigns: "read" }, rate_limit_per_minute: 4 },
    });
    const key = created.body.data.key as string;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const app = i % 2 === 0 ? w.app : other;
      const response = await app.handle(
        new Request("http://localhost/api/v1/campaigns", {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
      statuses.push(response.status);
      // Two flushes of each: everyone hands over, then everyone reads what the others did.
      for (let pass = 0; pass < 2; pass++) for (const counts of shared) await counts?.flush();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429]);
  });
});

describe.skipIf(enabled)("rate limits on the embedded database", () => {
  test("count in the one process, with no flusher", async () => {
    const w = await createWorkspace();
    expect(w.deps.sharedRateCounts).toBeUndefined();
  });
});
