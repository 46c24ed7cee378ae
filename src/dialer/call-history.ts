import type { CallOutcome } from "./outcome.ts";
import type { Estimate, PacingHistory } from "./predictive.ts";

/**
 * An exponentially weighted sample in time: a value seen `age` ago weighs e^(−age / decayMs).
 * Keeps the weighted sums at the newest instant seen, so adding is O(1) and values may come
 * slightly out of order (a call rebuilt from its CDR, an event reported late).
 */
class DecayingSample {
  private at = Number.NEGATIVE_INFINITY;
  /** Σw, Σw·x, Σw·x², Σw², and Σw·extra (the talk exposure, see `RecentCalls`). */
  private weight = 0;
  private sum = 0;
  private sumOfSquares = 0;
  private squaredWeight = 0;
  private extra = 0;

  constructor(readonly decayMs: number) {}

  add(value: number, at: number, extra = 0) {
    if (at > this.at) {
      const keep = Number.isFinite(this.at) ? Math.exp(-(at - this.at) / this.decayMs) : 0;
      this.weight *= keep;
      this.sum *= keep;
      this.sumOfSquares *= keep;
      this.squaredWeight *= keep * keep;
      this.extra *= keep;
      this.at = at;
    }
    const w = Math.exp(-(this.at - at) / this.decayMs);
    this.weight += w;
    this.sum += w * value;
    this.sumOfSquares += w * value * value;
    this.squaredWeight += w * w;
    this.extra += w * extra;
  }

  /** How much the values weigh at `now` against at the newest of them: 1, or less once stale. */
  private keepAt(now: number) {
    return now > this.at && Number.isFinite(this.at)
      ? Math.exp(-(now - this.at) / this.decayMs)
      : 1;
  }

  /** The weight of every value, and Σw·extra, as seen at `now`. */
  weightsAt(now: number) {
    const keep = this.keepAt(now);
    return { weight: this.weight * keep, extra: this.extra * keep };
  }

  /**
   * Mean, spread (standard deviation over mean) and effective number of values at `now`:
   * Kish's (Σw)² / Σw², discounted as the newest value ages, so a history left idle is
   * trusted less when dialing resumes.
   */
  estimate(now: number): Estimate {
    if (this.weight <= 0) return { mean: 0, samples: 0 };
    const mean = this.sum / this.weight;
    const kish = (this.weight * this.weight) / this.squaredWeight;
    const variance = Math.max(0, this.sumOfSquares / this.weight - mean * mean);
    return {
      mean,
      samples: kish * this.keepAt(now),
      cv: kish >= 2 && mean > 0 ? Math.sqrt(variance) / mean : undefined,
    };
  }
}

export interface RecentCallsDecay {
  /** Time constant of the live answer rate: short, so the pacer follows the hour of day. */
  answerMs: number;
  /** Time constant of ring, talk and wrap-up times. */
  durationMs: number;
}

export const RECENT_CALLS_DECAY: RecentCallsDecay = { answerMs: 120_000, durationMs: 600_000 };

/**
 * A campaign's recent calls, as the pacer needs them: the share a person answered, how long
 * they rang before, how long agents talked and wrapped up, each an exponentially weighted
 * estimate in time with its effective number of calls, so that the pacer can judge how far to
 * trust it and the estimates follow the hour of day.
 *
 * Talk time is also kept as exposure (time agents spent talking, weighted the same way) over
 * completions: with the exposure of calls still running added by the pacer, that is the mean
 * talk time corrected for the long calls not finished yet, which the mean of finished calls
 * underestimates at the start of a day.
 */
export class RecentCalls {
  private readonly outcomes: DecayingSample;
  private readonly rings: DecayingSample;
  private readonly talks: DecayingSample;
  private readonly wraps: DecayingSample;

  constructor(private readonly decay: RecentCallsDecay = RECENT_CALLS_DECAY) {
    this.outcomes = new DecayingSample(decay.answerMs);
    this.rings = new DecayingSample(decay.durationMs);
    this.talks = new DecayingSample(decay.durationMs);
    this.wraps = new DecayingSample(decay.durationMs);
  }

  /** A placed call ended at `at`; `liveAnswer` when a person picked up (bridged or abandoned). */
  callEnded(liveAnswer: boolean, at: number) {
    this.outcomes.add(liveAnswer ? 1 : 0, at);
  }

  /** A person answered `ringMs` after the call was placed, at `at`. */
  answered(ringMs: number, at: number) {
    this.rings.add(ringMs, at);
  }

  /** A bridged call lasted `talkMs` and ended at `at`. */
  talked(talkMs: number, at: number) {
    const tau = this.decay.durationMs;
    // The call's talk time weighted as every instant of it would be: ∫ e^(−(at−s)/τ) ds.
    this.talks.add(talkMs, at, tau * (1 - Math.exp(-Math.max(0, talkMs) / tau)));
  }

  /** An agent took `wrapMs` from hang-up to disposition, dispositioning at `at`. */
  wrapped(wrapMs: number, at: number) {
    this.wraps.add(wrapMs, at);
  }

  /** The estimates at `now`. */
  history(now: number): PacingHistory {
    const answers = this.outcomes.estimate(now);
    const ring = this.rings.estimate(now);
    const talk = this.talks.estimate(now);
    const wrap = this.wraps.estimate(now);
    const exposure = this.talks.weightsAt(now);
    return {
      answerRate: answers.mean,
      samples: answers.samples,
      ringMs: ring.mean,
      ringCv: ring.cv,
      ringSamples: ring.samples,
      talkMs: talk.mean,
      talkCv: talk.cv,
      talkSamples: talk.samples,
      wrapMs: wrap.mean,
      wrapCv: wrap.cv,
      wrapSamples: wrap.samples,
      talkExposure: {
        decayMs: this.decay.durationMs,
        completions: exposure.weight,
        exposureMs: exposure.extra,
      },
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
  history.callEnded(liveAnswer, call.endedAt);
  if (!liveAnswer || call.answeredAt === null) return;
  history.answered(call.answeredAt - call.claimedAt, call.answeredAt);
  if (call.outcome === "answered") history.talked(call.endedAt - call.answeredAt, call.endedAt);
}
