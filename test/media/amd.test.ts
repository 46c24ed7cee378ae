import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AmdVerdict, AnsweringMachineDetector } from "../../edge/media/amd.ts";
import {
  blockEnergy,
  goertzelFilter,
  goertzelPower,
  ToneBank,
  toneShare,
} from "../../edge/media/goertzel.ts";
import { VoiceActivity } from "../../edge/media/voice-activity.ts";
import { VoicemailCue, type VoicemailCueEvent } from "../../edge/media/voicemail-cue.ts";
import { corpusToolsAvailable, generateCorpus, readWav } from "./amd-corpus.ts";
import { detect, EXPECTED, score } from "./amd-evaluation.ts";

// ---------------------------------------------------------------- synthetic signals

const RATE = 8000;
const FRAME = 160;
const samplesOf = (ms: number) => Math.round((ms * RATE) / 1000);

/** A seeded source of uniform noise in [-1, 1), so that every run hears the same signal. */
function noiseSource(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  };
}

/** Line noise this quiet (peak amplitude) under everything, as a real line has. */
const hiss = noiseSource(1);
const silence = (ms: number, amplitude = 20) =>
  Int16Array.from({ length: samplesOf(ms) }, () => Math.round(hiss() * amplitude));

function tone(hz: number, ms: number, amplitude = 8000): Int16Array {
  return Int16Array.from({ length: samplesOf(ms) }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / RATE)),
  );
}

/** A burst of noise with 10 ms ramps: what a word is to a detector that only times speech. */
function word(ms: number, amplitude = 6000): Int16Array {
  const ramp = samplesOf(10);
  const length = samplesOf(ms);
  return Int16Array.from({ length }, (_, i) => {
    const envelope = Math.min(1, i / ramp, (length - 1 - i) / ramp);
    return Math.round(hiss() * amplitude * envelope);
  });
}

/** Words of `ms` each, `gapMs` apart, for `totalMs`. */
function talk(totalMs: number, ms = 300, gapMs = 150): Int16Array {
  const parts: Int16Array[] = [];
  for (let at = 0; at < totalMs; at += ms + gapMs) parts.push(word(ms), silence(gapMs));
  return concat(...parts);
}

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Adds `noise` under `signal`, clipped to 16 bits. */
function mix(signal: Int16Array, noise: Int16Array): Int16Array {
  return signal.map((sample, i) => Math.max(-32768, Math.min(32767, sample + (noise[i] ?? 0))));
}

/** Feeds 20 ms frames until a verdict; `finish()` if the audio ends first. */
function verdictOf(audio: Int16Array, detector = new AnsweringMachineDetector()): AmdVerdict {
  for (let at = 0; at + FRAME <= audio.length; at += FRAME) {
    const verdict = detector.push(audio.subarray(at, at + FRAME));
    if (verdict) return verdict;
  }
  return detector.finish();
}

function cueOf(audio: Int16Array, cue: VoicemailCue): VoicemailCueEvent | null {
  for (let at = 0; at + FRAME <= audio.length; at += FRAME) {
    const event = cue.push(audio.subarray(at, at + FRAME));
    if (event) return event;
  }
  return null;
}

// ---------------------------------------------------------------- Goertzel

describe("Goertzel", () => {
  test("a tone's power is at its own frequency, not 200 Hz away", () => {
    const frame = tone(1000, 20);
    const at = goertzelPower(frame, goertzelFilter(1000));
    const beside = goertzelPower(frame, goertzelFilter(1200));
    expect(at / beside).toBeGreaterThan(100);
  });

  test("a pure tone holds nearly all of a frame's energy; noise and a dial tone do not", () => {
    const share = (frame: Int16Array, hz: number) =>
      toneShare(goertzelPower(frame, goertzelFilter(hz)), blockEnergy(frame), frame.length);
    expect(share(tone(1000, 20), 1000)).toBeGreaterThan(0.95);
    expect(share(word(20), 1000)).toBeLessThan(0.2);
    const dialTone = tone(350, 20, 4000).map((sample, i) => sample + (tone(440, 20, 4000)[i] ?? 0));
    expect(new ToneBank().dominant(dialTone).share).toBeLessThan(0.6);
  });

  test("the bank finds a tone's frequency within 10 Hz from 300 to 2500 Hz", () => {
    const bank = new ToneBank();
    for (const hz of [440, 697, 1100, 1337, 2100, 2450]) {
      const found = bank.dominant(tone(hz, 20));
      expect(Math.abs(found.frequency - hz)).toBeLessThanOrEqual(10);
      expect(found.share).toBeGreaterThan(0.9);
    }
  });
});

