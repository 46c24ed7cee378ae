import { describe, expect, test } from "bun:test";
import { resample } from "../../src/media/resample.ts";

const tone = (hz: number, rate: number, seconds: number, amplitude = 0.5) =>
  Float32Array.from(
    { length: Math.round(rate * seconds) },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / rate),
  );

/** The RMS of a signal, leaving out `margin` samples at each end where the kernel is cut. */
const rms = (signal: Float32Array, margin = 50) => {
  const inner = signal.subarray(margin, signal.length - margin);
  return Math.sqrt(inner.reduce((sum, x) => sum + x * x, 0) / inner.length);
};

const RATES = [48000, 44100, 32000, 22050, 16000, 11025, 96000, 44101];

describe("resample", () => {
  test("the same rate gives a copy", () => {
    const input = tone(440, 8000, 0.1);
    const output = resample(input, 8000, 8000);
    expect(output).toEqual(input);
    expect(output).not.toBe(input);
  });

  test("keeps the duration: as many output samples as fit", () => {
    expect(resample(new Float32Array(48000), 48000, 8000)).toHaveLength(8000);
    expect(resample(new Float32Array(44100 * 3 + 5), 44100, 8000)).toHaveLength(24000);
    expect(resample(new Float32Array(11025), 11025, 8000)).toHaveLength(8000);
    expect(resample(new Float32Array(6000), 6000, 8000)).toHaveLength(8000);
    expect(resample(new Float32Array(0), 48000, 8000)).toHaveLength(0);
    expect(resample(new Float32Array(5), 48000, 8000)).toHaveLength(0);
  });

  test.each(RATES)("a constant stays constant, up to the edges, from %i Hz", (rate) => {
    const output = resample(new Float32Array(rate / 10).fill(0.25), rate, 8000);
    for (const x of output) expect(x).toBeCloseTo(0.25, 5);
  });

  test.each(RATES)("a 1 kHz tone from %i Hz lands on the same tone at 8 kHz", (rate) => {
    const output = resample(tone(1000, rate, 0.5), rate, 8000);
    const expected = tone(1000, 8000, 0.5).subarray(0, output.length);
    const error = output.map((x, i) => x - (expected[i] as number));
    // Within 1% of the amplitude, in level and in phase alike.
    expect(rms(error)).toBeLessThan(0.01 * rms(expected));
  });

  test.each(RATES)("a 3.2 kHz tone from %i Hz passes within 1 dB", (rate) => {
    const output = resample(tone(3200, rate, 0.5), rate, 8000);
    expect(rms(output) / rms(tone(3200, 8000, 0.5))).toBeGreaterThan(10 ** (-1 / 20));
  });

  test.each(
    RATES.flatMap((rate) =>
      [4600, 6000, 9000, 15000].filter((hz) => hz < rate / 2).map((hz) => [rate, hz]),
    ),
  )("from %i Hz, a %i Hz tone does not come back as an alias", (rate, hz) => {
    const output = resample(tone(hz, rate, 0.5), rate, 8000);
    // 40 dB down at least.
    expect(rms(output)).toBeLessThan(0.01 * rms(tone(hz, rate, 0.5)));
  });

  test("going up from 6 kHz, a 1 kHz tone stays the same tone", () => {
    const output = resample(tone(1000, 6000, 0.5), 6000, 8000);
    const expected = tone(1000, 8000, 0.5);
    const error = output.map((x, i) => x - (expected[i] as number));
    expect(rms(error)).toBeLessThan(0.01 * rms(expected));
  });

  test("refuses rates that are not positive whole numbers", () => {
    const input = new Float32Array(10);
    expect(() => resample(input, 0, 8000)).toThrow(RangeError);
    expect(() => resample(input, 44100.5, 8000)).toThrow(RangeError);
    expect(() => resample(input, 44100, Number.NaN)).toThrow(RangeError);
  });
});
