import type { Clock } from "../../actors/ports.ts";
import type { Database, RawClient } from "../../db/client.ts";
import {
  addRateHits,
  deleteStaleRateHits,
  grantRateHits,
  type RateGrantAsk,
} from "../../db/queries/rate-limit-hits.ts";
import type { ServiceDeps } from "../deps.ts";
import type { Logger } from "../logger.ts";
import type { GrantSource, RateLimiter } from "./rate-limiter.ts";
import { BUCKETS, bucketOf } from "./rate-window.ts";

/** How often each process gives back the units it holds idle and hands over what it owes. */
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
  /** Flushes are skipped, and requests judged in each process, while the database is down. */
  availability?: { readonly available: boolean };
  flushMs?: number;
}

/**
 * Rate limits counted exactly across the processes sharing one PostgreSQL database. Each
 * limiter spends units of a key's budget granted by the database (`rate_limit_hits`, a row
 * per key and 5-second bucket; `grantRateHits` charges them under the key's lock), so the
 * processes together never let more through than the limit. Every 250 ms each process gives
 * back the units it holds for keys gone quiet or for past buckets. While the database fails,
 * each process limits on its own counts (and the minute's totals it last read); what it
 * counted is handed over when the database answers again.
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
    for (const name of this.names) this.limiterOf(name).share(this.sourceFor(name));
    this.timer = setInterval(() => this.tick(), this.options.flushMs ?? FLUSH_MS);
  }

  /** Stops the flushes after giving back every unit held and handing over what is owed. */
  async stop(): Promise<void> {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    while (this.flushing) await this.flushing;
    await this.flushOnce(true);
    for (const name of this.names) this.limiterOf(name).unshare();
  }

  /**
   * One flush: every limiter's idle units given back and its changes handed over, in one
   * statement. A flush under way is waited for first, so that everything counted before the
   * call is in.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    return this.flushOnce(false);
  }

  private flushOnce(everything: boolean): Promise<void> {
    if (!this.databaseUp) return Promise.resolve();
    const flushing = this.exchange(everything)
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
    const before = bucketOf(this.options.clock.now()) - BUCKETS;
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
    if (!this.flushing) void this.flushOnce(false);
    if (++this.ticks % SWEEP_EVERY !== 0 || this.sweeping || !this.databaseUp) return;
    this.sweeping = true;
    this.sweep()
      .catch((error) => this.options.logger.warn("rate-limit rows' clean-up failed", { error }))
      .finally(() => {
        this.sweeping = false;
      });
  }

  private get databaseUp(): boolean {
    return this.options.availability?.available ?? true;
  }

  /** Units of one limiter's keys, from the database while it answers. */
  private sourceFor(name: string): GrantSource {
    const counts = this;
    return {
      get available() {
        return !counts.failing && counts.databaseUp;
      },
      async grant(ask: RateGrantAsk) {
        try {
          return await grantRateHits(counts.options.raw, { ...ask, key: `${name}:${ask.key}` });
        } catch (error) {
          counts.failed(error);
          throw error;
        }
      },
    };
  }

  private async exchange(everything: boolean): Promise<void> {
    const now = this.options.clock.now();
    const handovers = this.names.map((name) => ({
      name,
      limiter: this.limiterOf(name),
      handover: this.limiterOf(name).handover(now, everything),
    }));
    const deltas = handovers.flatMap(({ name, handover }) =>
      handover.deltas.map((delta) => ({ ...delta, key: `${name}:${delta.key}` })),
    );
    // While failing, an empty statement still goes: it is how the database is found back.
    if (deltas.length === 0 && !this.failing) return;
    try {
      await addRateHits(this.options.raw, { deltas });
    } catch (error) {
      this.failed(error);
      return;
    }
    if (this.failing) {
      this.failing = false;
      this.options.logger.info("rate limits are counted across processes again");
    }
    for (const { limiter, handover } of handovers) limiter.adopt(handover);
  }

  private failed(error: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.options.logger.warn(
      "rate limits are counted per process until the database takes the shared counts again",
      { error },
    );
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
