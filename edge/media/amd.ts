/**
 * Answering-machine detection from the far end's audio alone, in 20 ms frames as they arrive.
 *
 * A person answers with a short greeting ("Hello?") and waits; a machine plays a long one,
 * word after word, and often a beep. The timing rules are those of Asterisk's app_amd
 * (apps/app_amd.c, configs/samples/amd.conf.sample), over a speech detector that measures
 * itself against the line's noise floor instead of a fixed level, plus two tone rules a
 * timing rule cannot make: a voicemail beep is a machine, and a fax's calling tone is a fax.
 */
import { DEFAULT_LINE_LISTENER, LineListener, type LineListenerSettings } from "./line-listener.ts";
import { type ToneRun, toneDuration } from "./steady-tone.ts";
import { VoicemailCue, type VoicemailCueSettings } from "./voicemail-cue.ts";

export type AmdResult = "human" | "machine" | "fax" | "unknown";

export interface AmdVerdict {
  result: AmdResult;
  /** 0..1: how strongly the evidence points to `result` (0 for `unknown`); not a probability. */
  confidence: number;
  /** Audio time from the first frame to the verdict, in ms. */
  ms: number;
  reason: string;
}

export interface AmdSettings {
  /** Audio after which the detector stops and gives its best verdict so far. */
  budgetMs: number;
  /** Silence before any word after which nobody is going to greet: `unknown`. */
  initialSilenceMs: number;
  /**
   * How long a greeting may run, from its first word to its latest, before it is a machine's.
   * A pause of `afterGreetingSilenceMs` ends it first if it is a person's.
   */
  greetingMs: number;
  /** Silence after a short greeting that makes it a person's. */
  afterGreetingSilenceMs: number;
  /** At the budget, a greeting still going that has run this long is taken for a machine's. */
  greetingAtBudgetMs: number;
  /** Speech shorter than this is a click or a breath, not a word. */
  minWordMs: number;
  /** Silence that ends a word; shorter gaps are within it. */
  betweenWordsSilenceMs: number;
  /** A greeting reaching this many words is a machine's. */
  maxWords: number;
  /** Mean absolute amplitude (16-bit) below which a frame is silence whatever the noise. */
  silenceThreshold: number;
  /** How far above the noise floor speech must stand, in dB. */
  noiseMarginDb: number;
  /** How long a steady tone must last to be a voicemail beep. */
  beepMinMs: number;
  /** The share of a frame's energy one frequency must hold for the frame to be tonal. */
  toneMinShare: number;
}

/**
 * app_amd's defaults were the starting point: initial silence 2500 ms, greeting 1500 ms,
 * after-greeting silence 800 ms, minimum word 100 ms, between words 50 ms, maximum words 3,
 * silence threshold 256, total analysis time 5000 ms. What changed, tuned on the tuning half
 * of bench/amd.ts's corpus (docs/BENCHMARKS.md):
 *
 * - The budget is 3500 ms: a person left in silence says "Hello?" again after about two
 *   seconds, and an agent should be on the line by then.
 * - Initial silence gives `unknown`, not app_amd's machine: a dialer hands an unknown call to
 *   an agent, and a silent person is more common than a silent recorder.
 * - The greeting is timed from its first word to its latest, rather than by its summed
 *   speech (which depends on how much of each syllable clears the threshold), and may run
 *   2400 ms. A person's greeting longer than about two seconds is still taken for a machine's.
 * - Five words, not three, make a machine: "Hello, Mark speaking" is three, and app_amd's
 *   defaults took about four people in ten for machines, nearly all by counting words.
 * - A greeting still going at the budget after 2000 ms is taken for a machine's, with less
 *   confidence: a greeting that starts late has too little of the budget left to reach
 *   2400 ms, and without this such machines were left unknown.
 * - Silence threshold 128 and minimum word 60 ms: the noise floor keeps room noise out now,
 *   and at 256 and 100 ms the soft syllables of a quiet voice fell apart into silence, which
 *   made a person of a machine whose first sentence was quiet.
 */
export const DEFAULT_AMD_SETTINGS: AmdSettings = {
  budgetMs: 3500,
  initialSilenceMs: 2500,
  greetingMs: 2400,
  afterGreetingSilenceMs: 800,
  greetingAtBudgetMs: 2000,
  minWordMs: 60,
  betweenWordsSilenceMs: 50,
  maxWords: 5,
  silenceThreshold: 128,
  noiseMarginDb: 6,
  beepMinMs: 200,
  toneMinShare: 0.9,
};

