const RATE_WINDOW_MS = 60_000;
const RATE_BUCKET_MS = 5_000;
export const BUCKETS = RATE_WINDOW_MS / RATE_BUCKET_MS;

/** The number of the bucket `now` falls in: the same in every process, by the wall clock. */
export const bucketOf = (now: number) => Math.floor(now / RATE_BUCKET_MS);

/** One key's requests of one bucket, as handed to the shared count. */
export interface BucketHits {
  key: string;
  bucket: number;
  hits: number;
}

/**
 * One key's requests of the last minute, counted per 5-second bucket: what this process
 * counted itself, and, when the count is shared, what every process's count was when the
 * database last answered, with the units of the budget this process holds.
 */
export class RateWindow {
  /**
   * This process's requests per bucket that the shared count does not have (every request,
   * when nothing is shared), less the units it gives back.
   */
  readonly counts = new Int32Array(BUCKETS);
  /** Every process's requests and units granted per bucket, as the database last answered. */
  shared: Int32Array | undefined;
  /** Number of the newest bucket counted (time / RATE_BUCKET_MS); older ones follow it round the ring. */
  newest = Number.NEGATIVE_INFINITY;
  /** Both counts over the minute, the units held included. */
  total = 0;
  /** Units of the shared budget granted to this process and charged to `grantBucket`, unspent. */
  grant = 0;
  grantBucket = Number.NEGATIVE_INFINITY;
  /** Units spent since the last handover, and in the interval before it (what to ask ahead for). */
  spent = 0;
  lastSpent = 0;
  /** Asks since the last handover. */
  asked = 0;
  /** After the database refused: new requests are refused here without asking until then. */
  refusedUntil = Number.NEGATIVE_INFINITY;
  /** The ask for units under way, and the requests waiting for a unit. */
  asking: Promise<"granted" | "refused" | "failed"> | undefined;
  waiting = 0;
  /** Attempts of this process holding a unit until their outcome is known. */
  held = 0;
  /** Resolved when one of them settles, for the attempts waiting on them. */
  settled: PromiseWithResolvers<void> | undefined;

  constructor(readonly key: string) {}

  /** Requests counted: the total less the units this process holds unspent. */
  get counted(): number {
    return this.total - this.grant;
  }

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
    // Units of a bucket that left the minute no longer count anywhere: never spent.
    if (!this.holds(this.grantBucket)) this.grant = 0;
  }

  /** Whether `bucket` is one of the minute's buckets this window holds. */
  holds(bucket: number): boolean {
    return bucket <= this.newest && bucket > this.newest - BUCKETS;
  }

  count(bucket: number, hits: number): void {
    const slot = bucket % BUCKETS;
    this.counts[slot] = (this.counts[slot] as number) + hits;
    this.total += hits;
  }

  /** Wakes the attempts waiting on one held here to settle. */
  wake(): void {
    const settled = this.settled;
    this.settled = undefined;
    settled?.resolve();
  }

  /** Hands the unspent units back, as a change the next handover takes to the shared count. */
  release(): void {
    if (this.grant === 0) return;
    this.count(this.grantBucket, -this.grant);
    this.grant = 0;
  }

  /** Takes in the shared count of the buckets from `first` on, as the database answered. */
  adopt(first: number, hits: readonly number[]): void {
    this.shared ??= new Int32Array(BUCKETS);
    hits.forEach((count, index) => {
      const bucket = first + index;
      if (!this.holds(bucket)) return;
      const slot = bucket % BUCKETS;
      this.total += count - ((this.shared as Int32Array)[slot] as number);
      (this.shared as Int32Array)[slot] = count;
    });
  }

  /**
   * Moves a change handed over from this process's counts into the shared ones (never below
   * zero there): the shared count has it now.
   */
  handedOver(bucket: number, hits: number): void {
    if (!this.holds(bucket)) return;
    this.shared ??= new Int32Array(BUCKETS);
    const slot = bucket % BUCKETS;
    const shared = this.shared[slot] as number;
    const moved = Math.max(hits, -shared);
    this.counts[slot] = (this.counts[slot] as number) - hits;
    this.shared[slot] = shared + moved;
    this.total += moved - hits;
  }

  /** This process's changes the shared count does not have yet, bucket by bucket. */
  owed(into: BucketHits[]): void {
    for (let bucket = this.newest - BUCKETS + 1; bucket <= this.newest; bucket++) {
      const hits = this.counts[bucket % BUCKETS] as number;
      if (hits !== 0) into.push({ key: this.key, bucket, hits });
    }
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