// ---------------------------------------------------------------- speech against noise

describe("voice activity", () => {
  test("steady room noise louder than the silence threshold is not speech; a word over it is", () => {
    const voice = new VoiceActivity();
    const room = silence(2000, 3000);
    const flags: boolean[] = [];
    for (let at = 0; at + FRAME <= room.length; at += FRAME) {
      flags.push(voice.push(room.subarray(at, at + FRAME)));
    }
    expect(voice.level).toBeGreaterThan(256);
    expect(flags.filter(Boolean)).toHaveLength(0);
    const spoken = mix(word(200, 20_000), silence(200, 3000));
    let speech = 0;
    for (let at = 0; at + FRAME <= spoken.length; at += FRAME) {
      if (voice.push(spoken.subarray(at, at + FRAME))) speech++;
    }
    expect(speech).toBeGreaterThanOrEqual(8);
  });
});

// ---------------------------------------------------------------- the detector

describe("answering-machine detection", () => {
  test("silence is unknown once the initial silence has passed", () => {
    const verdict = verdictOf(silence(5000));
    expect(verdict).toMatchObject({ result: "unknown", confidence: 0, ms: 2500 });
  });

  test("a short greeting and then silence is a person", () => {
    const verdict = verdictOf(concat(silence(500), word(400), silence(3000)));
    expect(verdict.result).toBe("human");
    // The greeting ends at 900 ms; the person is known 800 ms of silence later.
    expect(verdict.ms).toBeGreaterThanOrEqual(1700);
    expect(verdict.ms).toBeLessThanOrEqual(1760);
    expect(verdict.confidence).toBeGreaterThan(0.7);
  });

  test("a greeting that runs on without a person's pause is a machine", () => {
    const verdict = verdictOf(concat(silence(500), talk(5000, 700, 200)));
    expect(verdict.result).toBe("machine");
    expect(verdict.reason).toContain("greeting of 2");
    expect(verdict.ms).toBeLessThanOrEqual(500 + 2400 + 40);
  });

  test("five words in a row are a machine before the greeting has run long", () => {
    const verdict = verdictOf(concat(silence(500), talk(5000, 150, 200)));
    expect(verdict).toMatchObject({ result: "machine" });
    expect(verdict.reason).toContain("5 words");
    expect(verdict.ms).toBeLessThan(500 + 2000);
  });

  test("loud steady room noise alone is not a greeting", () => {
    const verdict = verdictOf(silence(5000, 4000));
    expect(verdict.result).toBe("unknown");
  });

  test("a person in a noisy room is a person", () => {
    const greeting = concat(silence(600), word(500, 24_000), silence(3000));
    const verdict = verdictOf(mix(greeting, silence(greeting.length / 8, 2500)));
    expect(verdict.result).toBe("human");
  });

  test("a beep is a machine with high confidence, at any frequency from 400 to 2500 Hz", () => {
    for (const hz of [440, 850, 1400, 2300]) {
      const verdict = verdictOf(concat(silence(1000), tone(hz, 600), silence(2000)));
      expect(verdict.result).toBe("machine");
      expect(verdict.reason).toContain("beep");
      expect(verdict.confidence).toBeGreaterThanOrEqual(0.9);
      // 200 ms of tone make a beep; the first tonal frame may straddle its start.
      expect(verdict.ms).toBeGreaterThanOrEqual(1200);
      expect(verdict.ms).toBeLessThanOrEqual(1260);
    }
  });

  test("a tone shorter than a beep is neither a beep nor a fax", () => {
    const verdict = verdictOf(concat(silence(1000), tone(1000, 120), silence(3000)));
    expect(verdict.result).toBe("unknown");
  });

  test("the fax calling tone (CNG, 1100 Hz for 0.5 s) is a fax when it stops", () => {
    const cng = concat(silence(800), tone(1100, 500), silence(3000), tone(1100, 500));
    const verdict = verdictOf(cng);
    expect(verdict).toMatchObject({ result: "fax" });
    expect(verdict.ms).toBeGreaterThanOrEqual(1300);
    expect(verdict.ms).toBeLessThanOrEqual(1360);
  });

  test("a fax's answer tone (CED, 2100 Hz) is a fax after a second of it", () => {
    const verdict = verdictOf(concat(silence(500), tone(2100, 3000)));
    expect(verdict.result).toBe("fax");
    expect(verdict.ms).toBeLessThanOrEqual(1560);
  });

  test("an 1100 Hz beep after a greeting is a machine's beep, not a fax", () => {
    const verdict = verdictOf(concat(silence(500), word(400), silence(300), tone(1100, 500)));
    expect(verdict.result).toBe("machine");
    expect(verdict.reason).toContain("beep");
  });

  test("the verdict comes once; finish() repeats it", () => {
    const detector = new AnsweringMachineDetector();
    const audio = concat(silence(500), word(400), silence(3000));
    const verdicts: AmdVerdict[] = [];
    for (let at = 0; at + FRAME <= audio.length; at += FRAME) {
      const verdict = detector.push(audio.subarray(at, at + FRAME));
      if (verdict) verdicts.push(verdict);
    }
    expect(verdicts).toHaveLength(1);
    expect(detector.finish()).toEqual(verdicts[0] as AmdVerdict);
  });

  test("media that stops gives the best verdict so far", () => {
    const afterPause = verdictOf(concat(silence(300), word(300), silence(500)));
    expect(afterPause.result).toBe("human");
    expect(afterPause.confidence).toBeLessThan(0.5);
    expect(verdictOf(concat(silence(300), word(600))).result).toBe("unknown");
    expect(new AnsweringMachineDetector().finish().result).toBe("unknown");
  });

  test("at the budget, a greeting that started late is a machine only if it has run 2 s", () => {
    const late = (startMs: number) => verdictOf(concat(silence(startMs), talk(5000, 600, 100)));
    expect(late(1400)).toMatchObject({ result: "machine", ms: 3500, confidence: 0.5 });
    expect(late(1700)).toMatchObject({ result: "unknown", ms: 3500 });
  });

  test("the settings are the detector's: a shorter greeting limit decides sooner", () => {
    const audio = concat(silence(500), talk(5000, 700, 200));
    const strict = verdictOf(audio, new AnsweringMachineDetector({ greetingMs: 1200 }));
    expect(strict.result).toBe("machine");
    expect(strict.ms).toBeLessThan(verdictOf(audio).ms);
  });
});

