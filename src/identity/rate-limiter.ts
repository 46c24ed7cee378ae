import type { RateGrant, RateGrantAsk } from "../../db/queries/rate-limit-hits.ts";
import { BUCKETS, type BucketHits, bucketOf, RateWindow } from "./rate-window.ts";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a request is allowed again (refused) or the oldest counted one leaves. */
  resetSeconds: number;
}

/**
 * Where units of a key's budget come from when several processes share it: granted
 * atomically, charged to bucket `last`, with every process's count of the minute per bucket.
 */
export interface GrantSource {
  /** False while the source is known to fail: requests are then judged here alone. */
  readonly available: boolean;
  grant(ask: RateGrantAsk): Promise<RateGrant>;
}

/** What a limiter hands to the shared count in one flush, and the windows it came from. */
export interface RateHandover {
  deltas: BucketHits[];
  readonly windows: RateWindow[];
}

const MAX_TRACKED = 5_000;
/**
 * A key the database refused is refused here without asking for this long, unless a bucket
 * leaves the minute first: a client hammering a spent key costs a statement a second.
 */
export const RECHECK_MS = 1_000;

/**
 * Units asked ahead of demand are what the key spent in this many handover intervals (of
 * 250 ms) at the last one's rate: a busy key asks about once a second.
 */
const AHEAD_INTERVALS = 4;

/**
 * Rolling-minute limits per key, as a ring of twelve 5-second buckets: a request counts for
 * the minute that starts with its bucket, so the limit holds to within 5 seconds and a key
 * costs the same few bytes whatever its limit. Keys tracked are bounded; the least recently
 * used is forgotten first.
 *
 * Alone, a limiter counts every request itself. Shared (`share`), requests spend units of
 * the key's budget granted by the source (`src/identity/shared-rate-counts.ts`): a request
 * with a unit in hand is judged without waiting; the others wait on one ask for them all,
 * for as many units as are waiting and, for a busy key, some ahead (`aheadOf`). Units are
 * valid in the bucket they were charged to; the rest, and those of a key gone quiet, are given
 * back at the next handover.
 */
export class RateLimiter {
  private readonly windows = new Map<string, RateWindow>();
  private source: GrantSource | undefined;

  /** Counts a request if the limit allows it. A promise only while units are asked for. */
  take(key: string, limit: number, now: number): RateDecision | Promise<RateDecision> {
    const window = this.windowOf(key);
    const bucket = bucketOf(now);
    window.roll(bucket);
    if (window.grantBucket < bucket) window.release();
    if (window.grant > 0) return spend(window, limit, now);
    if (!this.source?.available) return judgeInProcess(window, limit, now);
    if (!window.asking && now < window.refusedUntil && window.counted >= limit) {
      return refusal(window, limit, now);
    }
    return this.afterAsk(window, limit, now);
  }

  /**
   * Takes a unit for an attempt whose outcome decides whether it counts (a login: only a
   * failure does), held until `settle`.
   */
  hold(key: string, limit: number, now: number): RateDecision | Promise<RateDecision> {
    const taken = this.take(key, limit, now);
    if (taken instanceof Promise) return taken.then((decision) => this.held(key, decision));
    return this.held(key, taken);
  }

  /**
   * The outcome of an attempt held since `takenAt`: its unit counts (`keep`), or goes back to
   * the units held, or is given back with the next handover.
   */
  settle(key: string, params: { takenAt: number; now: number; keep: boolean }): void {
    const window = this.windows.get(key);
    if (!window) return;
    window.held = Math.max(0, window.held - 1);
    window.roll(bucketOf(params.now));
    const bucket = bucketOf(params.takenAt);
    if (!params.keep && window.holds(bucket)) {
      if (bucket === window.grantBucket) window.grant += 1;
      else window.count(bucket, -1);
    }
    window.wake();
  }

  /**
   * Resolves when an attempt of `key` held in this process settles, and may have given its unit
   * back; undefined when none is in flight.
   */
  settling(key: string): Promise<void> | undefined {
    const window = this.windows.get(key);
    if (!window || window.held === 0) return undefined;
    window.settled ??= Promise.withResolvers<void>();
    return window.settled.promise;
  }

  forget(key: string): void {
    this.windows.get(key)?.wake();
    this.windows.delete(key);
  }

  /** Keys tracked now; bounded by MAX_TRACKED. */
  get tracked(): number {
    return this.windows.size;
  }

  /** From now on requests spend units granted by `source`. */
  share(source: GrantSource): void {
    this.source = source;
  }

  /** Back to counting in this process alone (what the shared count reported is kept). */
  unshare(): void {
    this.source = undefined;
  }

