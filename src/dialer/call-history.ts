import type { CallOutcome } from "./outcome.ts";
import type { PacingHistory } from "./predictive.ts";

/** Mean and spread of the last `capacity` values, updated in O(1) per value. */
class RollingSample {
  private readonly values: number[] = [];
  private next = 0;
  private sum = 0;
  private sumOfSquares = 0;

  constructor(private readonly capacity: number) {}

  add(value: number) {
    if (this.values.length < this.capacity) this.values.push(value);
    else {
      const evicted = this.values[this.next] as number;
      this.sum -= evicted;
      this.sumOfSquares -= evicted * evicted;
      this.values[this.next] = value;
      this.next = (this.next + 1) % this.capacity;
    }
    this.sum += value;
    this.sumOfSquares += value * value;
  }

  get count() {
    return this.values.length;
  }

  get mean() {
    return this.count === 0 ? 0 : this.sum / this.count;
  }

  /** Standard deviation over mean; undefined until there are two values. */
  get cv(): number | undefined {
    if (this.count < 2 || this.mean <= 0) return undefined;
    const variance = Math.max(0, this.sumOfSquares / this.count - this.mean * this.mean);
    return Math.sqrt(variance) / this.mean;
  }
}

export interface RecentCallsSize {
  /** Finished calls the answer rate is measured over. */
  calls: number;
  /** Ring, talk and wrap-up times each keep this many. */
  durations: number;
  /** Each duration needs this many values before the history counts as measured. */
  minimumDurations: number;
}

/**
 * A campaign's recent calls, as the pacer needs them: the share a person answered, how long
 * they rang before, how long agents talked and wrapped up. Windows of the last calls (not
 * all-time averages) so that the estimates follow the hour of day.
 */
export class RecentCalls {
  private readonly outcomes: RollingSample;
  private readonly rings: RollingSample;
  private readonly talks: RollingSample;
  private readonly wraps: RollingSample;

  constructor(
    private readonly size: RecentCallsSize = { calls: 500, durations: 200, minimumDurations: 10 },
  ) {
    this.outcomes = new RollingSample(size.calls);
    this.rings = new RollingSample(size.durations);
    this.talks = new RollingSample(size.durations);
    this.wraps = new RollingSample(size.durations);
  }

  /** A placed call ended; `liveAnswer` when a person picked up (bridged or abandoned). */
  callEnded(liveAnswer: boolean) {
    this.outcomes.add(liveAnswer ? 1 : 0);
  }

  /** A person answered `ringMs` after the call was placed. */
  answered(ringMs: number) {
    this.rings.add(ringMs);
  }

  /** A bridged call lasted `talkMs`. */
  talked(talkMs: number) {
    this.talks.add(talkMs);
  }

  /** An agent took `wrapMs` from hang-up to disposition. */
  wrapped(wrapMs: number) {
    this.wraps.add(wrapMs);
  }

  /**
   * The estimates. `samples` is the number of calls measured, or 0 while any of the ring,
   * talk and wrap-up times has fewer than `minimumDurations` values: a pacer treats that as
   * too little data.
   */
  history(): PacingHistory {
    const measured = [this.rings, this.talks, this.wraps].every(
      (sample) => sample.count >= this.size.minimumDurations,
    );
    return {
      answerRate: this.outcomes.mean,
      samples: measured ? this.outcomes.count : 0,
      ringMs: this.rings.mean,
      talkMs: this.talks.mean,
      talkCv: this.talks.cv,
      wrapMs: this.wraps.mean,
      wrapCv: this.wraps.cv,
    };
  }
}

/** A finished call as the dialer records it (epoch ms). */
export interface EndedCall {
  outcome: CallOutcome;
  claimedAt: number;
  answeredAt: number | null;
  endedAt: number;
}

/**
 * Feeds one finished call to the history: whether a person answered, after how long, and for
 * a bridged call how long it lasted. The same rule serves calls ending live and CDRs read back
 * when a campaign's dialing state is loaded.
 */
export function recordEndedCall(history: RecentCalls, call: EndedCall) {
  const liveAnswer = call.outcome === "answered" || call.outcome === "abandoned";
  history.callEnded(liveAnswer);
  if (!liveAnswer || call.answeredAt === null) return;
  history.answered(call.answeredAt - call.claimedAt);
  if (call.outcome === "answered") history.talked(call.endedAt - call.answeredAt);
}
