import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { samples8k } from "../../src/media/wav.ts";

/** Sounds for the call-audio tests, at 8 kHz, and what to hear in them. */

export const espeakInstalled = () => Bun.which("espeak-ng") !== null;

/** A tone of `hz` for `ms` (0 Hz: silence). */
export function tone(hz: number, ms: number, level = 8_000): Int16Array {
  const samples = new Int16Array((ms * 8000) / 1000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(level * Math.sin((2 * Math.PI * hz * i) / 8000));
  return samples;
}

export function concat(...parts: Int16Array[]): Int16Array {
  const all = new Int16Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return all;
}

/** Speech by espeak-ng. */
export function spoken(text: string, voice = "en-us"): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), "speech-"));
  try {
    const file = join(dir, "speech.wav");
    Bun.spawnSync(["espeak-ng", "-v", voice, "-s", "160", "-w", file, text]);
    return samples8k(new Uint8Array(readFileSync(file)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The share of a stretch's power at `hz` (Goertzel over the whole of it). */
export function powerShareAt(samples: ArrayLike<number>, hz: number): number {
  const k = 2 * Math.cos((2 * Math.PI * hz) / 8000);
  let s1 = 0;
  let s2 = 0;
  let energy = 0;
  for (let i = 0; i < samples.length; i++) {
    const x = samples[i] as number;
    const s0 = x + k * s1 - s2;
    s2 = s1;
    s1 = s0;
    energy += x * x;
  }
  const power = s1 * s1 + s2 * s2 - k * s1 * s2;
  return energy === 0 ? 0 : (2 * power) / (samples.length * energy);
}