  /**
   * Gives back the units of quiet keys (no request since the last handover), of past
   * buckets, or all of them (`everything`, on stopping), and returns every change the shared
   * count does not have yet. Nothing is settled until `adopt`; after a failed flush the next
   * handover hands the same changes over again.
   */
  handover(now: number, everything = false): RateHandover {
    const current = bucketOf(now);
    const handover: RateHandover = { deltas: [], windows: [] };
    for (const window of this.windows.values()) {
      window.roll(current);
      if (everything || window.spent === 0 || window.grantBucket < current) window.release();
      window.lastSpent = window.spent;
      window.spent = 0;
      window.asked = 0;
      const from = handover.deltas.length;
      window.owed(handover.deltas);
      for (let index = from; index < handover.deltas.length; index++) handover.windows.push(window);
    }
    return handover;
  }

  /** The changes of a handover are in the shared count now. */
  adopt(handover: RateHandover): void {
    handover.deltas.forEach((delta, index) => {
      (handover.windows[index] as RateWindow).handedOver(delta.bucket, delta.hits);
    });
  }

  /** Waits with the other requests of the key for units, asking again while some were granted. */
  private async afterAsk(window: RateWindow, limit: number, now: number): Promise<RateDecision> {
    window.waiting += 1;
    try {
      for (;;) {
        window.asking ??= this.ask(window, limit, now);
        const outcome = await window.asking;
        // Units are charged to the newest bucket, never older than this request's.
        if (window.grant > 0 && window.grantBucket >= bucketOf(now)) {
          return spend(window, limit, now);
        }
        if (outcome === "failed" || !this.source?.available)
          return judgeInProcess(window, limit, now);
        if (outcome === "refused") return refusal(window, limit, now);
      }
    } finally {
      window.waiting -= 1;
    }
  }

  /**
   * One ask for units, for the requests waiting now and what the key spent lately, charged to
   * the newest bucket the key has seen.
   */
  private async ask(
    window: RateWindow,
    limit: number,
    now: number,
  ): Promise<"granted" | "refused" | "failed"> {
    const source = this.source as GrantSource;
    const last = window.newest;
    const first = last - BUCKETS + 1;
    const need = window.waiting;
    window.asked += 1;
    try {
      const answer = await source.grant({
        key: window.key,
        first,
        last,
        limit,
        need,
        extra: aheadOf(window, limit),
      });
      window.adopt(first, answer.hits);
      if (answer.granted > 0 && window.holds(last)) {
        if (window.grantBucket < last) window.release();
        window.grant += answer.granted;
        window.grantBucket = last;
      }
      if (answer.granted >= need) return "granted";
      window.refusedUntil = now + RECHECK_MS;
      return "refused";
    } catch {
      // The source has said so in the log; the requests waiting are judged here.
      return "failed";
    } finally {
      window.asking = undefined;
    }
  }

  private held(key: string, decision: RateDecision): RateDecision {
    const window = this.windows.get(key);
    if (decision.allowed && window) window.held += 1;
    return decision;
  }

  private windowOf(key: string): RateWindow {
    let window = this.windows.get(key);
    if (window) {
      this.windows.delete(key);
    } else {
      window = new RateWindow(key);
      if (this.windows.size >= MAX_TRACKED) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.forget(oldest);
      }
    }
    this.windows.set(key, window);
    return window;
  }
}

/**
 * Units to ask ahead of the requests waiting. A key asking a third time within one handover
 * interval is busy, and asks at the rate since the handover; a burst asks twice (for its first
 * request, then for the rest) and never ahead, so that no units are left idle in one process
 * while another refuses the burst's rest. Never more than a tenth of the limit.
 */
function aheadOf(window: RateWindow, limit: number): number {
  const spent = window.asked > 2 ? Math.max(window.lastSpent, window.spent) : window.lastSpent;
  return Math.min(spent * AHEAD_INTERVALS, Math.floor(limit / 10));
}

/** A request spends a unit held. */
function spend(window: RateWindow, limit: number, now: number): RateDecision {
  window.grant -= 1;
  window.spent += 1;
  return allowed(window, limit, now);
}

/** A request judged on this process's own counts (alone, or while the source fails). */
function judgeInProcess(window: RateWindow, limit: number, now: number): RateDecision {
  if (window.counted >= limit) return refusal(window, limit, now);
  window.count(bucketOf(now), 1);
  window.spent += 1;
  return allowed(window, limit, now);
}

function allowed(window: RateWindow, limit: number, now: number): RateDecision {
  return {
    allowed: true,
    limit,
    remaining: Math.max(0, limit - window.counted),
    resetSeconds: secondsOf(window.msUntilAtMost(window.total - 1, now)),
  };
}

function refusal(window: RateWindow, limit: number, now: number): RateDecision {
  const wait = window.msUntilAtMost(limit - 1 + window.grant, now);
  return { allowed: false, limit, remaining: 0, resetSeconds: secondsOf(wait) };
}

const secondsOf = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
