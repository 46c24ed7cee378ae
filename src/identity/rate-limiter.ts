export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a request is allowed again (refused) or the oldest counted one leaves. */
  resetSeconds: number;
}

export const RATE_WINDOW_MS = 60_000;
export const RATE_BUCKET_MS = 5_000;
const BUCKETS = RATE_WINDOW_MS / RATE_BUCKET_MS;
const MAX_TRACKED = 5_000;

/** The number of the bucket `now` falls in: the same in every process, by the wall clock. */
export const bucketOf = (now: number) => Math.floor(now / RATE_BUCKET_MS);

/** One key's requests of the last minute, counted per 5-second bucket. */
class Window {
  /** This process's requests per bucket, less those handed to the shared count. */
  readonly counts = new Uint32Array(BUCKETS);
  /** Every process's requests per bucket as the shared count last reported them. */
  shared: Uint32Array | undefined;
  /** Number of the newest bucket counted (time / RATE_BUCKET_MS); older ones follow it round the ring. */
  newest = Number.NEGATIVE_INFINITY;
  total = 0;
  /** The limiter's round in which this key was last judged, when counts are shared. */
  round = -1;
  /** When this key was last judged, when counts are shared. */
  judgedAt = Number.NEGATIVE_INFINITY;
  /** The limiter's round in which this key was last handed over. */
  handed = -1;

  /** Forgets the buckets that left the minute ending in bucket `current`. */
  roll(current: number): void {
    const stale = Math.min(BUCKETS, current - this.newest);
    for (let step = 1; step <= stale; step++) {
      const slot = (current - stale + step) % BUCKETS;
      this.total -= this.at(slot);
      this.counts[slot] = 0;
      if (this.shared) this.shared[slot] = 0;
    }
    this.newest = Math.max(this.newest, current);
  }

  /** Whether this process has requests the shared count has not had yet. */
  owes(): boolean {
    for (let slot = 0; slot < BUCKETS; slot++) if ((this.counts[slot] as number) > 0) return true;
    return false;
  }

  count(bucket: number): void {
    this.counts[bucket % BUCKETS] = (this.counts[bucket % BUCKETS] as number) + 1;
    this.total += 1;
  }

  /** Whether `bucket` is one of the minute's buckets this window holds. */
  holds(bucket: number): boolean {
    return bucket <= this.newest && bucket > this.newest - BUCKETS;
  }

  at(slot: number): number {
    return (this.counts[slot] as number) + (this.shared ? (this.shared[slot] as number) : 0);
  }

  /**
   * Milliseconds from `now` until at most `keep` of the counted requests remain: buckets
   * leave oldest first, each a minute after its start.
   */
  msUntilAtMost(keep: number, now: number): number {
    let left = this.total;
    const { counts, shared } = this;
    for (let bucket = this.newest - BUCKETS + 1; bucket <= this.newest; bucket++) {
      const slot = bucket % BUCKETS;
      const count = (counts[slot] as number) + (shared ? (shared[slot] as number) : 0);
      if (count === 0) continue;
      left -= count;
      if (left <= keep) return bucket * RATE_BUCKET_MS + RATE_WINDOW_MS - now;
    }
    return 0;
  }
}

/** One key's requests of one bucket, as handed to or read from the shared count. */
export interface BucketHits {
  key: string;
  bucket: number;
  hits: number;
}

/**
 * What a limiter hands to the shared count in one flush: its requests not yet handed over, and
 * the keys whose totals it wants back.
 */
export interface RateHandover {
  deltas: BucketHits[];
  keys: string[];
  /** The oldest bucket of the minute at the flush. */
  since: number;
  /** The windows the deltas came from, in the same order. */
  readonly windows: Window[];
}

/**
 * How long a key judged once is still refreshed at every flush: a key judged at least every
 * second by a process is judged there on totals at most one flush old.
 */
const FRESH_MS = 1_000;