/** CNG, the tone a calling fax repeats (ITU-T T.30): 1100 Hz ±38 Hz, 0.5 s on, 3 s off. */
const CNG = { hz: 1100, toleranceHz: 50, minMs: 350, maxMs: 800 };
/** CED, the answer tone of a called fax or modem (ITU-T T.30, V.25): 2100 Hz for 2.6–4 s. */
const CED = { hz: 2100, toleranceHz: 50, minMs: 1000 };

const near = (run: ToneRun, tone: { hz: number; toleranceHz: number }) =>
  Math.abs(run.frequency - tone.hz) <= tone.toleranceHz;

export class AnsweringMachineDetector {
  private readonly settings: AmdSettings;
  private readonly listener: LineListener;
  private verdict: AmdVerdict | null = null;
  private greetingStartMs: number | null = null;
  private words = 0;
  private inWord = false;
  /** Speech (and the short gaps within it) since the last pause between words. */
  private voiceRunMs = 0;
  private silenceRunMs = 0;
  /** When the last word's latest speech was heard. */
  private lastWordMs = 0;
  /**
   * When the latest speech of any length was heard: a syllable too short to be a word still
   * breaks a silence.
   */
  private lastSpeechMs = 0;

  constructor(settings: Partial<AmdSettings> = {}) {
    this.settings = { ...DEFAULT_AMD_SETTINGS, ...settings };
    this.listener = new LineListener(listenerSettings(this.settings));
  }

  /** Feeds one frame; returns the verdict once, when it is reached, and null before and after. */
  push(frame: Int16Array): AmdVerdict | null {
    if (this.verdict) return null;
    const heard = this.listener.hear(frame);
    const verdict =
      this.toneVerdict(heard.tone, heard.toneEnded, heard.ms) ??
      (heard.tonal ? null : this.timingVerdict(heard.speech, heard.frameMs, heard.ms)) ??
      (heard.ms >= this.settings.budgetMs ? this.bestSoFar("budget spent") : null);
    if (verdict) this.verdict = verdict;
    return verdict;
  }

  /** The verdict, or the best one the audio so far supports when media stops before it. */
  finish(): AmdVerdict {
    this.verdict ??= this.bestSoFar("media stopped");
    return this.verdict;
  }

  /**
   * After a machine verdict: what tells when to start a voicemail message, listening on from
   * this detector's last frame. The detector hears nothing more.
   */
  voicemailCue(settings: Partial<VoicemailCueSettings> = {}): VoicemailCue {
    this.verdict ??= this.bestSoFar("handed to the voicemail cue");
    return new VoicemailCue(settings, {
      listener: this.listener,
      greetingHeard: this.greetingStartMs !== null,
      lastSpeechMs: this.lastSpeechMs,
    });
  }

  private toneVerdict(tone: ToneRun | null, ended: ToneRun | null, ms: number): AmdVerdict | null {
    const { beepMinMs } = this.settings;
    const greeted = this.greetingStartMs !== null;
    // A fax never speaks first: a calling tone after words is a beep that happens to be 1100 Hz.
    if (ended && !greeted && near(ended, CNG)) {
      const duration = toneDuration(ended);
      if (duration >= CNG.minMs && duration <= CNG.maxMs) {
        return {
          result: "fax",
          confidence: 0.95,
          ms,
          reason: `fax calling tone (${describe(ended)})`,
        };
      }
      if (duration >= beepMinMs) return beep(ended, ms);
    }
    if (!tone || toneDuration(tone) < beepMinMs) return null;
    if (!greeted && near(tone, CNG) && toneDuration(tone) <= CNG.maxMs) return null;
    if (!greeted && near(tone, CED)) {
      if (toneDuration(tone) < CED.minMs) return null;
      return { result: "fax", confidence: 0.9, ms, reason: `fax answer tone (${describe(tone)})` };
    }
    return beep(tone, ms);
  }

