import type { DominantTone } from "./goertzel.ts";

/** A stretch of frames dominated by one frequency: a beep, a fax tone. Times in ms. */
export interface ToneRun {
  frequency: number;
  startMs: number;
  endMs: number;
}

export const toneDuration = (run: ToneRun) => run.endMs - run.startMs;

export interface SteadyToneSettings {
  /** The share of a frame's energy one frequency must hold for the frame to be tonal. */
  minShare: number;
  /** How far a frame's frequency may stray from the run's and still continue it. */
  toleranceHz: number;
  /**
   * Non-tonal frames a run survives: a lost or concealed packet in the middle of a tone
   * must not cut it in two.
   */
  maxGapFrames: number;
}

export const DEFAULT_STEADY_TONE: SteadyToneSettings = {
  minShare: 0.9,
  toleranceHz: 30,
  maxGapFrames: 1,
};

/**
 * Follows runs of tonal frames at one frequency. Speech holds a single frequency for a frame
 * or two at most (its harmonics glide with the voice's pitch and share the energy), so a run
 * of 200 ms is a tone.
 */
export class SteadyTones {
  private run: (ToneRun & { frames: number; gap: number }) | null = null;

  constructor(private readonly settings: SteadyToneSettings = DEFAULT_STEADY_TONE) {}

  /** The run in progress, if any. */
  get current(): ToneRun | null {
    return this.run && finished(this.run);
  }

  /** Whether a frame's dominant tone makes it tonal. */
  isTonal(tone: DominantTone | null): tone is DominantTone {
    return tone !== null && tone.share >= this.settings.minShare;
  }

  /**
   * Feeds the dominant tone of the frame from `startMs` to `endMs` (null for a frame too quiet
   * to hold one); returns the run this frame ended, if any.
   */
  push(tone: DominantTone | null, startMs: number, endMs: number): ToneRun | null {
    const run = this.run;
    if (this.isTonal(tone)) {
      if (run && Math.abs(tone.frequency - run.frequency) <= this.settings.toleranceHz) {
        run.frequency += (tone.frequency - run.frequency) / (run.frames + 1);
        run.frames++;
        run.endMs = endMs;
        run.gap = 0;
        return null;
      }
      this.run = { frequency: tone.frequency, startMs, endMs, frames: 1, gap: 0 };
      return run && finished(run);
    }
    if (!run) return null;
    if (++run.gap <= this.settings.maxGapFrames) return null;
    this.run = null;
    return finished(run);
  }
}

const finished = (run: ToneRun): ToneRun => ({
  frequency: run.frequency,
  startMs: run.startMs,
  endMs: run.endMs,
});