/**
 * Rolling-minute limits per key, as a ring of twelve 5-second buckets: a request counts for
 * the minute that starts with its bucket, so the limit holds to within 5 seconds and a key
 * costs the same few bytes whatever its limit. Keys tracked are bounded; the least
 * recently used is forgotten first.
 *
 * Several processes sharing a database share the counts (`src/identity/shared-rate-counts.ts`):
 * requests are still judged in memory, on every process's total as last reported plus this
 * process's requests since, and a flush in the background hands them over and brings the
 * totals back.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  /** Keys judged in this round, while counts are shared; undefined otherwise. */
  private judged: string[] | undefined;
  /** The keys of the last handover, some of which the next one carries on. */
  private handedLast: string[] = [];
  private round = 0;

  take(key: string, limit: number, now: number): RateDecision {
    const window = this.windowOf(key, now);
    const bucket = bucketOf(now);
    window.roll(bucket);
    if (window.total >= limit) {
      const wait = window.msUntilAtMost(limit - 1, now);
      return { allowed: false, limit, remaining: 0, resetSeconds: secondsOf(wait) };
    }
    window.count(bucket);
    return {
      allowed: true,
      limit,
      remaining: limit - window.total,
      resetSeconds: secondsOf(window.msUntilAtMost(window.total - 1, now)),
    };
  }

  /**
   * The decision `take` would make now, counting nothing: for budgets spent only by some
   * outcomes (failed logins), checked before the attempt and taken after it.
   */
  peek(key: string, limit: number, now: number): RateDecision {
    // Shared, a key peeked at is tracked, so that the next flush brings its total.
    const window = this.judged ? this.windowOf(key, now) : this.windows.get(key);
    if (!window) return { allowed: true, limit, remaining: limit, resetSeconds: 1 };
    window.roll(bucketOf(now));
    if (window.total >= limit) {
      const wait = window.msUntilAtMost(limit - 1, now);
      return { allowed: false, limit, remaining: 0, resetSeconds: secondsOf(wait) };
    }
    return {
      allowed: true,
      limit,
      remaining: limit - window.total,
      resetSeconds: secondsOf(window.msUntilAtMost(window.total - 1, now)),
    };
  }

  forget(key: string): void {
    this.windows.delete(key);
  }

  /** Keys tracked now; bounded by MAX_TRACKED. */
  get tracked(): number {
    return this.windows.size;
  }

  /** From now on the keys judged are noted for the flushes of the shared count. */
  share(): void {
    this.judged ??= [];
  }

  /** Back to counting in this process alone (what the shared count reported is kept). */
  unshare(): void {
    this.judged = undefined;
    this.handedLast = [];
  }

  /**
   * Starts a new round and returns what this process owes the shared count, for the keys
   * judged in the last few rounds and those whose requests were not handed over yet (a
   * failed flush): their requests bucket by bucket within the minute, and the keys whose
   * totals to bring back. Nothing changes until `adopt`; after a failed flush the next
   * handover hands the same requests over again.
   */
  handover(now: number): RateHandover {
    const current = bucketOf(now);
    const since = current - BUCKETS + 1;
    const round = this.round++;
    const candidates = this.judged ? [...this.judged, ...this.handedLast] : this.handedLast;
    if (this.judged) this.judged = [];
    const handover: RateHandover = { deltas: [], keys: [], since, windows: [] };
    for (const key of candidates) {
      const window = this.windows.get(key);
      if (!window || window.handed === round) continue;
      window.roll(current);
      if (now - window.judgedAt >= FRESH_MS && !window.owes()) continue;
      window.handed = round;
      handover.keys.push(key);
      const oldest = Math.max(since, window.newest - BUCKETS + 1);
      for (let bucket = oldest; bucket <= window.newest; bucket++) {
        const hits = window.counts[bucket % BUCKETS] as number;
        if (hits === 0) continue;
        handover.deltas.push({ key, bucket, hits });
        handover.windows.push(window);
      }
    }
    this.handedLast = handover.keys;
    return handover;
  }

  /**
   * Takes in a flush's answer: the requests handed over are now part of the shared totals,
   * which replace what was known of each key handed over (a bucket with no row has none).
   */
  adopt(handover: RateHandover, totals: readonly BucketHits[]): void {
    handover.deltas.forEach((delta, index) => {
      const window = handover.windows[index] as Window;
      if (this.windows.get(delta.key) !== window || !window.holds(delta.bucket)) return;
      const slot = delta.bucket % BUCKETS;
      window.counts[slot] = (window.counts[slot] as number) - delta.hits;
      window.total -= delta.hits;
    });
    for (const key of handover.keys) {
      const window = this.windows.get(key);
      const shared = window?.shared;
      if (!window || !shared) continue;
      for (let slot = 0; slot < BUCKETS; slot++) {
        window.total -= shared[slot] as number;
        shared[slot] = 0;
      }
    }
    for (const row of totals) {
      const window = this.windows.get(row.key);
      if (!window?.holds(row.bucket)) continue;
      window.shared ??= new Uint32Array(BUCKETS);
      const slot = row.bucket % BUCKETS;
      window.total += row.hits - (window.shared[slot] as number);
      window.shared[slot] = row.hits;
    }
  }

  private windowOf(key: string, now: number): Window {
    let window = this.windows.get(key);
    if (window) {
      this.windows.delete(key);
    } else {
      window = new Window();
      if (this.windows.size >= MAX_TRACKED) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.windows.delete(oldest);
      }
    }
    this.windows.set(key, window);
    if (this.judged) {
      window.judgedAt = now;
      if (window.round !== this.round) {
        window.round = this.round;
        this.judged.push(key);
      }
    }
    return window;
  }
}

const secondsOf = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
