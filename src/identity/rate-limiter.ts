export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a request is allowed again (refused) or the oldest counted one leaves. */
  resetSeconds: number;
}

export const RATE_WINDOW_MS = 60_000;
const BUCKET_MS = 5_000;
const BUCKETS = RATE_WINDOW_MS / BUCKET_MS;
const MAX_TRACKED = 5_000;

/** One key's requests of the last minute, counted per 5-second bucket. */
class Window {
  readonly counts = new Uint32Array(BUCKETS);
  /** Number of the newest bucket counted (time / BUCKET_MS); older ones follow it round the ring. */
  newest = Number.NEGATIVE_INFINITY;
  total = 0;

  /** Forgets the buckets that left the minute ending in bucket `current`. */
  roll(current: number): void {
    const stale = Math.min(BUCKETS, current - this.newest);
    for (let step = 1; step <= stale; step++) {
      const slot = (current - stale + step) % BUCKETS;
      this.total -= this.counts[slot] as number;
      this.counts[slot] = 0;
    }
    this.newest = Math.max(this.newest, current);
  }

  count(bucket: number): void {
    this.counts[bucket % BUCKETS] = (this.counts[bucket % BUCKETS] as number) + 1;
    this.total += 1;
  }

  /**
   * Milliseconds from `now` until at most `keep` of the counted requests remain: buckets
   * leave oldest first, each a minute after its start.
   */
  msUntilAtMost(keep: number, now: number): number {
    let left = this.total;
    for (let bucket = this.newest - BUCKETS + 1; bucket <= this.newest; bucket++) {
      const count = this.counts[bucket % BUCKETS] as number;
      if (count === 0) continue;
      left -= count;
      if (left <= keep) return bucket * BUCKET_MS + RATE_WINDOW_MS - now;
    }
    return 0;
  }
}

/**
 * Rolling-minute limits per key, as a ring of twelve 5-second buckets: a request counts for
 * the minute that starts with its bucket, so the limit holds to within 5 seconds and a key
 * costs the same few bytes whatever its limit. Keys tracked are bounded; the least
 * recently used is forgotten first.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  take(key: string, limit: number, now: number): RateDecision {
    const window = this.windowOf(key);
    const bucket = Math.floor(now / BUCKET_MS);
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
    const window = this.windows.get(key);
    if (!window) return { allowed: true, limit, remaining: limit, resetSeconds: 1 };
    window.roll(Math.floor(now / BUCKET_MS));
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

  private windowOf(key: string): Window {
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
    return window;
  }
}

const secondsOf = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
