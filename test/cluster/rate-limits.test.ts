import { afterEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { systemClock } from "../../actors/ports.ts";
import { grantRateHits } from "../../db/queries/rate-limit-hits.ts";
import { rowsOf } from "../../db/rows.ts";
import { createApp, createServiceDeps } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { RateLimiter } from "../../src/identity/rate-limiter.ts";
import { bucketOf } from "../../src/identity/rate-window.ts";
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

/**
 * Two more services beside the workspace's, on the same database and clock, as processes
 * started on one PostgreSQL would be; every one's shared counts flushing every 250 ms.
 */
function threeServices(
  w: Awaited<ReturnType<typeof createWorkspace>>,
  database: Awaited<ReturnType<typeof testDatabase>>,
  env: Record<string, string> = {},
) {
  const services = [{ deps: w.deps, app: w.app }];
  for (let i = 0; i < 2; i++) {
    const deps = createServiceDeps({
      database,
      config: loadConfig({ AUTH_JWT_SECRET: TEST_SECRET, ...env }),
      clock: w.clock,
      logger: silentLogger,
      jwtSecret: TEST_SECRET,
    });
    services.push({ deps, app: createApp(deps) });
  }
  for (const { deps } of services) {
    const counts = deps.sharedRateCounts as SharedRateCounts;
    counts.start();
    running.push(counts);
  }
  return services;
}

describe.skipIf(!enabled)("rate limits across processes", () => {
  test("grants of one key from many connections at once never spend the same units", async () => {
    await testDatabase(); // migrated
    const client = postgres(process.env.DATABASE_URL as string, { max: 16, onnotice: () => {} });
    cleanups.push(() => client.end({ timeout: 1 }));
    const raw = { kind: "postgres" as const, client, longWork: client, genericPlans: client };
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

  test("three processes taking a key in turn, flushing between rounds, let exactly the limit through", async () => {
    const clock = new ManualClock();
    const three = await processes(3, { clock });
    const key = crypto.randomUUID();
    let allowed = 0;
    for (let round = 0; round < 20; round++) {
      for (const { limiter } of three) {
        if ((await limiter.take(key, 30, clock.now())).allowed) allowed++;
      }
      for (const { counts } of three) await counts.flush();
      clock.advance(1_000);
    }
    expect(allowed).toBe(30);
    // Each refuses now, with the time the oldest requests leave; stopped, they hold nothing.
    expect(await three[0]?.limiter.take(key, 30, clock.now())).toMatchObject({
      allowed: false,
      remaining: 0,
    });
    for (const { counts } of three) await counts.stop();
    expect(await hitsOf(`api_key:${key}`)).toBe(allowed);
  });

  test("round-robin at 30 a minute over three processes, with real flushes: 30 of 45 pass", async () => {
    const three = await processes(3, { flushMs: 250 });
    const key = crypto.randomUUID();
    const local = [new RateLimiter(), new RateLimiter(), new RateLimiter()];
    let allowed = 0;
    let allowedUnshared = 0;
    for (let i = 0; i < 45; i++) {
      const now = Date.now();
      if ((await three[i % 3]?.limiter.take(key, 30, now))?.allowed) allowed++;
      if ((await local[i % 3]?.take(key, 30, now))?.allowed) allowedUnshared++;
      await Bun.sleep(40);
    }
    // Counted in each process alone, every request passes; shared, the limit holds.
    expect(allowedUnshared).toBe(45);
    expect(allowed).toBeGreaterThanOrEqual(30);
    expect(allowed).toBeLessThanOrEqual(33);
    for (const { counts } of three) await counts.stop();
    expect(await hitsOf(`api_key:${key}`)).toBe(allowed);
  });

  test("a process new to a key knows every other process's requests from its first", async () => {
    const clock = new ManualClock();
    const [a, b] = await processes(2, { clock });
    const key = crypto.randomUUID();
    for (let i = 0; i < 5; i++)
      expect((await a?.limiter.take(key, 6, clock.now()))?.allowed).toBe(true);
    expect(await b?.limiter.take(key, 6, clock.now())).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    expect(await a?.limiter.take(key, 6, clock.now())).toMatchObject({ allowed: false });
    // The minute after, the buckets have left every process's window.
    clock.advance(60_000);
    expect((await a?.limiter.take(key, 5, clock.now()))?.allowed).toBe(true);
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
      raw: { kind: "postgres", client, longWork: client, genericPlans: client },
      cleanupDb: (await testDatabase()).longWork,
      clock,
      logger,
      flushMs: HOUR,
    });
    counts.start();
    let allowed = 0;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2; i++) if ((await limiter.take("k", 5, clock.now())).allowed) allowed++;
      await counts.flush();
    }
    expect(warnings).toHaveLength(1);
    // Six taken at a limit of five: the sixth was refused by this process's own count.
    expect(allowed).toBe(5);
    expect((await limiter.take("k", 5, clock.now())).allowed).toBe(false);
    await counts.stop();
    await client.end({ timeout: 1 });
  });

  test("failed logins from one address count in every process; a success does not", async () => {
    const clock = new ManualClock();
    const database = await testDatabase();
    const [a, b] = [new RateLimiter(), new RateLimiter()];
    const flushers = [a, b].map((limiter) => {
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
      return counts;
    });
    const address = `203.0.113.${Math.floor(Math.random() * 250)}:${crypto.randomUUID()}`;
    // b's attempt succeeds: its unit goes back and counts nowhere.
    expect((await b.hold(address, 5, clock.now())).allowed).toBe(true);
    b.settle(address, { takenAt: clock.now(), now: clock.now(), keep: false });
    // b holds the unit while it has attempts of the address; quiet, it gives the unit back.
    for (let pass = 0; pass < 2; pass++) await flushers[1]?.flush();
    for (let i = 0; i < 5; i++) expect((await a.take(address, 5, clock.now())).allowed).toBe(true);
    expect(await b.take(address, 5, clock.now())).toMatchObject({ allowed: false, remaining: 0 });
  });

  test("units held are given back when a process stops", async () => {
    const clock = new ManualClock();
    const [a] = await processes(1, { clock });
    const key = crypto.randomUUID();
    // The third ask is one ahead (a tenth of the limit): the unit not spent goes back at the stop.
    for (let i = 0; i < 3; i++) await a?.limiter.take(key, 10, clock.now());
    expect(await hitsOf(`api_key:${key}`)).toBe(4);
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
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429]);
  });

  test("45 requests at once over three services, with a key at 30 a minute: 30 pass", async () => {
    const w = await createWorkspace();
    const services = threeServices(w, await testDatabase());
    const admin = await w.login("admin@acme.test");
    const created = await w.request("POST", "/api/v1/api-keys", {
      token: admin,
      body: { name: "burst", scopes: { campaigns: "read" }, rate_limit_per_minute: 30 },
    });
    const key = created.body.data.key as string;
    const apps = services.map(({ app }) => app);
    const responses = await Promise.all(
      Array.from({ length: 45 }, (_, i) =>
        (apps[i % 3] as (typeof apps)[number]).handle(
          new Request("http://localhost/api/v1/campaigns", {
            headers: { authorization: `Bearer ${key}` },
          }),
        ),
      ),
    );
    const passed = responses.filter((response) => response.status === 200);
    const refused = responses.filter((response) => response.status === 429);
    // Exact, give or take one request in flight per process.
    expect(passed.length).toBeGreaterThanOrEqual(30);
    expect(passed.length).toBeLessThanOrEqual(33);
    expect(passed.length + refused.length).toBe(45);
    for (const response of refused) {
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(response.headers.get("ratelimit")).toMatch(/^"per-key";r=0;t=\d+$/);
      expect(((await response.json()) as { code: string }).code).toBe("rate_limited");
    }
    for (const response of passed) {
      expect(response.headers.get("ratelimit-policy")).toBe('"per-key";q=30;w=60');
    }
  });

  test("45 failed logins at once from one address over three services: at most 33 are judged", async () => {
    const env = { LOGIN_RATE_LIMIT_PER_MINUTE: "30" };
    const w = await createWorkspace({ env });
    const services = threeServices(w, await testDatabase(), env);
    // The address is the socket's peer: every service listens on loopback.
    const bases = services.map(({ app }) => {
      app.listen({ port: 0, hostname: "127.0.0.1" });
      cleanups.push(() => app.stop(true));
      return `http://127.0.0.1:${app.server?.port}`;
    });
    const responses = await Promise.all(
      Array.from({ length: 45 }, (_, i) =>
        fetch(`${bases[i % 3]}/api/v1/auth/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: `guess-${i}@acme.test`, password: "wrong password!" }),
        }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    const judged = statuses.filter((status) => status === 401).length;
    expect(judged).toBeGreaterThanOrEqual(30);
    expect(judged).toBeLessThanOrEqual(33);
    expect(statuses.filter((status) => status === 429)).toHaveLength(45 - judged);
    for (const response of responses.filter((r) => r.status === 429)) {
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
  });
});

describe.skipIf(enabled)("rate limits on the embedded database", () => {
  test("count in the one process, with no flusher", async () => {
    const w = await createWorkspace();
    expect(w.deps.sharedRateCounts).toBeUndefined();
  });
});