// ---------------------------------------------------------------- when to leave the message

describe("voicemail cue", () => {
  /** A machine's greeting long enough for a verdict, and the detector that reached it. */
  function machineHeard(greeting: Int16Array) {
    const detector = new AnsweringMachineDetector();
    let at = 0;
    let verdict: AmdVerdict | null = null;
    for (; at + FRAME <= greeting.length && !verdict; at += FRAME) {
      verdict = detector.push(greeting.subarray(at, at + FRAME));
    }
    expect(verdict?.result).toBe("machine");
    return { cue: detector.voicemailCue(), rest: greeting.subarray(at) };
  }

  test("after a beep, the cue is the beep's end", () => {
    const greetingEnd = 500 + 4000;
    const call = concat(silence(500), talk(4000, 600, 200), silence(400), tone(900, 500));
    const { cue, rest } = machineHeard(concat(call, silence(3000)));
    const event = cueOf(rest, cue);
    expect(event?.cue).toBe("beep");
    const beepEnd = greetingEnd + 400 + 500;
    expect(event?.at).toBeGreaterThanOrEqual(beepEnd);
    expect(event?.at).toBeLessThanOrEqual(beepEnd + 60);
  });

  test("a long beep late after the greeting is still a beep, not the silence before it", () => {
    const greetingEnd = 500 + 4000;
    const call = concat(silence(500), talk(4000, 600, 200), silence(700), tone(600, 1000));
    const { cue, rest } = machineHeard(concat(call, silence(3000)));
    const event = cueOf(rest, cue);
    expect(event?.cue).toBe("beep");
    expect(event?.at).toBeGreaterThanOrEqual(greetingEnd + 700 + 1000);
  });

  test("without a beep, the cue is 1.5 s of silence after the greeting", () => {
    const speech = talk(4000, 600, 200);
    const { cue, rest } = machineHeard(concat(silence(500), speech, silence(4000)));
    const event = cueOf(rest, cue);
    expect(event?.cue).toBe("silence");
    // The last word ends 200 ms before the speech's end (its trailing gap).
    const lastWordEnd = 500 + speech.length / 8 - 200;
    expect(event?.at).toBeGreaterThanOrEqual(lastWordEnd + 1500);
    expect(event?.at).toBeLessThanOrEqual(lastWordEnd + 1560);
  });

  test("a greeting that never ends is given up on after 20 s", () => {
    const call = concat(silence(500), talk(30_000, 600, 200));
    const { cue, rest } = machineHeard(call);
    const startedAt = (call.length - rest.length) / 8;
    const event = cueOf(rest, cue);
    expect(event?.cue).toBe("timeout");
    expect(event?.at).toBeGreaterThanOrEqual(startedAt + 20_000);
    expect(event?.at).toBeLessThanOrEqual(startedAt + 20_040);
  });

  test("a cue listening on its own counts silence only once a greeting has been heard", () => {
    const cue = new VoicemailCue();
    expect(cueOf(silence(5000), cue)).toBeNull();
    const event = cueOf(concat(word(500), silence(2000)), cue);
    expect(event?.cue).toBe("silence");
    expect(event?.at).toBeGreaterThanOrEqual(5000 + 500 + 1500);
  });
});