  /** app_amd's rules over words and silences, the greeting timed from its first word. */
  private timingVerdict(speech: boolean, frameMs: number, ms: number): AmdVerdict | null {
    const s = this.settings;
    if (speech) {
      this.silenceRunMs = 0;
      this.voiceRunMs += frameMs;
      if (!this.inWord && this.voiceRunMs >= s.minWordMs) {
        this.inWord = true;
        this.words++;
        this.greetingStartMs ??= ms - this.voiceRunMs;
      }
      if (this.inWord) this.lastWordMs = ms;
      this.lastSpeechMs = ms;
    } else {
      this.silenceRunMs += frameMs;
      if (this.silenceRunMs >= s.betweenWordsSilenceMs) {
        this.inWord = false;
        this.voiceRunMs = 0;
      }
    }

    if (this.greetingStartMs === null) {
      if (ms < s.initialSilenceMs) return null;
      return { result: "unknown", confidence: 0, ms, reason: `no greeting in ${ms} ms` };
    }
    const greeting = this.greetingSoFar();
    if (greeting.spanMs >= s.greetingMs || this.words >= s.maxWords) {
      return {
        result: "machine",
        confidence: machineConfidence(this.words),
        ms,
        reason: `greeting of ${greeting.spanMs} ms, ${this.words} words, and going on`,
      };
    }
    if (greeting.silenceMs >= s.afterGreetingSilenceMs) {
      return {
        result: "human",
        confidence: humanConfidence(greeting.spanMs, s.greetingMs),
        ms,
        reason: `greeting of ${greeting.spanMs} ms, then ${greeting.silenceMs} ms silence`,
      };
    }
    return null;
  }

  /** The greeting from its first word to its latest, and the silence since any speech. */
  private greetingSoFar(): { spanMs: number; silenceMs: number } {
    return {
      spanMs: this.lastWordMs - (this.greetingStartMs ?? this.lastWordMs),
      silenceMs: this.listener.ms - this.lastSpeechMs,
    };
  }

  /**
   * When no rule has decided: a tone long enough to be a beep or a fax tone, or a greeting
   * followed by half a person's silence; otherwise unknown, because a greeting cut short by
   * the budget may be a person's as well as a machine's, and a person must not be hung up on.
   */
  private bestSoFar(why: string): AmdVerdict {
    const ms = this.listener.ms;
    const s = this.settings;
    const tone = this.listener.currentTone;
    if (tone && toneDuration(tone) >= s.beepMinMs) {
      const fax = this.greetingStartMs === null && (near(tone, CNG) || near(tone, CED));
      return fax
        ? { result: "fax", confidence: 0.6, ms, reason: `${why} in a tone (${describe(tone)})` }
        : { ...beep(tone, ms), reason: `${why} in a beep (${describe(tone)})` };
    }
    if (this.greetingStartMs === null) {
      return { result: "unknown", confidence: 0, ms, reason: `${why}: no greeting` };
    }
    const greeting = this.greetingSoFar();
    if (greeting.silenceMs >= s.afterGreetingSilenceMs / 2) {
      return {
        result: "human",
        confidence: humanConfidence(greeting.spanMs, s.greetingMs) / 2,
        ms,
        reason: `${why}: greeting of ${greeting.spanMs} ms, then ${greeting.silenceMs} ms silence`,
      };
    }
    if (greeting.spanMs >= s.greetingAtBudgetMs) {
      return {
        result: "machine",
        confidence: 0.5,
        ms,
        reason: `${why} in a greeting of ${greeting.spanMs} ms, ${this.words} words`,
      };
    }
    return {
      result: "unknown",
      confidence: 0,
      ms,
      reason: `${why} in a greeting of ${greeting.spanMs} ms, ${this.words} words`,
    };
  }
}

function listenerSettings(settings: AmdSettings): LineListenerSettings {
  return {
    ...DEFAULT_LINE_LISTENER,
    silenceThreshold: settings.silenceThreshold,
    marginDb: settings.noiseMarginDb,
    minShare: settings.toneMinShare,
  };
}

const describe = (run: ToneRun) =>
  `${Math.round(run.frequency)} Hz for ${Math.round(toneDuration(run))} ms`;

const beep = (run: ToneRun, ms: number): AmdVerdict => ({
  result: "machine",
  confidence: 0.95,
  ms,
  reason: `beep (${describe(run)})`,
});

/** More words before the verdict: more surely a recording. */
const machineConfidence = (words: number) => Math.min(0.9, 0.6 + 0.1 * words);

/** The shorter the greeting before the silence, the more surely a person. */
const humanConfidence = (spanMs: number, greetingMs: number) =>
  0.5 + 0.4 * Math.max(0, 1 - spanMs / greetingMs);
