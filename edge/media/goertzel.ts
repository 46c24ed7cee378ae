/**
 * Goertzel's algorithm: the power of one frequency over a block of samples, for one
 * multiply-add per sample. Tone detection needs a few dozen frequencies per 20 ms frame, where
 * an FFT would compute every bin and need a power-of-two block.
 */

export const SAMPLE_RATE = 8000;

/** One frequency of a filter bank, with its recurrence coefficient computed once. */
export interface GoertzelFilter {
  frequency: number;
  coefficient: number;
}

export function goertzelFilter(frequency: number, sampleRate = SAMPLE_RATE): GoertzelFilter {
  return { frequency, coefficient: 2 * Math.cos((2 * Math.PI * frequency) / sampleRate) };
}

/** |X(f)|² of the block at the filter's frequency (the squared magnitude of one DFT term). */
export function goertzelPower(samples: ArrayLike<number>, filter: GoertzelFilter): number {
  const { coefficient } = filter;
  let previous = 0;
  let beforePrevious = 0;
  for (let i = 0; i < samples.length; i++) {
    const current = (samples[i] as number) + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  return (
    previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
  );
}

/** Σx²: the block's energy, what a tone's power is measured against. */
export function blockEnergy(samples: ArrayLike<number>): number {
  let energy = 0;
  for (let i = 0; i < samples.length; i++) {
    const sample = samples[i] as number;
    energy += sample * sample;
  }
  return energy;
}

/**
 * The share of a block's energy that one frequency holds, 0..1. A sine of amplitude A over N
 * samples has |X|² ≈ (N·A/2)² and Σx² ≈ N·A²/2, so a pure tone scores about 1 and speech,
 * whose energy spreads over many harmonics, scores far less.
 */
export function toneShare(power: number, energy: number, length: number): number {
  if (energy <= 0 || length === 0) return 0;
  return Math.min(1, (2 * power) / (length * energy));
}

export interface DominantTone {
  frequency: number;
  /** The share of the frame's energy at `frequency` (see `toneShare`). */
  share: number;
}

export interface ToneBankOptions {
  lowestHz: number;
  highestHz: number;
  stepHz: number;
  sampleRate: number;
}

/**
 * A bank of Goertzel filters `stepHz` apart, to find the strongest single frequency of a
 * frame. A 160-sample frame resolves about 50 Hz, so a tone between two filters loses up to
 * half its power: the best filter is refined twice, a quarter and an eighth of a step either
 * side, which brings the worst loss under 5 %.
 */
export class ToneBank {
  private readonly filters: GoertzelFilter[];
  private readonly options: ToneBankOptions;

  constructor(options: Partial<ToneBankOptions> = {}) {
    this.options = {
      lowestHz: 300,
      highestHz: 2500,
      stepHz: 50,
      sampleRate: SAMPLE_RATE,
      ...options,
    };
    const { lowestHz, highestHz, stepHz, sampleRate } = this.options;
    this.filters = [];
    for (let frequency = lowestHz; frequency <= highestHz; frequency += stepHz) {
      this.filters.push(goertzelFilter(frequency, sampleRate));
    }
  }

  /** The frequency of the bank's range that holds the largest share of the frame's energy. */
  dominant(frame: ArrayLike<number>): DominantTone {
    const energy = blockEnergy(frame);
    if (energy === 0) return { frequency: 0, share: 0 };
    let best = { frequency: 0, power: -1 };
    for (const filter of this.filters) {
      const power = goertzelPower(frame, filter);
      if (power > best.power) best = { frequency: filter.frequency, power };
    }
    for (const fraction of [4, 8]) {
      const offset = this.options.stepHz / fraction;
      for (const frequency of [best.frequency - offset, best.frequency + offset]) {
        const power = goertzelPower(frame, goertzelFilter(frequency, this.options.sampleRate));
        if (power > best.power) best = { frequency, power };
      }
    }
    return { frequency: best.frequency, share: toneShare(best.power, energy, frame.length) };
  }
}
