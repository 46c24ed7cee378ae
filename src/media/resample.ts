/**
 * Band-limited resampling: each output sample is a windowed-sinc (Kaiser) weighted sum of
 * the input around its instant, cut off below the lower rate's Nyquist frequency, so that
 * going down does not alias and going up does not image.
 */

/** The kernel's reach either side, in periods of the lower rate: 1.5 ms at 8 kHz. */
const HALF_WIDTH = 12;
/** The cutoff as a fraction of the lower rate's Nyquist frequency: 3.8 kHz at 8 kHz. */
const CUTOFF = 0.95;
/** Kaiser's β for about 50 dB of stopband, below the noise of G.711 itself. */
const KAISER_BETA = 4.55;
/** Kernel values tabulated per period of the lower rate, read with linear interpolation. */
const TABLE_STEPS = 256;
/** The most weights kept for the phases of a ratio; rarer ratios compute theirs per sample. */
const MAX_CACHED_WEIGHTS = 1 << 20;

function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  for (let k = 1; term > 1e-12 * sum; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
  }
  return sum;
}

/** The kernel from its centre out; its scale does not matter, as weights are normalised. */
const KERNEL = Float64Array.from({ length: HALF_WIDTH * TABLE_STEPS + 2 }, (_, i) => {
  const u = i / TABLE_STEPS;
  if (u >= HALF_WIDTH) return 0;
  const x = Math.PI * CUTOFF * u;
  const sinc = u === 0 ? 1 : Math.sin(x) / x;
  const window = besselI0(KAISER_BETA * Math.sqrt(1 - (u / HALF_WIDTH) ** 2));
  return (sinc * window) / besselI0(KAISER_BETA);
});

function kernelAt(u: number): number {
  const i = u | 0;
  if (i >= HALF_WIDTH * TABLE_STEPS) return 0;
  const below = KERNEL[i] as number;
  return below + ((KERNEL[i + 1] as number) - below) * (u - i);
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * `input`, sampled at `fromRate`, sampled again at `toRate` (both whole numbers of Hz). The
 * output holds as many samples as fit in the input's duration. The weights of each output
 * sample sum to one, which keeps a constant signal constant, up to the edges.
 */
export function resample(input: Float32Array, fromRate: number, toRate: number): Float32Array {
  for (const rate of [fromRate, toRate]) {
    if (!Number.isSafeInteger(rate) || rate <= 0)
      throw new RangeError(`invalid sample rate ${rate}`);
  }
  if (fromRate === toRate) return input.slice();
  const output = new Float32Array(Math.floor((input.length * toRate) / fromRate));
  // Output n sits at input position n·down/up: its fraction repeats with period `up`.
  const divisor = gcd(fromRate, toRate);
  const up = toRate / divisor;
  const down = fromRate / divisor;
  // Kernel table steps per input sample: the kernel is stretched to the lower rate.
  const scale = (Math.min(fromRate, toRate) / fromRate) * TABLE_STEPS;
  const reach = Math.ceil((HALF_WIDTH * TABLE_STEPS) / scale);
  const taps = 2 * reach + 1;

  /** The normalised weights of the taps around a position `fraction` past an input sample. */
  const weightsAt = (fraction: number) => {
    const weights = new Float32Array(taps);
    let total = 0;
    for (let j = 0; j < taps; j++) {
      const weight = kernelAt(Math.abs(j - reach - fraction) * scale);
      weights[j] = weight;
      total += weight;
    }
    for (let j = 0; j < taps; j++) weights[j] = (weights[j] as number) / total;
    return weights;
  };
  const cached = up * taps <= MAX_CACHED_WEIGHTS ? new Map<number, Float32Array>() : undefined;

  const last = input.length - 1;
  for (let n = 0; n < output.length; n++) {
    const phase = (n * down) % up;
    const base = (n * down - phase) / up;
    let weights = cached?.get(phase);
    if (!weights) {
      weights = weightsAt(phase / up);
      cached?.set(phase, weights);
    }
    const first = base - reach;
    if (first >= 0 && base + reach <= last) {
      let sum = 0;
      for (let j = 0; j < taps; j++) sum += (weights[j] as number) * (input[first + j] as number);
      output[n] = sum;
    } else {
      // At the edges, the weights that fall inside the input are normalised again.
      let sum = 0;
      let total = 0;
      for (let j = Math.max(0, -first); j < taps && first + j <= last; j++) {
        sum += (weights[j] as number) * (input[first + j] as number);
        total += weights[j] as number;
      }
      output[n] = total > 0 ? sum / total : 0;
    }
  }
  return output;
}
