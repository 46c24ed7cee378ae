/**
 * When to start a voicemail message after a machine answered: a recorder starts at its beep,
 * or, without one, once its greeting has finished, so a message started earlier loses its
 * first words. The cue is the beep's end, else the greeting's end followed by a silence long
 * enough that no beep is coming, else (a greeting that never ends) a cap on the wait.
 */
import { DEFAULT_LINE_LISTENER, LineListener } from "./line-listener.ts";
import { toneDuration } from "./steady-tone.ts";

export interface VoicemailCueSettings {
  /** Silence after the greeting that means no beep is coming. */
  silenceMs: number;
  /** The longest wait from the cue's first frame; then the message starts anyway. */
  maxWaitMs: number;
  /** How long a steady tone must last to be a beep. */
  beepMinMs: number;
  /** Speech shorter than this is a click or a breath, not the greeting going on. */
  minWordMs: number;
}

/**
 * 1.5 s of silence: machines leave up to about a second between the greeting and the beep,
 * and starting half a second late costs the message nothing, where starting before the beep
 * loses its opening.
 */
export const DEFAULT_VOICEMAIL_CUE: VoicemailCueSettings = {
  silenceMs: 1500,
  maxWaitMs: 20_000,
  beepMinMs: 200,
  // As short as the detector's words (amd.ts): a soft syllable of a greeting still going on
  // must hold the cue back.
  minWordMs: 60,
};

export interface VoicemailCueEvent {
  /**
   * When the cue was heard, in ms on the listener's clock (from the call's first frame): a
   * beep's end is known a frame or two after it, which keeps the start clear of its tail.
   */
  at: number;
  cue: "beep" | "silence" | "timeout";
}

/** Where a detector stopped listening, for the cue to go on from. */
export interface ListeningSoFar {
  listener: LineListener;
  greetingHeard: boolean;
  lastSpeechMs: number;
}

export class VoicemailCue {
  private readonly settings: VoicemailCueSettings;
  private readonly listener: LineListener;
  private readonly startMs: number;
  private greetingHeard: boolean;
  /** The latest speech or tone. */
  private lastSoundMs: number;
  private speechRunMs = 0;
  private done = false;

  constructor(settings: Partial<VoicemailCueSettings> = {}, from?: ListeningSoFar) {
    this.settings = { ...DEFAULT_VOICEMAIL_CUE, ...settings };
    this.listener = from?.listener ?? new LineListener(DEFAULT_LINE_LISTENER);
    this.startMs = this.listener.ms;
    this.greetingHeard = from?.greetingHeard ?? false;
    this.lastSoundMs = from?.lastSpeechMs ?? this.startMs;
  }

  /** Feeds one frame; returns the cue once, when it is reached, and null before and after. */
  push(frame: Int16Array): VoicemailCueEvent | null {
    if (this.done) return null;
    const heard = this.listener.hear(frame);
    const s = this.settings;
    let event: VoicemailCueEvent | null = null;
    if (heard.toneEnded && toneDuration(heard.toneEnded) >= s.beepMinMs) {
      event = { at: heard.ms, cue: "beep" };
    } else if (heard.tone) {
      // A tone, or a lost packet within one, is not the silence after a greeting: a long beep
      // would otherwise pass for it a frame before the beep's end is known.
      this.lastSoundMs = heard.ms;
    } else {
      this.speechRunMs = heard.speech ? this.speechRunMs + heard.frameMs : 0;
      if (this.speechRunMs >= s.minWordMs) {
        this.greetingHeard = true;
        this.lastSoundMs = heard.ms;
      }
      if (this.greetingHeard && heard.ms - this.lastSoundMs >= s.silenceMs) {
        event = { at: heard.ms, cue: "silence" };
      }
    }
    if (!event && heard.ms - this.startMs >= s.maxWaitMs) event = { at: heard.ms, cue: "timeout" };
    this.done = event !== null;
    return event;
  }
}