// ---------------------------------------------------------------- the corpus

const toolsInstalled = corpusToolsAvailable();
if (!toolsInstalled) {
  console.warn("skipping the answering-machine corpus tests: espeak-ng and sox are not on PATH");
}

describe.skipIf(!toolsInstalled)("answering-machine corpus (espeak-ng and sox)", () => {
  test("is the same at every run", async () => {
    const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), "amd-corpus-test-")));
    try {
      const [first, second] = await Promise.all(
        dirs.map((dir) => generateCorpus({ seed: 7, count: 3, dir })),
      );
      for (const [index, call] of (first ?? []).entries()) {
        const again = second?.[index];
        expect(again?.script).toBe(call.script);
        expect(readFileSync(again?.file ?? "")).toEqual(readFileSync(call.file));
      }
    } finally {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a slice of 40 calls meets the goals, loosely", async () => {
    const calls = await generateCorpus({ seed: 1, count: 40 });
    const detections = calls.map((call) => detect(call, readWav(call.file)));
    const result = score(detections);
    expect(result.machinesFound).toBeGreaterThanOrEqual(0.8);
    expect(result.peopleTakenForMachines).toBeLessThanOrEqual(0.1);
    expect(result.afterGreeting.p50).toBeLessThan(2500);
    for (const { call, verdict } of detections) {
      if (call.label !== "human" && call.label !== "machine") {
        expect(`${call.file}: ${verdict.result}`).toBe(`${call.file}: ${EXPECTED[call.label]}`);
      }
    }
    // A message never starts before the recorder is ready.
    expect(result.cues.early).toBe(0);
  });
});
