import type { PacingClock } from "./rtp-stream.ts";

interface Entry {
  run: () => void;
  cancelled: boolean;
}

/**
 * One timer for many: timeouts due within the same few milliseconds run together, from one
 * timer, never early. Hundreds of calls each sending a packet every 20 ms then cost a handful
 * of timers per 20 ms instead of hundreds; a packet goes out at most `bucketMs` late, well
 * within what a receiver's jitter buffer absorbs.
 */
export class CoalescingClock implements PacingClock {
  private readonly buckets = new Map<number, Entry[]>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  constructor(private readonly bucketMs = 5) {}

  now(): number {
    return performance.now();
  }

  setTimeout(run: () => void, ms: number): unknown {
    const bucket = Math.ceil((this.now() + Math.max(0, ms)) / this.bucketMs);
    const entry: Entry = { run, cancelled: false };
    const entries = this.buckets.get(bucket);
    if (entries) entries.push(entry);
    else this.buckets.set(bucket, [entry]);
    if (bucket < this.armedFor) this.arm(bucket);
    return entry;
  }

  clearTimeout(timer: unknown): void {
    if (timer) (timer as Entry).cancelled = true;
  }

  private arm(bucket: number): void {
    clearTimeout(this.timer);
    this.armedFor = bucket;
    this.timer = setTimeout(() => this.fire(), Math.max(0, bucket * this.bucketMs - this.now()));
  }

  private fire(): void {
    this.armedFor = Number.POSITIVE_INFINITY;
    const current = this.now() / this.bucketMs;
    for (const [bucket, entries] of [...this.buckets]) {
      if (bucket > current) continue;
      this.buckets.delete(bucket);
      for (const entry of entries) if (!entry.cancelled) entry.run();
    }
    let next = Number.POSITIVE_INFINITY;
    for (const bucket of this.buckets.keys()) next = Math.min(next, bucket);
    if (next < this.armedFor) this.arm(next);
  }
}
