export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a request is allowed again (refused) or the window has room again. */
  resetSeconds: number;
}

export const RATE_WINDOW_MS = 60_000;
const MAX_TRACKED = 5_000;

interface Ring {
  times: Float64Array;
  next: number;
  count: number;
}

/** A refusal while the ring is full of times inside the window; undefined when there is room. */
function refusal(ring: Ring, limit: number, now: number): RateDecision | undefined {
  const windowStart = now - RATE_WINDOW_MS;
  const oldest = ring.count < limit ? undefined : (ring.times[ring.next] as number);
  if (oldest === undefined || oldest <= windowStart) return undefined;
  return {
    allowed: false,
    limit,
    remaining: 0,
    resetSeconds: Math.max(1, Math.ceil((oldest - windowStart) / 1000)),
  };
}

function allowance(ring: Ring, limit: number, now: number): RateDecision {
  const windowStart = now - RATE_WINDOW_MS;
  // Times are in order around the ring: binary-search the first one inside the window.
  const at = (i: number) => ring.times[(ring.next - ring.count + i + limit) % limit] as number;
  let low = 0;
  let high = ring.count;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (at(middle) > windowStart) high = middle;
    else low = middle + 1;
  }
  const used = ring.count - low;
  const nextOut = ring.count < limit ? now : (ring.times[ring.next] as number);
  return {
    allowed: true,
    limit,
    remaining: limit - used,
    resetSeconds: Math.max(1, Math.ceil((nextOut + RATE_WINDOW_MS - now) / 1000)),
  };
}

/**
 * Exact rolling-minute limits per key: each key keeps the times of its last `limit`
 * requests in a ring, so a request is allowed when the oldest of them left the window.
 * Keys tracked are bounded; the least recently used is forgotten first.
 */
export class RateLimiter {
  private readonly rings = new Map<string, Ring>();

  take(key: string, limit: number, now: number): RateDecision {
    let ring = this.rings.get(key);
    if (!ring || ring.times.length !== limit) {
      ring = { times: new Float64Array(limit), next: 0, count: 0 };
      if (this.rings.size >= MAX_TRACKED) {
        const oldest = this.rings.keys().next().value;
        if (oldest !== undefined) this.rings.delete(oldest);
      }
    } else {
      this.rings.delete(key);
    }
    this.rings.set(key, ring);

    const refused = refusal(ring, limit, now);
    if (refused) return refused;
    ring.times[ring.next] = now;
    ring.next = (ring.next + 1) % limit;
    ring.count = Math.min(ring.count + 1, limit);
    return allowance(ring, limit, now);
  }

  /**
   * The decision `take` would make now, counting nothing: for budgets spent only by some
   * outcomes (failed logins), checked before the attempt and taken after it.
   */
  peek(key: string, limit: number, now: number): RateDecision {
    const ring = this.rings.get(key);
    if (!ring || ring.times.length !== limit) {
      return { allowed: true, limit, remaining: limit, resetSeconds: RATE_WINDOW_MS / 1000 };
    }
    return refusal(ring, limit, now) ?? allowance(ring, limit, now);
  }

  forget(key: string): void {
    this.rings.delete(key);
  }
}
