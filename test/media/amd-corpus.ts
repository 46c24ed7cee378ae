/**
 * A reproducible corpus of synthetic answered calls for answering-machine detection: what the
 * far end sends after it answers, as a G.711 line delivers it (8 kHz mono, 300–3400 Hz, μ-law
 * quantised), with line or room noise underneath.
 *
 * - human: a short greeting ("Hello?", "Hi, this is Dana.") after 0.2–1.5 s, then silence, and
 *   sometimes "Hello?" again after another 1.5–2.5 s; one person in twenty gives a longer
 *   greeting ("Hello, this is Chris, who's calling?"), the case a detector that times
 *   greetings gets wrong;
 * - machine: a voicemail greeting of 3–10 s, sentence after sentence, and for most a beep
 *   (a sine of 440–1400 Hz, 250–1000 ms) after it;
 * - fax: the calling tone CNG of ITU-T T.30 (1100 Hz, 0.5 s on, 3 s off);
 * - silence: line noise only; noise: louder room noise only.
 *
 * Voices are espeak-ng's (accents, variants, speeds 130–200 words a minute, pitches); sox
 * resamples, band-limits and normalises them, makes the tones and the noise, and puts the
 * mix through μ-law. Every call is planned from a PRNG seeded with the corpus seed and the
 * call's index, so a call is the same whatever the count, and the files are cached in a
 * temporary directory per seed: a rerun only reads them.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type CallLabel = "human" | "machine" | "fax" | "silence" | "noise";

export interface CorpusCall {
  file: string;
  label: CallLabel;
  beep: boolean;
  /** When the first word (a fax: its first tone) starts, in ms from the answer; null for none. */
  greetingStartMs: number | null;
  /** When the greeting's last word ends (a person: the first phrase); null without speech. */
  greetingEndMs: number | null;
  /** When a machine's beep ends; null without one. */
  beepEndMs: number | null;
  durationMs: number;
  /** What is heard, for reading a failure: `[0.6s] "Hello?" [beep 880Hz 400ms]`. */
  script: string;
}

export interface CorpusOptions {
  seed: number;
  count: number;
  /** Where the files go; by default a directory per seed under the system's temp directory. */
  dir?: string;
  /** Called after each call is ready, generated or found in the cache. */
  onProgress?: (done: number, count: number) => void;
}

/** Bump when a change to the generator changes its output, so that cached files are redone. */
const GENERATOR_VERSION = 1;
const RATE = 8000;
/** The generation runs at most this many programs at once: the machine has two cores. */
const PARALLEL = 2;

export const corpusDir = (seed: number) =>
  join(tmpdir(), `amd-corpus-v${GENERATOR_VERSION}-seed-${seed}`);

/** Whether espeak-ng and sox are installed, without which there is no corpus. */
export const corpusToolsAvailable = () =>
  Bun.which("espeak-ng") !== null && Bun.which("sox") !== null;

