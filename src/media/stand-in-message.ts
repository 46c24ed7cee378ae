import { encodeWav } from "./wav.ts";

/**
 * A recording that stands in for a campaign's abandon message where nobody records one: the
 * simulator, the demo and the benchmarks model campaigns that have theirs. Two seconds of a
 * soft two-tone chime, a WAV the service keeps as sent.
 */
export function standInMessage(): Uint8Array {
  const samples = new Int16Array(16_000);
  for (let i = 0; i < samples.length; i++) {
    const hz = i < 8_000 ? 660 : 440;
    const fade = Math.min(1, i / 400, (samples.length - i) / 400);
    samples[i] = Math.round(4_000 * fade * Math.sin((2 * Math.PI * hz * i) / 8000));
  }
  return encodeWav(samples, 8000);
}
