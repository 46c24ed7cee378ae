import type { Clock } from "../../actors/ports.ts";
import type { Database, RawClient } from "../../db/client.ts";
import { addRateHits, deleteStaleRateHits } from "../../db/queries/rate-limit-hits.ts";
import type { ServiceDeps } from "../deps.ts";
import type { Logger } from "../logger.ts";
import {
  type BucketHits,
  bucketOf,
  RATE_BUCKET_MS,
  RATE_WINDOW_MS,
  type RateLimiter,
} from "./rate-limiter.ts";

/** How often each process hands its requests over and reads the totals back. */
export const FLUSH_MS = 250;
/** Every this many flushes, rows of buckets past the minute are deleted: every 5 s. */
const SWEEP_EVERY = 20;
/**
 * Rows deleted at most per statement, and statements at most per sweep: 20,000 rows every
 * 5 s per process, above the 2,000 rows a second that two limiters of 5,000 keys each can
 * create.
 */
const SWEEP_BATCH = 5_000;
const SWEEP_BATCHES = 4;

export interface SharedRateCountsOptions {
  /** Limiters by a name that keeps their keys apart in the table (no colon). */
  limiters: Record<string, RateLimiter>;
  raw: RawClient;
  /** Where the sweep's deletions run: the pool for clean-ups. */
  cleanupDb: Database;
  clock: Clock;
  logger: Logger;
  /** Flushes are skipped while the database is known to be down. */
  availability?: { readonly available: boolean };
  flushMs?: number;
}

/**
 * Rate limits counted across the processes sharing one PostgreSQL database, off the request
 * path. Requests are judged in memory as before; every 250 ms each limiter hands over what it
 * counted since and reads back every process's totals for the keys it judged, in one
 * statement (`rate_limit_hits`, a row per key and 5-second bucket). Between flushes a process
 * knows only its own new requests, so a limit holds across processes to within what the
 * others let through in one flush interval; a key's first request in a process goes on what
 * that process knows. While the database fails, each process limits on its own counts and the
 * requests are handed over once it answers again.
 */
export class SharedRateCounts {
  private timer: ReturnType<typeof setInterval> | undefined;
  private flushing: Promise<void> | undefined;
  private sweeping = false;
  private ticks = 0;
  private failing = false;
  private readonly names: string[];

  constructor(private readonly options: SharedRateCountsOptions) {
    this.names = Object.keys(options.limiters);
  }

  start(): void {
    if (this.timer) return;
    for (const name of this.names) this.limiterOf(name).share();
    this.timer = setInterval(() => this.tick(), this.options.flushMs ?? FLUSH_MS);
  }

  /** Stops the flushes after handing over what was counted since the last one. */
  async stop(): Promise<void> {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
    for (const name of this.names) this.limiterOf(name).unshare();
  }

  /**
   * One flush: every limiter's requests handed over and the totals adopted, in one statement.
   * A flush under way is waited for first, so that everything counted before the call is in.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    return this.flushOnce();
  }

  private flushOnce(): Promise<void> {
    if (this.options.availability && !this.options.availability.available) {
      // Nothing is sent; the handover keeps the keys to send down to the ones still tracked.
      const now = this.options.clock.now();
      for (const name of this.names) this.limiterOf(name).handover(now);
      return Promise.resolve();
    }
    const flushing = this.exchange()
      .catch((error) => this.options.logger.error("rate-limit flush failed", { error }))
      .finally(() => {
        this.flushing = undefined;
      });
    this.flushing = flushing;
    return flushing;
  }

  /** Deletes rows of buckets that left the minute, a bounded batch at a time. */
  async sweep(): Promise<number> {
    // One bucket of leeway for processes whose clocks differ a little.
    const before = bucketOf(this.options.clock.now()) - RATE_WINDOW_MS / RATE_BUCKET_MS;
    let deleted = 0;
    for (let batch = 0; batch < SWEEP_BATCHES; batch++) {
      const count = await deleteStaleRateHits(this.options.cleanupDb, {
        before,
        limit: SWEEP_BATCH,
      });
      deleted += count;
      if (count < SWEEP_BATCH) break;
    }
    return deleted;
  }

  private tick(): void {
    // A flush still under way (a slow database) is not queued behind: the next tick sends all.
    if (!this.flushing) void this.flushOnce();
    if (++this.ticks % SWEEP_EVERY !== 0 || this.sweeping) return;
    if (this.options.availability && !this.options.availability.available) return;
    this.sweeping = true;
    this.sweep()
      .catch((error) => this.options.logger.warn("rate-limit rows' clean-up failed", { error }))
      .finally(() => {
        this.sweeping = false;
      });
  }

  private async exchange(): Promise<void> {
    const now = this.options.clock.now();
    const handovers = this.names.map((name) => ({
      name,
      limiter: this.limiterOf(name),
      handover: this.limiterOf(name).handover(now),
    }));
    const deltas = handovers.flatMap(({ name, handover }) =>
      handover.deltas.map((delta) => ({ ...delta, key: `${name}:${delta.key}` })),
    );
    const keys = handovers.flatMap(({ name, handover }) =>
      handover.keys.map((key) => `${name}:${key}`),
    );
    if (keys.length === 0) return;
    let totals: BucketHits[];
    try {
      totals = await addRateHits(this.options.raw, {
        deltas,
        keys,
        since: (handovers[0] as (typeof handovers)[number]).handover.since,
      });
    } catch (error) {
      if (!this.failing) {
        this.failing = true;
        this.options.logger.warn(
          "rate limits are counted per process until the database takes the shared counts again",
          { error },
        );
      }
      return;
    }
    if (this.failing) {
      this.failing = false;
      this.options.logger.info("rate limits are counted across processes again");
    }
    const byName = new Map<string, BucketHits[]>(this.names.map((name) => [name, []]));
    for (const row of totals) {
      const colon = row.key.indexOf(":");
      byName.get(row.key.slice(0, colon))?.push({ ...row, key: row.key.slice(colon + 1) });
    }
    for (const { name, limiter, handover } of handovers)
      limiter.adopt(handover, byName.get(name) ?? []);
  }

  private limiterOf(name: string): RateLimiter {
    return this.options.limiters[name] as RateLimiter;
  }
}

/** The shared counts of a service's two limiters on PostgreSQL; none on PGlite. */
export function sharedRateCountsOf(
  deps: Pick<
    ServiceDeps,
    "rateLimiter" | "loginThrottle" | "rawDb" | "longWorkDb" | "clock" | "logger" | "availability"
  >,
): SharedRateCounts | undefined {
  if (deps.rawDb.kind === "pglite") return undefined;
  return new SharedRateCounts({
    limiters: { api_key: deps.rateLimiter, login_address: deps.loginThrottle },
    raw: deps.rawDb,
    cleanupDb: deps.longWorkDb,
    clock: deps.clock,
    logger: deps.logger,
    availability: deps.availability,
  });
}