export async function generateCorpus(options: CorpusOptions): Promise<CorpusCall[]> {
  const { seed, count } = options;
  const dir = options.dir ?? corpusDir(seed);
  mkdirSync(dir, { recursive: true });
  const calls: CorpusCall[] = new Array(count);
  let next = 0;
  let done = 0;
  // Each worker runs one program at a time, so PARALLEL workers keep both cores busy.
  const worker = async () => {
    while (next < count) {
      const index = next++;
      calls[index] = await callFile(seed, index, dir);
      options.onProgress?.(++done, count);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  return calls;
}

async function callFile(seed: number, index: number, dir: string): Promise<CorpusCall> {
  const name = `call-${String(index).padStart(4, "0")}`;
  const file = join(dir, `${name}.wav`);
  const manifest = join(dir, `${name}.json`);
  if (existsSync(file) && existsSync(manifest)) {
    return { file, ...JSON.parse(readFileSync(manifest, "utf8")) };
  }
  const { samples, ...call } = await render(planCall(seed, index));
  // Written under names of this process's and renamed, so that an interrupted run leaves no
  // half file behind and two runs at once (the tests and the bench) do not mix their writes.
  const partial = `${file}.${process.pid}.partial`;
  await writeTelephoneWav(samples, `${partial}.wav`);
  renameSync(`${partial}.wav`, file);
  writeFileSync(`${partial}.json`, JSON.stringify(call));
  renameSync(`${partial}.json`, manifest);
  return { file, ...call };
}

// ---------------------------------------------------------------- reading

/** The samples of a 16-bit PCM WAV file (the corpus's are 8 kHz mono). */
export function readWav(file: string): Int16Array {
  const bytes = readFileSync(file);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number) => bytes.toString("latin1", at, at + 4);
  if (tag(0) !== "RIFF" || tag(8) !== "WAVE") throw new Error(`${file} is not a WAV file`);
  let at = 12;
  while (at + 8 <= bytes.length) {
    const size = view.getUint32(at + 4, true);
    if (tag(at) === "fmt " && view.getUint16(at + 8 + 14, true) !== 16) {
      throw new Error(`${file} does not hold 16-bit samples`);
    }
    if (tag(at) === "data") {
      const samples = new Int16Array(Math.floor(size / 2));
      for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(at + 8 + 2 * i, true);
      return samples;
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`${file} has no data chunk`);
}

// ---------------------------------------------------------------- planning

/** One thing heard, in order; pauses are silence (noise only) between the others. */
type Part =
  | { kind: "pause"; ms: number }
  | { kind: "speech"; text: string; voice: Voice; peakDb: number }
  | { kind: "tone"; hz: number; ms: number; peakDb: number; role: "beep" | "cng" };

interface Voice {
  name: string;
  wordsPerMinute: number;
  pitch: number;
  /** espeak-ng's pause between words, in 10 ms units. */
  wordGap: number;
}

interface CallPlan {
  label: CallLabel;
  parts: Part[];
  /** The file's length; the parts that do not fill it are followed by noise alone. */
  durationMs: number;
  noise: { color: "whitenoise" | "pinknoise" | "brownnoise"; rmsDb: number };
}

/** Both halves of an even/odd split get the same mix: pairs of calls share a label. */
const LABEL_CYCLE: CallLabel[] = [
  "human",
  "machine",
  "human",
  "machine",
  "fax",
  "human",
  "machine",
  "silence",
  "human",
  "machine",
  "human",
  "machine",
  "noise",
  "human",
  "machine",
  "fax",
  "human",
  "machine",
  "human",
  "machine",
];

const ACCENTS = [
  "en-us",
  "en-gb",
  "en-gb-scotland",
  "en-gb-x-rp",
  "en-gb-x-gbclan",
  "en-gb-x-gbcwmd",
  "en-029",
  "en-us-nyc",
];
const VARIANTS = ["", "+f1", "+f2", "+f3", "+f4", "+m1", "+m2", "+m3", "+m4", "+m7"];

const SHORT_GREETINGS = [
  "Hello?",
  "Hello.",
  "Yes?",
  "Hi.",
  "Yeah?",
  "Hello, who is this?",
  "Yes, who is this?",
  "Hi, this is Dana.",
  "Hello, Smith residence.",
  "Speaking.",
  "Good morning.",
  "Hello, Mark speaking.",
  "Yes, hello?",
  "Hi there.",
  "Jones residence.",
  "Who's calling?",
  "This is Pat.",
  "Hello, it's Maria.",
  "Hey.",
  "Hello, can I help you?",
];
/** Longer greetings a person may give: the hard cases for a detector that times greetings. */
const LONGER_GREETINGS = [
  "Good afternoon, Miller residence.",
  "Hello, this is Chris, who's calling?",
  "Hi, you've got Sam.",
];
const SECOND_TRIES = ["Hello?", "Hello? Anyone there?", "Hello-o?", "Yes?"];

const NAMES = ["Dana", "John Smith", "Priya", "Mike Johnson", "Alex", "the Garcia family"];
const BUSINESSES = ["Acme Plumbing", "Doctor Lee's office", "Green Valley Dental"];
const OPENINGS = [
  "Hi, you've reached the voicemail of {name}.",
  "Hello, you have reached {name}.",
  "Hi, this is {name}.",
  "You have reached the voice mailbox of {name}.",
  "Thank you for calling {business}.",
  "Hey, it's {name}.",
  "The person you are trying to reach is not available.",
  "The number you have dialed, {digits}, is not available.",
];
const MIDDLES = [
  "I can't come to the phone right now.",
  "I'm not available to take your call.",
  "Sorry I missed your call.",
  "We are either on the other line or away from the desk.",
  "Our office hours are Monday through Friday, nine to five.",
  "I'm probably out walking the dog.",
];
const CLOSINGS = [
  "Please leave a message after the tone.",
  "Leave your name and number and I'll call you back.",
  "Please leave a message and I will get back to you as soon as possible.",
  "At the tone, please record your message.",
  "When you have finished recording, you may hang up.",
  "Thanks, and have a great day.",
];

/** mulberry32: a small, fast PRNG that is the same everywhere. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

function planCall(seed: number, index: number): CallPlan {
  const random = prng(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35));
  const between = (low: number, high: number) => low + (high - low) * random();
  const whole = (low: number, high: number) => Math.round(between(low, high));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const voice = (): Voice => ({
    name: `${pick(ACCENTS)}${pick(VARIANTS)}`,
    wordsPerMinute: whole(130, 200),
    pitch: whole(25, 75),
    wordGap: whole(0, 2),
  });
  const label = LABEL_CYCLE[Math.floor(index / 2) % LABEL_CYCLE.length] as CallLabel;
  const lineNoise = {
    color: pick(["whitenoise", "pinknoise", "brownnoise"] as const),
    rmsDb: between(-66, -48),
  };
  const answerPause: Part = { kind: "pause", ms: whole(200, 1500) };

  switch (label) {
    case "human": {
      const speaker = voice();
      const phrase = random() < 0.05 ? pick(LONGER_GREETINGS) : pick(SHORT_GREETINGS);
      const peakDb = between(-16, -3);
      const parts: Part[] = [answerPause, { kind: "speech", text: phrase, voice: speaker, peakDb }];
      if (random() < 0.35) {
        parts.push({ kind: "pause", ms: whole(1500, 2500) });
        parts.push({ kind: "speech", text: pick(SECOND_TRIES), voice: speaker, peakDb });
      }
      // A fifth of the people answer in a room louder than a quiet line: a fan, a street.
      const noise = random() < 0.2 ? { ...lineNoise, rmsDb: between(-48, -38) } : lineNoise;
      return { label, parts, durationMs: 7000, noise };
    }
    case "machine": {
      const speaker = voice();
      const peakDb = between(-16, -3);
      const fill = (text: string) =>
        text
          .replace("{name}", pick(NAMES))
          .replace("{business}", pick(BUSINESSES))
          .replace("{digits}", "5 5 5, 0 1 9 2");
      // The sentences that fit the greeting's drawn length (3–10 s), estimated from the words
      // and the speed: espeak-ng says about a third more words a minute than it is asked
      // to in these sentences; what it makes of them is measured when rendered.
      const targetMs = between(3000, 10_000);
      const msOf = (text: string) => (text.split(" ").length * 45_000) / speaker.wordsPerMinute;
      const opening = fill(pick(OPENINGS));
      const closing = pick(CLOSINGS);
      let sentences = [opening, closing];
      if (msOf(opening) + msOf(closing) > targetMs + 1000) {
        const nearer = (text: string) => Math.abs(msOf(text) - targetMs);
        sentences = [nearer(opening) < nearer(closing) ? opening : closing];
      }
      let estimateMs = sentences.reduce((sum, text) => sum + msOf(text) + 400, 0);
      for (const middle of shuffle(MIDDLES, random)) {
        if (estimateMs + msOf(middle) > targetMs) break;
        sentences.splice(sentences.length - 1, 0, middle);
        estimateMs += msOf(middle) + 400;
      }
      const parts: Part[] = [answerPause];
      for (const [at, text] of sentences.entries()) {
        if (at > 0) parts.push({ kind: "pause", ms: whole(150, 700) });
        parts.push({ kind: "speech", text, voice: speaker, peakDb });
      }
      if (random() < 0.65) {
        parts.push({ kind: "pause", ms: whole(200, 800) });
        parts.push({
          kind: "tone",
          hz: whole(440, 1400),
          ms: whole(250, 1000),
          peakDb: between(-18, -6),
          role: "beep",
        });
      }
      parts.push({ kind: "pause", ms: 3000 });
      return { label, parts, durationMs: 0, noise: lineNoise };
    }
    case "fax": {
      const peakDb = between(-20, -8);
      const hz = whole(1090, 1110);
      const parts: Part[] = [answerPause];
      for (let burst = 0; burst < 3; burst++) {
        if (burst > 0) parts.push({ kind: "pause", ms: 3000 });
        parts.push({ kind: "tone", hz, ms: 500, peakDb, role: "cng" });
      }
      return { label, parts, durationMs: 0, noise: lineNoise };
    }
    case "silence":
      return { label, parts: [], durationMs: 6000, noise: lineNoise };
    case "noise":
      return {
        label,
        parts: [],
        durationMs: 6000,
        noise: { color: lineNoise.color, rmsDb: between(-42, -26) },
      };
  }
}

// ---------------------------------------------------------------- rendering

/** `-R` seeds sox's random generators (noise, dither) the same way at every run. */
const SOX = ["sox", "-R"];
const RAW = ["-t", "raw", "-e", "signed", "-b", "16", "-r", String(RATE), "-c", "1"];
/** The telephone band, as a G.711 line passes it. */
const TELEPHONE_BAND = ["highpass", "300", "lowpass", "3400"];

async function render(plan: CallPlan): Promise<Omit<CorpusCall, "file"> & { samples: Int16Array }> {
  const placed: { at: number; samples: Float32Array }[] = [];
  const script: string[] = [];
  let cursor = 0;
  let greetingStartMs: number | null = null;
  let greetingEndMs: number | null = null;
  let beepEndMs: number | null = null;
  for (const part of plan.parts) {
    if (part.kind === "pause") {
      cursor += part.ms * (RATE / 1000);
      script.push(`[${(part.ms / 1000).toFixed(1)}s]`);
      continue;
    }
    const samples =
      part.kind === "speech" ? await speech(part.text, part.voice) : await tone(part.hz, part.ms);
    scaleToPeak(samples, part.peakDb);
    placed.push({ at: cursor, samples });
    const startMs = (cursor * 1000) / RATE;
    cursor += samples.length;
    const endMs = (cursor * 1000) / RATE;
    if (part.kind === "speech") {
      script.push(`"${part.text}" (${part.voice.name} ${part.voice.wordsPerMinute}wpm)`);
      greetingStartMs ??= startMs;
      // A person's greeting is the first phrase; a machine's runs to its last sentence.
      if (plan.label === "machine" || greetingEndMs === null) greetingEndMs = endMs;
    } else {
      script.push(`[${part.role} ${part.hz}Hz ${part.ms}ms]`);
      if (part.role === "beep") beepEndMs = endMs;
      else greetingStartMs ??= startMs;
    }
  }
  const length = Math.max(cursor, (plan.durationMs * RATE) / 1000);
  const underneath = await noise(plan.noise.color, length / RATE);
  scaleToRms(underneath, plan.noise.rmsDb);
  // sox rounds the noise's length; the call's is the parts'.
  const mix = new Float32Array(length);
  mix.set(underneath.subarray(0, length));
  for (const { at, samples } of placed) {
    for (let i = 0; i < samples.length; i++) mix[at + i] = (mix[at + i] ?? 0) + (samples[i] ?? 0);
  }
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) {
    out[i] = Math.max(-32768, Math.min(32767, Math.round((mix[i] ?? 0) * 32767)));
  }
  return {
    label: plan.label,
    beep: beepEndMs !== null,
    greetingStartMs,
    greetingEndMs: plan.label === "human" || plan.label === "machine" ? greetingEndMs : null,
    beepEndMs,
    durationMs: (length * 1000) / RATE,
    script: script.join(" "),
    samples: out,
  };
}

/** espeak-ng's speech at 8 kHz in the telephone band, without its leading and trailing silence. */
async function speech(text: string, voice: Voice): Promise<Float32Array> {
  const wav = await run([
    "espeak-ng",
    "-v",
    voice.name,
    "-s",
    String(voice.wordsPerMinute),
    "-p",
    String(voice.pitch),
    "-g",
    String(voice.wordGap),
    "--stdout",
    text,
  ]);
  const trim = ["silence", "1", "0.01", "-45d"];
  return floats(
    await run(
      [
        ...SOX,
        "-t",
        "wav",
        "-",
        ...RAW,
        "-",
        ...TELEPHONE_BAND,
        ...trim,
        "reverse",
        ...trim,
        "reverse",
      ],
      wav,
    ),
  );
}

/** A sine with 5 ms ramps, as a beep or a fax tone is shaped. */
async function tone(hz: number, ms: number): Promise<Float32Array> {
  const seconds = String(ms / 1000);
  return floats(
    await run([
      ...SOX,
      "-n",
      ...RAW,
      "-",
      "synth",
      seconds,
      "sine",
      String(hz),
      "vol",
      "0.5",
      "fade",
      "q",
      "0.005",
      seconds,
      "0.005",
    ]),
  );
}

/** Band-limited noise. */
async function noise(color: string, seconds: number): Promise<Float32Array> {
  const args = [...SOX, "-n", ...RAW, "-", "synth", String(seconds), color, "vol", "0.5"];
  return floats(await run([...args, ...TELEPHONE_BAND]));
}

/** The mix as a G.711 μ-law line delivers it, decoded back to 16-bit linear samples. */
async function writeTelephoneWav(samples: Int16Array, file: string): Promise<void> {
  const bytes = new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
  const ulaw = await run([...SOX, ...RAW, "-", "-t", "raw", "-e", "u-law", "-"], bytes);
  const decode = [...SOX, "-t", "raw", "-e", "u-law", "-r", String(RATE), "-c", "1", "-"];
  await run([...decode, "-e", "signed", "-b", "16", file], ulaw);
}

function floats(raw: Uint8Array): Float32Array {
  const samples = new Int16Array(raw.buffer, raw.byteOffset, Math.floor(raw.byteLength / 2));
  return Float32Array.from(samples, (sample) => sample / 32768);
}

function scaleToPeak(samples: Float32Array, peakDb: number): void {
  let peak = 0;
  for (const sample of samples) peak = Math.max(peak, Math.abs(sample));
  const gain = peak > 0 ? 10 ** (peakDb / 20) / peak : 0;
  for (let i = 0; i < samples.length; i++) samples[i] = (samples[i] ?? 0) * gain;
}

function scaleToRms(samples: Float32Array, rmsDb: number): void {
  let energy = 0;
  for (const sample of samples) energy += sample * sample;
  const rms = Math.sqrt(energy / Math.max(1, samples.length));
  const gain = rms > 0 ? 10 ** (rmsDb / 20) / rms : 0;
  for (let i = 0; i < samples.length; i++) samples[i] = (samples[i] ?? 0) * gain;
}

async function run(command: string[], input?: Uint8Array): Promise<Uint8Array> {
  const child = Bun.spawn(command, { stdin: input ?? "ignore", stdout: "pipe", stderr: "pipe" });
  const [output, errors, code] = await Promise.all([
    new Response(child.stdout).arrayBuffer(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`${command.join(" ")} exited with ${code}: ${errors}`);
  return new Uint8Array(output);
}
